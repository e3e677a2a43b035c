// Tool page: description, schemas, examples with Run (real sandbox), a form generated from the
// input_schema that calls the tool through the runner (a real tool.request.v1), recent calls and
// p50/p99 latency and error codes over time.

import { api, poll } from '../api.js';
import { badge, clock, h, json, mount, ms, pct } from '../dom.js';
import { schemaForm, schemaTable } from '../schema-view.js';
import { issueText } from './catalog.js';

interface Bucket {
  t: number;
  calls: number;
  errors: number;
  codes: Record<string, number>;
  p50: number | null;
  p99: number | null;
}
interface Call {
  rid: string;
  tool: string;
  agentId?: string;
  status: string;
  code?: string;
  durationMs?: number;
  startedAt: string;
}
interface Stats {
  calls: number;
  errors: number;
  codes: Record<string, number>;
  recent: Call[];
  buckets: Bucket[];
}
interface ToolDoc {
  tool: {
    name: string;
    state: string;
    kind: string;
    version: string | null;
    description: string;
    source: string;
    agent?: string;
    breadcrumbId?: string;
    errors: Array<{ code: string; path: string; message: string; line?: number; column?: number }>;
    calls: number;
    errorRate: number | null;
  };
  definition: Record<string, any> | null;
  warnings: Array<{ code: string; path: string; message: string }>;
  stats: Stats;
}

function recentTable(calls: Call[]): HTMLElement {
  if (calls.length === 0) return h('p', { class: 'muted' }, 'No calls since the runner started.');
  return h(
    'table',
    { class: 'grid recent' },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        ['Request', 'Status', 'Code', 'Latency', 'Agent', 'Started'].map((t) => h('th', null, t)),
      ),
    ),
    h(
      'tbody',
      null,
      calls.map((c) =>
        h(
          'tr',
          null,
          h('td', null, h('a', { href: `#/inspect/${encodeURIComponent(c.rid)}` }, c.rid.slice(0, 13))),
          h('td', null, badge(c.status)),
          h('td', null, c.code ?? ''),
          h('td', { class: 'num' }, ms(c.durationMs)),
          h('td', null, c.agentId ?? ''),
          h('td', null, clock(c.startedAt)),
        ),
      ),
    ),
  );
}

