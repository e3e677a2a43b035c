// Catalog: every tool with its state (rejections with each reason at line:column), version,
// source, calls and error rate. One API call, one table; the filter works on the loaded rows.

import { api } from '../api.js';
import { badge, h, mount, pct } from '../dom.js';

interface Issue {
  code: string;
  path: string;
  message: string;
  line?: number;
  column?: number;
}
interface Row {
  name: string;
  state: string;
  kind: string;
  version: string | null;
  description: string;
  source: string;
  agent?: string;
  breadcrumbId?: string;
  errors: Issue[];
  deprecatedAt?: string;
  calls: number;
  errorRate: number | null;
}

/** `12:5 screen.eval — message` (or the JSON path when the issue is not in the source). */
export function issueText(issue: Issue): string {
  const where = issue.line !== undefined ? `${issue.line}:${issue.column ?? 1}` : issue.path || '/';
  return `${where} ${issue.code} — ${issue.message}`;
}

function toolLink(row: Row): string {
  return `#/tool/${encodeURIComponent(row.name)}${row.state === 'rejected' && row.breadcrumbId ? `/${encodeURIComponent(row.breadcrumbId)}` : ''}`;
}

function rowEl(row: Row): HTMLTableRowElement {
  const state = h(
    'td',
    null,
    badge(row.state),
    row.deprecatedAt ? h('small', { class: 'muted' }, ` since ${row.deprecatedAt.slice(0, 10)}`) : null,
    row.errors.length > 0
      ? h(
          'ul',
          { class: 'issues' },
          row.errors.map((e) => h('li', null, issueText(e))),
        )
      : null,
  );
  return h(
    'tr',
    { 'data-tool': row.name, 'data-state': row.state },
    h('td', null, h('a', { href: toolLink(row) }, row.name), h('div', { class: 'muted desc' }, row.description)),
    state,
    h('td', null, row.version ?? '–'),
    h('td', null, row.source, row.agent ? h('small', { class: 'muted' }, ` (${row.agent})`) : null),
    h('td', null, row.kind),
    h('td', { class: 'num' }, String(row.calls)),
    h('td', { class: 'num' }, pct(row.errorRate)),
  );
}

type CatalogDoc = { workspace: string; counts: Record<string, number>; tools: Row[] };
let prefetched: Promise<CatalogDoc> | undefined;

/** Starts loading the catalog before the page renders (used once, by the first render). */
export function prefetchCatalog(): void {
  prefetched = api<CatalogDoc>('/catalog');
  prefetched.catch(() => undefined);
}

const page = async (root: HTMLElement): Promise<void> => {
  const pending = prefetched ?? api<CatalogDoc>('/catalog');
  prefetched = undefined;
  const data = await pending;
  const filter = h('input', {
    type: 'search',
    placeholder: 'Filter by name, state, source…',
    class: 'filter',
    'aria-label': 'filter',
  });
  const tbody = h('tbody');
  const rows = data.tools.map((row) => ({
    row,
    el: rowEl(row),
    key: `${row.name} ${row.state} ${row.source} ${row.agent ?? ''}`.toLowerCase(),
  }));
  const fragment = document.createDocumentFragment();
  for (const r of rows) fragment.appendChild(r.el);
  tbody.appendChild(fragment);
  filter.addEventListener('input', () => {
    const q = filter.value.trim().toLowerCase();
    for (const r of rows) r.el.hidden = q !== '' && !r.key.includes(q);
  });
  const c = data.counts;
  mount(
    root,
    h(
      'div',
      { class: 'bar' },
      h('h1', null, 'Catalog'),
      h(
        'span',
        { class: 'muted' },
        `${data.workspace} · ${c['total']} tools · ${c['runnable']} runnable · ${c['deprecated']} deprecated · ${c['rejected']} rejected`,
      ),
      h('a', { class: 'button', href: '#/editor' }, 'New tool'),
    ),
    filter,
    h(
      'table',
      { class: 'grid catalog' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['Tool', 'State', 'Version', 'Source', 'Kind', 'Calls', 'Errors'].map((t) => h('th', null, t)),
        ),
      ),
      tbody,
    ),
  );
  document.body.dataset['ready'] = 'catalog';
  performance.mark('console:ready');
};

export default page;
