// Editor: the tool's TypeScript (CodeMirror 6) and its definition (JSON), live diagnostics from the
// runner's real screening and definition validation (squiggles at line:column with the rule id),
// example runs in the sandbox, the diff to the current version, and submission as a
// tool.create.request.v1 (with replaces_version when updating) with the create response shown.

import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript } from '@codemirror/lang-javascript';
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { forceLinting, linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { MergeView } from '@codemirror/merge';
import { EditorState, type Extension, type Text } from '@codemirror/state';
import {
  drawSelection,
  EditorView,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from '@codemirror/view';
import { api, poll } from '../api.js';
import { h, mount } from '../dom.js';
import { issueText } from './catalog.js';
import { createResponseView, exampleRunsView, type Issue } from './editor-results.js';

const TEMPLATE_SOURCE = `// Returns the text upper-cased.
export async function execute(input: { text: string }) {
  return { text: input.text.toUpperCase() };
}
`;

const TEMPLATE_DEFINITION = {
  name: 'my-tool',
  description: 'Upper-cases a text.',
  version: '1.0.0',
  code: { language: 'typescript' },
  input_schema: {
    type: 'object',
    properties: { text: { type: 'string', description: 'The text to upper-case' } },
    required: ['text'],
    additionalProperties: false,
  },
  output_schema: {
    type: 'object',
    properties: { text: { type: 'string', description: 'The upper-cased text' } },
    required: ['text'],
  },
  permissions: { net: false },
  limits: { timeout_ms: 5000, memory_mb: 64 },
  examples: [{ description: 'upper-cases', input: { text: 'hi' }, output: { text: 'HI' }, match: 'exact' }],
};

/** Fields the runner adds to a stored definition; never sent back. */
const RUNNER_FIELDS = ['deployment'];

function bumpPatch(version: unknown): string | undefined {
  const m = typeof version === 'string' ? /^(\d+)\.(\d+)\.(\d+)/.exec(version) : null;
  return m ? `${m[1]}.${m[2]}.${Number(m[3]) + 1}` : undefined;
}

/** The document range of an issue at line:column (1-based; columns in UTF-16 units): the word there. */
export function issueRange(doc: Text, line: number, column: number): { from: number; to: number } {
  const l = doc.line(Math.min(Math.max(1, line), doc.lines));
  const from = Math.min(l.from + Math.max(0, column - 1), l.to);
  const rest = l.text.slice(from - l.from);
  const word = /^[\w$.]+/.exec(rest)?.[0].length ?? 1;
  const to = Math.min(l.to, from + Math.max(1, word));
  return to > from ? { from, to } : { from: Math.max(l.from, from - 1), to: Math.max(from, l.from + 1) };
}

/** The TypeScript editor (CodeMirror) over `source`, with the runner's diagnostics from `lint`. */
function codeView(parent: HTMLElement, source: string, lint: Extension): EditorView {
  return new EditorView({
    parent,
    state: EditorState.create({
      doc: source,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        highlightActiveLine(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        javascript({ typescript: true }),
        lint,
        lintGutter(),
        EditorView.theme({
          '&': { height: '100%' },
          '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace' },
        }),
      ],
    }),
  });
}

/** A definition as the diff shows it: without code.source and the fields the runner adds. */
function stripDefinition(d: Record<string, any>): string {
  const copy: Record<string, any> = { ...d, code: { ...(d['code'] ?? {}) } };
  delete copy.code.source;
  for (const field of RUNNER_FIELDS) delete copy[field];
  return JSON.stringify(copy, null, 2);
}

const page = async (root: HTMLElement, args: string[]): Promise<() => void> => {
  const name = args[0];
  const id = args[1];
  let source = TEMPLATE_SOURCE;
  let definition: Record<string, any> = structuredClone(TEMPLATE_DEFINITION);
  let current: { version: string; source: string; definition: Record<string, any> } | undefined;
  if (name) {
    const doc = await api<any>(`/tools/${encodeURIComponent(name)}${id ? `?id=${encodeURIComponent(id)}` : ''}`);
    const def = { ...(doc.definition ?? {}) } as Record<string, any>;
    source = String(def['code']?.source ?? '');
    for (const field of RUNNER_FIELDS) delete def[field];
    definition = { ...def, code: { language: def['code']?.language ?? 'typescript' } };
    const live =
      doc.tool.state === 'runnable' || doc.tool.state === 'deprecated'
        ? doc
        : await api<any>(`/tools/${encodeURIComponent(name)}`).catch(() => undefined);
    if (live && (live.tool.state === 'runnable' || live.tool.state === 'deprecated') && live.tool.version) {
      current = {
        version: live.tool.version,
        source: String(live.definition?.code?.source ?? ''),
        definition: live.definition ?? {},
      };
      definition['version'] = bumpPatch(live.tool.version) ?? definition['version'];
    }
  }

  const diagnosticsEl = h('ul', { class: 'issues diagnostics', 'aria-live': 'polite' });
  const statusEl = h('span', { class: 'muted' });
  const defArea = h(
    'textarea',
    { class: 'definition', spellcheck: false, name: 'definition', 'aria-label': 'definition' },
    JSON.stringify(definition, null, 2),
  );
  const resultsEl = h('div', { class: 'results' });
  const diffEl = h('div', { class: 'diff' });

  /** The tool_spec: the definition JSON with the editor's source; throws when the JSON is broken. */
  const spec = (view: EditorView): Record<string, any> => {
    let def: unknown;
    try {
      def = JSON.parse(defArea.value);
    } catch (error) {
      throw new Error(`the definition is not JSON: ${(error as Error).message}`);
    }
    if (typeof def !== 'object' || def === null || Array.isArray(def))
      throw new Error('the definition must be a JSON object');
    const d = def as Record<string, any>;
    return {
      ...d,
      code: { ...(typeof d['code'] === 'object' && d['code'] ? d['code'] : {}), source: view.state.doc.toString() },
    };
  };

  let lastOk = false;
  const lint = linter(
    async (view): Promise<Diagnostic[]> => {
      let body: Record<string, any>;
      try {
        body = spec(view);
      } catch (error) {
        mount(diagnosticsEl, h('li', { class: 'error' }, (error as Error).message));
        statusEl.textContent = 'definition invalid';
        lastOk = false;
        return [];
      }
      const result = await api<{ ok: boolean; errors: Issue[]; warnings: Issue[] }>('/screen', { tool_spec: body });
      lastOk = result.ok;
      statusEl.textContent = result.ok
        ? `no problems${result.warnings.length ? ` · ${result.warnings.length} warning(s)` : ''}`
        : `${result.errors.length} problem(s)`;
      statusEl.className = result.ok ? 'ok' : 'error';
      const all = [
        ...result.errors.map((i) => ({ i, severity: 'error' as const })),
        ...result.warnings.map((i) => ({ i, severity: 'warning' as const })),
      ];
      mount(
        diagnosticsEl,
        all.map(({ i, severity }) => {
          const li = h(
            'li',
            { class: severity, 'data-code': i.code, 'data-line': i.line === undefined ? '' : String(i.line) },
            issueText(i),
          );
          if (i.line !== undefined) {
            li.addEventListener('click', () => {
              const r = issueRange(view.state.doc, i.line as number, i.column ?? 1);
              view.dispatch({ selection: { anchor: r.from, head: r.to }, scrollIntoView: true });
              view.focus();
            });
          }
          return li;
        }),
      );
      const doc = view.state.doc;
      return all
        .filter(({ i }) => i.line !== undefined && (i.path === '/code/source' || i.path === ''))
        .map(({ i, severity }) => ({
          ...issueRange(doc, i.line as number, i.column ?? 1),
          severity,
          source: i.code,
          message: `${i.code}: ${i.message}`,
        }));
    },
    { delay: 250 },
  );

  const editorEl = h('div', { class: 'code-editor' });
  const view = codeView(editorEl, source, lint);
  let defTimer: ReturnType<typeof setTimeout> | undefined;
  defArea.addEventListener('input', () => {
    clearTimeout(defTimer);
    defTimer = setTimeout(() => forceLinting(view), 250);
  });

  const runButton = h('button', { type: 'button' }, 'Run examples');
  runButton.addEventListener('click', async () => {
    runButton.disabled = true;
    mount(resultsEl, h('p', { class: 'muted' }, 'Running the examples in the sandbox…'));
    try {
      const r = await api<any>('/examples', { tool_spec: spec(view) }, { allow: [422] });
      mount(resultsEl, exampleRunsView(r));
    } catch (error) {
      mount(resultsEl, h('div', { class: 'error' }, (error as Error).message));
    } finally {
      runButton.disabled = false;
    }
  });

  let merges: MergeView[] = [];
  const diffButton = h('button', { type: 'button', disabled: !current }, 'Diff to current');
  diffButton.addEventListener('click', () => {
    for (const m of merges) m.destroy();
    merges = [];
    if (!current) return;
    const readOnly = [
      EditorState.readOnly.of(true),
      EditorView.editable.of(false),
      lineNumbers(),
      javascript({ typescript: true }),
      syntaxHighlighting(defaultHighlightStyle),
    ];
    let edited: Record<string, any>;
    try {
      edited = spec(view);
    } catch (error) {
      mount(diffEl, h('div', { class: 'error' }, (error as Error).message));
      return;
    }
    const sourceBox = h('div', { class: 'merge' });
    const defBox = h('div', { class: 'merge' });
    mount(
      diffEl,
      h('h3', null, `Source: v${current.version} (left) → edited (right)`),
      sourceBox,
      h('h3', null, 'Definition'),
      defBox,
    );
    merges.push(
      new MergeView({
        a: { doc: current.source, extensions: readOnly },
        b: { doc: view.state.doc.toString(), extensions: readOnly },
        parent: sourceBox,
      }),
    );
    merges.push(
      new MergeView({
        a: { doc: stripDefinition(current.definition), extensions: readOnly },
        b: { doc: stripDefinition(edited), extensions: readOnly },
        parent: defBox,
      }),
    );
  });

  const submitButton = h(
    'button',
    { type: 'button', class: 'primary' },
    current ? `Update (replaces v${current.version})` : 'Create',
  );
  submitButton.addEventListener('click', async () => {
    submitButton.disabled = true;
    mount(resultsEl, h('p', { class: 'muted' }, 'Submitting tool.create.request.v1…'));
    try {
      const { rid } = await api<{ rid: string }>('/create', {
        tool_spec: spec(view),
        ...(current ? { replaces_version: current.version } : {}),
      });
      mount(
        resultsEl,
        h('p', { class: 'muted' }, `create request ${rid} written; the runner validates it and runs its examples…`),
      );
      const answer = await poll(async () => {
        const r = await api<any>(`/create/${encodeURIComponent(rid)}`);
        return r.status === 'answered' ? r.response : undefined;
      }, 120_000);
      mount(resultsEl, createResponseView(answer));
      if (answer.status !== 'rejected' && answer.tool) {
        current = { version: answer.tool.version, source: view.state.doc.toString(), definition: spec(view) };
        submitButton.textContent = `Update (replaces v${current.version})`;
        diffButton.disabled = false;
      }
    } catch (error) {
      mount(resultsEl, h('div', { class: 'error' }, (error as Error).message));
    } finally {
      submitButton.disabled = false;
    }
  });

  mount(
    root,
    h(
      'div',
      { class: 'bar' },
      h('h1', null, name ? `Edit ${name}` : 'New tool'),
      statusEl,
      h('span', { class: 'spacer' }),
      runButton,
      diffButton,
      submitButton,
    ),
    current
      ? h(
          'p',
          { class: 'muted' },
          `Current version ${current.version}; the definition's version was bumped for the update.`,
        )
      : null,
    h(
      'div',
      { class: 'editor-layout' },
      h('section', { class: 'card source' }, h('h2', null, 'Source (TypeScript)'), editorEl),
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'Diagnostics'),
        diagnosticsEl,
        h('h2', null, 'Definition (JSON, without code.source)'),
        defArea,
      ),
    ),
    h('section', { class: 'card' }, resultsEl),
    h('section', null, diffEl),
  );
  void lastOk;
  document.body.dataset['ready'] = 'editor';
  performance.mark('console:ready');
  return () => {
    clearTimeout(defTimer);
    for (const m of merges) m.destroy();
    view.destroy();
  };
};

export default page;
