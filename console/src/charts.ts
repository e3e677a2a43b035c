// uPlot charts: time series (latency, throughput, error codes) and a histogram.

import uPlot from 'uplot';

const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#db2777', '#0891b2', '#4b5563'];

/** A chart that can take new data. */
export interface Chart {
  update(data: uPlot.AlignedData): void;
  destroy(): void;
}

function width(el: HTMLElement): number {
  return Math.max(280, Math.min(900, el.clientWidth || 560));
}

/** A time-series chart (x = unix seconds); `bars` draws bars instead of lines. */
export function timeChart(
  el: HTMLElement,
  options: { title: string; series: string[]; unit?: string; bars?: boolean; height?: number },
  data: uPlot.AlignedData,
): Chart {
  const plot = new uPlot(
    {
      title: options.title,
      width: width(el),
      height: options.height ?? 180,
      scales: { x: { time: true } },
      axes: [{}, { label: options.unit ?? '', size: 56 }],
      series: [
        {},
        ...options.series.map((label, i) => ({
          label,
          stroke: COLORS[i % COLORS.length] as string,
          width: 2,
          ...(options.bars
            ? { fill: `${COLORS[i % COLORS.length]}88`, paths: uPlot.paths.bars!({ size: [0.8, 40] }) }
            : {}),
          points: { show: !options.bars },
        })),
      ],
    },
    data,
    el,
  );
  return { update: (d) => plot.setData(d), destroy: () => plot.destroy() };
}

/** A histogram: `edges` are bucket upper bounds in ms (x as category index). */
export function histogram(el: HTMLElement, title: string, edges: number[], counts: number[]): Chart {
  const xs = edges.map((_, i) => i);
  const plot = new uPlot(
    {
      title,
      width: width(el),
      height: 180,
      scales: { x: { time: false } },
      axes: [
        {
          values: (_u, splits) =>
            splits.map((i) => (edges[i] === undefined ? '' : edges[i] === Infinity ? '>' : `≤${edges[i]}`)),
          label: 'ms',
        },
        { label: 'calls', size: 50 },
      ],
      series: [
        {},
        {
          label: 'calls',
          stroke: COLORS[0] as string,
          fill: `${COLORS[0]}88`,
          paths: uPlot.paths.bars!({ size: [0.9, 60] }),
          points: { show: false },
        },
      ],
    },
    [xs, counts],
    el,
  );
  return { update: (d) => plot.setData(d), destroy: () => plot.destroy() };
}
