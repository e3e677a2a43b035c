// Request inspector: by request id, the request, its claims and attempts, stage timings, logs and
// the response — the whole life of one call on one page.

import { api } from '../api.js';
import { badge, clock, h, json, mount, ms } from '../dom.js';

const page = async (root: HTMLElement, args: string[]): Promise<void> => {
  const rid = args[0] ?? '';
  const input = h('input', {
    type: 'search',
    name: 'rid',
    placeholder: 'request id',
    value: rid,
    class: 'filter',
    'aria-label': 'request id',
  });
  const form = h('form', { class: 'bar' }, input, h('button', { type: 'submit' }, 'Inspect'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = `#/inspect/${encodeURIComponent(input.value.trim())}`;
  });
  const body = h('div');
  mount(root, h('h1', null, 'Request inspector'), form, body);
  document.body.dataset['ready'] = 'inspect';
  if (!rid) return;
  const r = await api<any>(`/requests/${encodeURIComponent(rid)}`, undefined, { allow: [404] });
  if (!r.found) {
    mount(body, h('p', { class: 'error' }, r.error ?? `no request ${rid}`));
    return;
  }
  const genuine = r.responses.find((x: any) => x.genuine)?.context;
  const t = r.timings;
  const stage = (label: string, value: string) =>
    h('div', { class: 'stage' }, h('small', null, label), h('strong', null, value));
  mount(
    body,
    h(
      'div',
      { class: 'bar' },
      h('h2', null, rid),
      genuine
        ? badge(genuine.status)
        : badge(r.live?.status ?? 'pending', r.live && r.live.status !== 'running' ? 'ended' : 'running'),
      h('span', { class: 'muted' }, `attempts: ${r.attempts}`),
    ),
    h(
      'section',
      { class: 'card timeline' },
      stage('received', clock(t.receivedAt)),
      stage('queued', ms(t.queueMs)),
      stage('started', clock(t.startedAt)),
      stage('execution', ms(t.executionMs)),
      stage('total (claim → answer)', ms(t.totalMs)),
      stage('answered', clock(t.answeredAt)),
    ),
    h(
      'div',
      { class: 'cols' },
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'Request'),
        r.request
          ? [
              h('p', null, `tool ${r.request.tool} · agent ${r.request.agentId ?? '–'} · breadcrumb ${r.request.id}`),
              json(r.request.context),
            ]
          : h('p', { class: 'muted' }, 'The request breadcrumb was not found (deleted?).'),
      ),
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'Response'),
        genuine ? json(genuine) : h('p', { class: 'muted' }, 'No answer from the runner yet.'),
        r.responses.filter((x: any) => !x.genuine).length > 0
          ? h(
              'p',
              { class: 'error' },
              `${r.responses.filter((x: any) => !x.genuine).length} record(s) tagged with this request id are not the runner's answer (no answer tag).`,
            )
          : null,
      ),
    ),
    h(
      'section',
      { class: 'card' },
      h('h2', null, `Claims (${r.claims.length})`),
      r.claims.length === 0
        ? h(
            'p',
            { class: 'muted' },
            'No claim records left (the runner deletes them once the answer is written); the answer records the attempt.',
          )
        : h(
            'table',
            { class: 'grid' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Attempt', 'Holder', 'Expires', 'Released', 'MAC'].map((x) => h('th', null, x)),
              ),
            ),
            h(
              'tbody',
              null,
              r.claims.map((c: any) =>
                h(
                  'tr',
                  null,
                  h('td', null, String(c.attempt)),
                  h('td', null, c.holder),
                  h('td', null, clock(c.expiresAt)),
                  h('td', null, c.released ? 'yes' : ''),
                  h('td', null, c.genuine ? 'valid' : badge('forged', 'error')),
                ),
              ),
            ),
          ),
    ),
    h(
      'section',
      { class: 'card' },
      h('h2', null, `Logs (${r.logs.length})`),
      r.logs.length ? json(r.logs, 'json logs') : h('p', { class: 'muted' }, 'No logs.'),
    ),
  );
};

export default page;
