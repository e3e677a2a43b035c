// The editor's result views (console/src/pages/editor.ts): the example runs of the sandbox, and the
// runner's tool.create.response.v1 to a submission.

import { badge, h, json, ms } from '../dom.js';
import { issueText } from './catalog.js';

/** A diagnostic of the runner's screening or definition validation. */
export interface Issue {
  code: string;
  path: string;
  message: string;
  line?: number;
  column?: number;
}

/** The reply of POST /api/examples: its validation errors, else each example's run. */
export function exampleRunsView(r: any): Node[] {
  if (r.errors.length > 0)
    return [
      h('h3', null, 'Not valid'),
      h(
        'ul',
        { class: 'issues' },
        r.errors.map((i: Issue) => h('li', null, issueText(i))),
      ),
    ];
  return [
    h('h3', null, 'Examples ', badge(r.ok ? 'passed' : 'failed', r.ok ? 'success' : 'error')),
    ...r.examples.map((e: any) =>
      h(
        'div',
        { class: 'example', 'data-ok': String(e.ok) },
        h(
          'div',
          { class: 'bar' },
          badge(e.ok ? 'passed' : 'failed', e.ok ? 'success' : 'error'),
          h('strong', null, e.description),
          h('span', { class: 'muted' }, ms(e.durationMs)),
        ),
        e.error ? h('div', { class: 'error' }, `${e.error.code}: ${e.error.message}`) : null,
        e.output !== undefined ? json(e.output) : null,
        e.logs?.length ? json(e.logs, 'json logs') : null,
      ),
    ),
  ];
}

/** A tool.create.response.v1: its status, the tool it made, its errors, warnings and example runs. */
export function createResponseView(answer: any): HTMLElement {
  return h(
    'div',
    { class: 'create-response', 'data-status': answer.status },
    h('h3', null, 'Create response ', badge(answer.status, answer.status === 'rejected' ? 'error' : 'success')),
    answer.tool
      ? h(
          'p',
          null,
          h(
            'a',
            { href: `#/tool/${encodeURIComponent(answer.tool.name)}` },
            `${answer.tool.name} v${answer.tool.version}`,
          ),
          h('span', { class: 'muted' }, ` (${answer.tool.id})`),
        )
      : null,
    answer.errors?.length
      ? h(
          'ul',
          { class: 'issues' },
          answer.errors.map((i: Issue) => h('li', { class: 'error' }, issueText(i))),
        )
      : null,
    answer.warnings?.length
      ? h(
          'ul',
          { class: 'issues' },
          answer.warnings.map((i: Issue) => h('li', { class: 'warning' }, issueText(i))),
        )
      : null,
    answer.examples?.length
      ? h(
          'ul',
          null,
          answer.examples.map((e: any) =>
            h(
              'li',
              null,
              badge(e.ok ? 'passed' : 'failed', e.ok ? 'success' : 'error'),
              ` ${e.description} ${ms(e.duration_ms)}`,
              e.error ? h('span', { class: 'error' }, ` ${e.error}`) : null,
            ),
          ),
        )
      : null,
  );
}
