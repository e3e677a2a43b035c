// Live: executions as they start and finish (the admin port's /live WebSocket), filtered by tool,
// agent and status; a latency histogram, throughput, queue depth and pool state (/api/health).
// Messages are buffered and drawn at most once per animation frame; charts redraw once a second.

import { api } from '../api.js';
import { badge, clock, h, mount, ms } from '../dom.js';

interface LiveMessage {
  type: string;
  ts: string;
  rid: string;
  tool: string;
  agentId?: string;
  status?: string;
  code?: string;
  durationMs?: number;
  kind?: string;
  outcome?: string;
}
interface Exec {
  rid: string;
  tool: string;
  agentId: string;
  status: string;
  code: string;
  durationMs: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  finishedMs: number | null;
}

const KEEP = 5000;
const SHOWN = 200;
const EDGES = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, Infinity];

const page = async (root: HTMLElement): Promise<() => void> => {
  const charts = await import('../charts.js');
  const execs = new Map<string, Exec>();
  let received = 0;
  let dirty = false;
  let frame = 0;

  const toolFilter = h('input', { type: 'search', placeholder: 'tool', name: 'tool', 'aria-label': 'tool filter' });
  const agentFilter = h('input', { type: 'search', placeholder: 'agent', name: 'agent', 'aria-label': 'agent filter' });
  const statusFilter = h(
    'select',
    { name: 'status', 'aria-label': 'status filter' },
    ['all', 'running', 'success', 'error'].map((s) => h('option', { value: s }, s)),
  );
  const connEl = h('span', { class: 'muted' }, 'connecting…');
  const countEl = h('span', { id: 'live-count' }, '0');
  const tbody = h('tbody');
  const gauges = h('div', { class: 'figures' });
  const histEl = h('div', { class: 'chart' });
  const tputEl = h('div', { class: 'chart' });

  const matches = (e: Exec): boolean => {
    const t = toolFilter.value.trim();
    const a = agentFilter.value.trim();
    const s = statusFilter.value;
    return (t === '' || e.tool.includes(t)) && (a === '' || e.agentId.includes(a)) && (s === 'all' || e.status === s);
  };

  const draw = (): void => {
    frame = 0;
    if (!dirty) return;
    dirty = false;
    countEl.textContent = String(received);
    const rows: HTMLTableRowElement[] = [];
    const list = [...execs.values()];
    for (let i = list.length - 1; i >= 0 && rows.length < SHOWN; i--) {
      const e = list[i] as Exec;
      if (!matches(e)) continue;
      rows.push(
        h(
          'tr',
          { 'data-rid': e.rid, 'data-tool': e.tool, 'data-status': e.status },
          h('td', null, clock(e.finishedAt ?? e.startedAt)),
          h('td', null, e.tool),
          h('td', null, e.agentId),
          h('td', null, badge(e.status)),
          h('td', null, e.code),
          h('td', { class: 'num' }, ms(e.durationMs)),
          h('td', null, h('a', { href: `#/inspect/${encodeURIComponent(e.rid)}` }, e.rid.slice(0, 13))),
        ),
      );
    }
    tbody.replaceChildren(...rows);
  };
  const schedule = (): void => {
    dirty = true;
    if (frame === 0) frame = requestAnimationFrame(draw);
  };
  for (const input of [toolFilter, agentFilter, statusFilter]) input.addEventListener('input', schedule);

  const onMessage = (m: LiveMessage): void => {
    if (typeof m.rid !== 'string' || typeof m.tool !== 'string') return;
    // Progress reports are shown by `tools-runner tail`; here they neither count as executions nor open a row.
    if (m.type === 'execution:progress') return;
    received += 1;
    let e = execs.get(m.rid);
    if (!e) {
      e = {
        rid: m.rid,
        tool: m.tool,
        agentId: m.agentId ?? '',
        status: 'running',
        code: '',
        durationMs: null,
        startedAt: null,
        finishedAt: null,
        finishedMs: null,
      };
      execs.set(m.rid, e);
      if (execs.size > KEEP) execs.delete(execs.keys().next().value as string);
    }
    if (m.type === 'execution:started') e.startedAt = m.ts;
    else if (m.type === 'execution:finished') {
      e.status = m.status === 'error' ? 'error' : 'success';
      e.code = m.code ?? '';
      e.durationMs = typeof m.durationMs === 'number' ? m.durationMs : null;
      e.finishedAt = m.ts;
      e.finishedMs = Date.now();
    } else if (m.type === 'execution:ended' && typeof m.outcome === 'string') {
      // Ended without an answer from this run: withdrawn (request deleted), released (drain) or parked.
      e.status = m.outcome;
      e.finishedAt = m.ts;
      e.finishedMs = Date.now();
    }
    schedule();
  };

  let ws: WebSocket | undefined;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const connect = (): void => {
    ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/live`);
    ws.onopen = () => {
      connEl.textContent = 'connected';
      connEl.className = 'ok';
      document.body.dataset['live'] = 'connected';
    };
    ws.onmessage = (event) => {
      try {
        onMessage(JSON.parse(String(event.data)) as LiveMessage);
      } catch {
        /* a malformed frame is skipped */
      }
    };
    ws.onclose = () => {
      connEl.textContent = 'disconnected; retrying…';
      connEl.className = 'error';
      if (!closed) retry = setTimeout(connect, 1000);
    };
  };
  connect();

  const histCounts = (): number[] => {
    const counts = EDGES.map(() => 0);
    for (const e of execs.values()) {
      if (e.durationMs === null || !matches(e)) continue;
      const i = EDGES.findIndex((edge) => (e.durationMs as number) <= edge);
      counts[i] = (counts[i] ?? 0) + 1;
    }
    return counts;
  };
  const throughput = (): [number[], number[], number[]] => {
    const now = Math.floor(Date.now() / 1000);
    const xs = Array.from({ length: 60 }, (_, i) => now - 59 + i);
    const ok = xs.map(() => 0);
    const bad = xs.map(() => 0);
    for (const e of execs.values()) {
      if (e.finishedMs === null || !matches(e)) continue;
      const i = Math.floor(e.finishedMs / 1000) - (now - 59);
      if (i < 0 || i >= 60) continue;
      if (e.status === 'error') bad[i] = (bad[i] ?? 0) + 1;
      else ok[i] = (ok[i] ?? 0) + 1;
    }
    return [xs, ok, bad];
  };

  mount(
    root,
    h('div', { class: 'bar' }, h('h1', null, 'Live'), connEl, h('span', { class: 'muted' }, 'events: '), countEl),
    h('div', { class: 'bar filters' }, toolFilter, agentFilter, statusFilter),
    gauges,
    h('div', { class: 'cols' }, histEl, tputEl),
    h(
      'table',
      { class: 'grid live' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['Time', 'Tool', 'Agent', 'Status', 'Code', 'Latency', 'Request'].map((t) => h('th', null, t)),
        ),
      ),
      tbody,
    ),
  );
  const hist = charts.histogram(histEl, 'Latency histogram', EDGES, histCounts());
  const tput = charts.timeChart(
    tputEl,
    { title: 'Throughput (finished per second)', series: ['success', 'error'], unit: 'calls/s', bars: true },
    throughput(),
  );

  const tick = async (): Promise<void> => {
    hist.update([EDGES.map((_, i) => i), histCounts()]);
    tput.update(throughput());
    const health = await api<any>('/health').catch(() => undefined);
    if (!health) return;
    const q = health.queue ?? {};
    const p = health.pool ?? {};
    mount(
      gauges,
      h('span', null, `queue depth ${q.queued ?? '?'}`),
      h('span', null, `running ${q.running ?? '?'} · capacity ${q.capacity ?? '?'}`),
      h('span', null, `backlog ${q.backlog ?? '?'}`),
      h('span', null, `pool warm ${p.warm ?? '?'} · busy ${p.busy ?? '?'}`),
      h('span', null, `runner ${health.status ?? '?'}`),
    );
  };
  void tick();
  const timer = setInterval(() => void tick(), 1000);
  document.body.dataset['ready'] = 'live';
  performance.mark('console:ready');
  return () => {
    closed = true;
    clearInterval(timer);
    clearTimeout(retry);
    if (frame) cancelAnimationFrame(frame);
    ws?.close();
    hist.destroy();
    tput.destroy();
    delete document.body.dataset['live'];
  };
};

export default page;