const page = async (root: HTMLElement, args: string[]): Promise<() => void> => {
  const name = args[0] ?? '';
  const id = args[1];
  const [doc, charts] = await Promise.all([
    api<ToolDoc>(`/tools/${encodeURIComponent(name)}${id ? `?id=${encodeURIComponent(id)}` : ''}`),
    import('../charts.js'),
  ]);
  const t = doc.tool;
  const def = doc.definition ?? {};
  const runnable = t.state === 'runnable' || t.state === 'deprecated';

  const examples: any[] = Array.isArray(def['examples']) ? def['examples'] : [];
  const exampleEls = examples.map((ex, i) => {
    const out = h('div', { class: 'example-result' });
    const run = h(
      'button',
      { type: 'button', disabled: !runnable || t.kind !== 'code', 'data-example': String(i) },
      'Run',
    );
    run.addEventListener('click', async () => {
      run.disabled = true;
      mount(out, h('span', { class: 'muted' }, 'running in the sandbox…'));
      try {
        const r = await api<any>(`/tools/${encodeURIComponent(name)}/examples/${i}`, {});
        mount(
          out,
          badge(r.ok ? 'passed' : 'failed', r.ok ? 'success' : 'error'),
          ` ${ms(r.durationMs)}`,
          r.error ? h('div', { class: 'error' }, `${r.error.code}: ${r.error.message}`) : null,
          r.output !== undefined ? json(r.output) : null,
        );
      } catch (error) {
        mount(out, h('div', { class: 'error' }, (error as Error).message));
      } finally {
        run.disabled = false;
      }
    });
    return h(
      'div',
      { class: 'example' },
      h('div', { class: 'bar' }, h('strong', null, ex.description ?? `Example ${i + 1}`), run),
      h(
        'div',
        { class: 'cols' },
        h('div', null, h('small', null, 'input'), json(ex.input)),
        ex.output !== undefined
          ? h('div', null, h('small', null, `expected (${ex.match ?? 'schema'})`), json(ex.output))
          : null,
      ),
      out,
    );
  });

  const form = schemaForm(def['input_schema'], examples[0]?.input ?? {});
  const callOut = h('div', { class: 'call-result' });
  const callButton = h('button', { type: 'submit', disabled: !runnable }, 'Call');
  const callForm = h('form', { class: 'call' }, form.el, callButton, callOut);
  callForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    let input: unknown;
    try {
      input = form.value();
    } catch (error) {
      mount(callOut, h('div', { class: 'error' }, (error as Error).message));
      return;
    }
    callButton.disabled = true;
    try {
      const { rid } = await api<{ rid: string }>(`/tools/${encodeURIComponent(name)}/call`, { input });
      mount(callOut, h('span', { class: 'muted' }, `request ${rid} written; waiting for the runner…`));
      const found = await poll(async () => {
        const r = await api<any>(`/requests/${encodeURIComponent(rid)}`, undefined, { allow: [404] });
        return r.responses?.find((x: any) => x.genuine) ? r : undefined;
      });
      const response = found.responses.find((x: any) => x.genuine).context;
      mount(
        callOut,
        h(
          'div',
          { class: 'bar' },
          badge(response.status),
          h('span', null, ` ${ms(response.execution_time_ms)} · attempt ${found.attempts}`),
          h('a', { href: `#/inspect/${encodeURIComponent(rid)}` }, 'inspect'),
        ),
        response.status === 'success'
          ? json(response.output, 'json output')
          : h('div', { class: 'error' }, `${response.error?.code}: ${response.error?.message}`),
      );
      void refresh();
    } catch (error) {
      mount(callOut, h('div', { class: 'error' }, (error as Error).message));
    } finally {
      callButton.disabled = !runnable;
    }
  });

  const latencyEl = h('div', { class: 'chart' });
  const codesEl = h('div', { class: 'chart' });
  const recentEl = h('div');
  const figures = h('div', { class: 'figures' });
  let latency: ReturnType<typeof charts.timeChart> | undefined;
  let codes: ReturnType<typeof charts.timeChart> | undefined;
  let codeNames: string[] = [];

  const draw = (stats: Stats): void => {
    // The last 30 minutes, one slot per minute (minutes without calls are gaps / zeros).
    const nowMin = Math.floor(Date.now() / 60_000) * 60_000;
    const minutes = Array.from({ length: 30 }, (_, i) => nowMin - (29 - i) * 60_000);
    const byT = new Map(stats.buckets.map((b) => [b.t, b]));
    const slots = minutes.map((t) => byT.get(t));
    const xs = minutes.map((t) => t / 1000);
    const lat = [xs, slots.map((b) => b?.p50 ?? null), slots.map((b) => b?.p99 ?? null)] as any;
    if (latency) latency.update(lat);
    else
      latency = charts.timeChart(latencyEl, { title: 'Latency per minute', series: ['p50', 'p99'], unit: 'ms' }, lat);
    const names = [...new Set(stats.buckets.flatMap((b) => Object.keys(b.codes)))].sort();
    const codeData = [
      xs,
      ...(names.length > 0 ? names : ['errors']).map((c) => slots.map((b) => b?.codes[c] ?? 0)),
    ] as any;
    if (codes && names.join() === codeNames.join()) codes.update(codeData);
    else {
      codes?.destroy();
      codeNames = names;
      codes = charts.timeChart(
        codesEl,
        {
          title: 'Errors per minute by code',
          series: names.length > 0 ? names : ['errors'],
          unit: 'calls',
          bars: true,
        },
        codeData,
      );
    }
    mount(recentEl, recentTable(stats.recent));
    mount(
      figures,
      h('span', null, `${stats.calls} calls`),
      h('span', null, `${pct(stats.calls ? stats.errors / stats.calls : null)} errors`),
      Object.entries(stats.codes).map(([code, n]) => h('span', { class: 'code' }, `${code} ×${n}`)),
    );
  };

  const refresh = async (): Promise<void> => {
    const next = await api<ToolDoc>(
      `/tools/${encodeURIComponent(name)}${id ? `?id=${encodeURIComponent(id)}` : ''}`,
    ).catch(() => undefined);
    if (next) draw(next.stats);
  };

  mount(
    root,
    h(
      'div',
      { class: 'bar' },
      h('h1', null, t.name),
      badge(t.state),
      h('span', { class: 'muted' }, `v${t.version ?? '?'} · ${t.kind} · ${t.source}${t.agent ? ` (${t.agent})` : ''}`),
      t.kind === 'code'
        ? h(
            'a',
            {
              class: 'button',
              href: `#/editor/${encodeURIComponent(t.name)}${t.state === 'rejected' && t.breadcrumbId ? `/${encodeURIComponent(t.breadcrumbId)}` : ''}`,
            },
            'Edit',
          )
        : null,
    ),
    h('p', { class: 'description' }, t.description),
    t.errors.length > 0
      ? h(
          'section',
          { class: 'card bad' },
          h('h2', null, 'Why it is not runnable'),
          h(
            'ul',
            { class: 'issues' },
            t.errors.map((e) => h('li', null, issueText(e))),
          ),
        )
      : null,
    doc.warnings.length > 0
      ? h(
          'section',
          { class: 'card' },
          h('h2', null, 'Warnings'),
          h(
            'ul',
            { class: 'issues' },
            doc.warnings.map((e) => h('li', null, issueText(e))),
          ),
        )
      : null,
    h(
      'div',
      { class: 'cols' },
      h('section', { class: 'card' }, h('h2', null, 'Input schema'), schemaTable(def['input_schema'])),
      h('section', { class: 'card' }, h('h2', null, 'Output schema'), schemaTable(def['output_schema'])),
    ),
    h(
      'div',
      { class: 'cols' },
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'Call'),
        runnable ? null : h('p', { class: 'muted' }, 'This tool is not runnable.'),
        callForm,
      ),
      h('section', { class: 'card examples' }, h('h2', null, `Examples (${examples.length})`), exampleEls),
    ),
    h(
      'section',
      { class: 'card' },
      h('h2', null, 'Calls'),
      figures,
      h('div', { class: 'cols' }, latencyEl, codesEl),
      recentEl,
    ),
  );
  draw(doc.stats);
  const timer = setInterval(() => void refresh(), 5000);
  document.body.dataset['ready'] = 'tool';
  performance.mark('console:ready');
  return () => {
    clearInterval(timer);
    latency?.destroy();
    codes?.destroy();
  };
};

export default page;
