// Autonomy: what runs on its own on this replica (docs/autonomy.md) — continuous tools (state, lease
// holder, runs, last start and end), subscriptions (runs started, refusals, last trigger), once-runs,
// and the scheduler's schedules (state, last and next tick, lag, missed). Refreshed every 2 s from /api/extensions/autonomy.

import { api } from '../api.js';
import { clock, h, mount } from '../dom.js';

const table = (head: string[], rows: HTMLElement[], empty: string): HTMLElement =>
  rows.length === 0
    ? h('p', { class: 'muted' }, empty)
    : h(
        'table',
        { class: 'grid' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            head.map((x) => h('th', null, x)),
          ),
        ),
        h('tbody', null, rows),
      );

const page = async (root: HTMLElement): Promise<() => void> => {
  const body = h('div');
  mount(root, h('h1', null, 'Autonomy'), body);
  let timer = 0;
  const draw = async (): Promise<void> => {
    const s = await api<any>('/extensions/autonomy', undefined, { allow: [404] });
    const continuous: any[] = s.continuous ?? [];
    const subscriptions: any[] = s.subscriptions ?? [];
    const once: any[] = s.once ?? [];
    const schedules: any[] = s.scheduler?.schedules ?? [];
    mount(
      body,
      h(
        'section',
        { class: 'card', id: 'continuous' },
        h('h2', null, `Continuous tools (${continuous.length})`),
        table(
          [
            'Tool',
            'Version',
            'State',
            'Lease holder',
            'Runs',
            'Refused calls',
            'Last start',
            'Last end',
            'Last outcome',
          ],
          continuous.map((c) =>
            h(
              'tr',
              { 'data-tool': c.tool, 'data-state': c.state },
              h('td', null, c.tool),
              h('td', null, c.version),
              h('td', null, c.failing ? `${c.state} (failing)` : c.state),
              h('td', null, c.holder ?? '–'),
              h('td', { class: 'num' }, String(c.runs)),
              h('td', { class: 'num' }, String(c.api_refusals ?? 0)),
              h('td', null, clock(c.last_started_at ?? null)),
              h('td', null, clock(c.last_ended_at ?? null)),
              h('td', null, c.last_outcome ?? '–'),
            ),
          ),
          'No continuous tools.',
        ),
      ),
      h(
        'section',
        { class: 'card', id: 'subscriptions' },
        h('h2', null, `Subscriptions (${subscriptions.length})`),
        table(
          [
            'Subscription',
            'State',
            'Schema',
            'Tag',
            'Runs started here',
            'Refused (depth)',
            'Deferred (rate)',
            'Last trigger',
          ],
          subscriptions.map((x) =>
            h(
              'tr',
              { 'data-subscription': x.id, 'data-state': x.state, title: x.reason ?? '' },
              h('td', null, x.id),
              h('td', null, x.state ?? 'active'),
              h('td', null, x.schema_name),
              h('td', null, x.tag ?? '–'),
              h('td', { class: 'num' }, String(x.triggered)),
              h('td', { class: 'num' }, String(x.refused_depth)),
              h('td', { class: 'num' }, String(x.deferred_rate)),
              h('td', null, clock(x.last_trigger_at ?? null)),
            ),
          ),
          'No subscriptions.',
        ),
      ),
      h(
        'section',
        { class: 'card', id: 'schedules' },
        h('h2', null, `Schedules (${schedules.length})`),
        h('p', { class: 'muted' }, `Published by ${s.scheduler?.holder ?? 'no replica yet'}.`),
        table(
          ['Schedule', 'State', 'Labels', 'Last tick', 'Next due', 'Lag (last / p99)', 'Published', 'Late', 'Missed'],
          schedules.map((x) =>
            h(
              'tr',
              { 'data-schedule': x.id, 'data-state': x.state, title: x.reason ?? '' },
              h('td', null, x.title ?? x.id),
              h('td', null, x.lagging ? `${x.state} (lagging)` : x.state),
              h('td', null, (x.labels ?? []).join(' ')),
              h('td', null, clock(x.last_tick_at ?? null)),
              h('td', null, clock(x.next_tick_at ?? null)),
              h('td', { class: 'num' }, x.lag_ms === undefined ? '–' : `${x.lag_ms} / ${x.lag_p99_ms ?? '–'} ms`),
              h('td', { class: 'num' }, String(x.published ?? 0)),
              h('td', { class: 'num' }, String(x.late ?? 0)),
              h('td', { class: 'num' }, String(x.missed ?? 0)),
            ),
          ),
          'No schedule.definition.v1 records.',
        ),
      ),
      h(
        'section',
        { class: 'card', id: 'once' },
        h('h2', null, `Once-runs (${once.length})`),
        table(
          ['Tool', 'Version', 'Priority', 'Request'],
          once.map((x) =>
            h(
              'tr',
              null,
              h('td', null, x.tool),
              h('td', null, x.version),
              h('td', { class: 'num' }, String(x.priority)),
              h('td', null, x.request),
            ),
          ),
          'No once-runs.',
        ),
      ),
    );
    document.body.dataset['ready'] = 'autonomy';
  };
  const loop = (): void => {
    draw()
      .catch((error: Error) => mount(body, h('p', { class: 'error' }, `Autonomy status failed: ${error.message}`)))
      .finally(() => {
        timer = window.setTimeout(loop, 2000);
      });
  };
  loop();
  return () => clearTimeout(timer);
};

export default page;
