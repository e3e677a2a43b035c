// Whole-toolset validation (P7) with its exact messages, and display scripts (P6).

import { describe, expect, it } from 'vitest';
import { renderDisplay, evaluateDisplayScript, validateToolset, buildServedToolset } from '../../src/rap/index.js';
import type { SideEffect, ToolContract } from '../../src/contract/contract.js';
import { createSchemaValidator } from '../../src/screen/index.js';

const validator = createSchemaValidator();
const tool = { name: 'get_pull_request', description: 'Get a PR', inputSchema: { type: 'object' } };
const valid = { name: 'github-tools', endpoint: 'https://tool.example.com/invoke', tools: [tool] };
const errorsOf = (doc: unknown): string[] => {
  const result = validateToolset(doc, validator);
  return result.ok ? [] : result.errors;
};

describe('validateToolset (P7)', () => {
  it('accepts the seed example and makes the 2020-12 default dialect explicit', () => {
    const result = validateToolset(valid, validator);
    expect(result.ok).toBe(true);
    if (result.ok)
      expect(result.toolset.tools[0]?.inputSchema).toEqual({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
      });
  });

  it.each([
    ['empty name', { ...valid, name: '' }, 'name must be a string of 1 to 128 characters, got ""'],
    [
      'name of 129 characters',
      { ...valid, name: 'n'.repeat(129) },
      `name must be a string of 1 to 128 characters, got "${'n'.repeat(78)}…`,
    ],
    ['missing name', { endpoint: valid.endpoint, tools: valid.tools }, 'name is required'],
    [
      'endpoint not a URL',
      { ...valid, endpoint: 'not a url' },
      'endpoint must be an absolute http(s) URL, got "not a url"',
    ],
    [
      'endpoint of another scheme',
      { ...valid, endpoint: 'file:///etc/passwd' },
      'endpoint must be an absolute http(s) URL, got "file:///etc/passwd"',
    ],
    ['no tools', { ...valid, tools: [] }, 'tools must contain at least one tool'],
    ['tools not an array', { ...valid, tools: {} }, 'tools must be an array, got {}'],
    ['tool without name', { ...valid, tools: [{ description: 'd', inputSchema: {} }] }, 'tools[0].name is required'],
    [
      'tool without description',
      { ...valid, tools: [{ name: 'x', inputSchema: {} }] },
      'tools[0].description is required',
    ],
    [
      'tool without inputSchema',
      { ...valid, tools: [{ name: 'x', description: 'd' }] },
      'tools[0].inputSchema is required',
    ],
    [
      'tool name with a space',
      { ...valid, tools: [{ ...tool, name: 'get pr' }] },
      'tools[0].name must be 1 to 128 characters of A-Z, a-z, 0-9, "_", "-" or ".", got "get pr"',
    ],
    [
      'inputSchema not an object',
      { ...valid, tools: [{ ...tool, inputSchema: 'object' }] },
      'tools[0].inputSchema must be a JSON Schema object, got "object"',
    ],
    [
      'inputSchema that does not compile',
      { ...valid, tools: [{ ...tool, inputSchema: { type: 'objekt' } }] },
      expect.stringMatching(/^tools\[0\]\.inputSchema is not a valid JSON Schema: /),
    ],
    [
      'a pattern RE2 cannot run',
      {
        ...valid,
        tools: [
          { ...tool, inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)a$' } } } },
        ],
      },
      expect.stringMatching(
        /^tools\[0\]\.inputSchema is not a valid JSON Schema: pattern "\^\(\?=a\)a\$" is not supported by the linear-time regex engine/,
      ),
    ],
    [
      'destructive given as a string',
      { ...valid, tools: [{ ...tool, annotations: { destructive: 'yes' } }] },
      'tools[0].annotations.destructive must be a boolean, got "yes"',
    ],
    [
      'displayScript not a string',
      { ...valid, tools: [{ ...tool, displayScript: 5 }] },
      'tools[0].displayScript must be a string, got 5',
    ],
    [
      'duplicate names in one toolset',
      { ...valid, tools: [tool, tool] },
      'tools[1].name "get_pull_request" is already used by tools[0]',
    ],
    ['not an object', [valid], 'toolset must be a JSON object, got an array'],
  ])('rejects %s', (_label, doc, message) => {
    expect(errorsOf(doc)).toEqual([message]);
  });

  it('reports every problem of a toolset at once', () => {
    expect(
      errorsOf({ name: '', endpoint: 'x', tools: [{ name: 'ok', description: 'd', inputSchema: {} }, null] }),
    ).toEqual([
      'name must be a string of 1 to 128 characters, got ""',
      'endpoint must be an absolute http(s) URL, got "x"',
      'tools[1] must be an object, got null',
    ]);
  });
});

describe('displayScript (P6)', () => {
  const args = { owner: 'acme', repo: 'widgets', number: 42 };
  it('evaluates the seed example', () => {
    expect(
      renderDisplay('get_pull_request', '"PR #" + args.number + " on " + args.owner + "/" + args.repo', args),
    ).toBe('PR #42 on acme/widgets');
  });

  it('passes nested values in as JSON strings, and adds numbers like Rhai', () => {
    expect(evaluateDisplayScript('"labels: " + args.labels', { labels: ['a', 'b'] })).toBe('labels: ["a","b"]');
    expect(evaluateDisplayScript('"sum " + (args.a + args.b)', { a: 1, b: 2 })).toBe('sum 3');
  });

  it.each([
    ['a missing argument', '"PR #" + args.missing'],
    ['a call', 'alert(1)'],
    ['a computed member', 'args["owner"]'],
    ['another object than args', 'process.env + ""'],
    ['a template literal', '`x${args.owner}`'],
    ['a number literal', '1 + "x"'],
    ['another operator', '"a" - "b"'],
    ['two statements', '"a"; "b"'],
    ['a syntax error', '"PR #" +'],
    ['a non-string result', 'args.number'],
    ['a prototype key', '"x" + args.constructor'],
    ['an assignment', 'args.owner = "x"'],
  ])('falls back to name(args) on %s, without an error', (_label, script) => {
    expect(renderDisplay('get_pull_request', script, args)).toBe(
      'get_pull_request({"owner":"acme","repo":"widgets","number":42})',
    );
  });

  it('falls back for an over-long script and caps the display', () => {
    expect(evaluateDisplayScript('"a" + '.repeat(500) + '"a"', {})).toBeUndefined();
    expect(renderDisplay('t', undefined, { s: 'x'.repeat(1000) })).toHaveLength(500);
  });
});

describe('served toolset', () => {
  it('annotates each tool from its contract per the crosswalk (§5.2)', () => {
    const table: Array<
      [SideEffect | undefined, boolean | undefined, Record<string, boolean>, ToolContract['approval']?]
    > = [
      ['read-only', undefined, { readOnly: true, idempotent: true }],
      ['reversible-write', undefined, {}],
      ['reversible-write', true, { idempotent: true }],
      ['irreversible', true, { destructive: true }],
      ['administrative', undefined, { destructive: true }],
      ['code-execution', undefined, { destructive: true }],
      ['financial', undefined, { destructive: true }],
      ['external-communication', undefined, { destructive: true }],
      [undefined, true, {}],
      [undefined, undefined, { destructive: true }, { when: 'always' }],
      ['reversible-write', true, { destructive: true, idempotent: true }, { when: 'always' }],
      ['read-only', undefined, { readOnly: true, idempotent: true }, { when: 'always' }],
      [undefined, undefined, {}, { when: 'never' }],
    ];
    const served = buildServedToolset({
      name: 'ts',
      description: 'd',
      endpoint: 'http://127.0.0.1:1/invoke',
      tools: table.map(([effect, idempotent, , approval], i) => ({
        name: `t${String(i).padStart(2, '0')}`,
        description: 'd',
        inputSchema: { type: 'object' },
        contract: {
          ...(effect ? { side_effect: effect } : {}),
          ...(idempotent !== undefined ? { idempotent } : {}),
          ...(approval ? { approval } : {}),
        },
      })),
    });
    expect(served.toolset.tools.map((t) => t.annotations)).toEqual(table.map(([, , annotations]) => annotations));
  });

  it('mangles names to RAP characters and leaves out both tools of a collision', () => {
    const served = buildServedToolset({
      name: 'ts',
      description: 'd',
      endpoint: 'http://127.0.0.1:1/invoke',
      tools: [
        { name: 'mail.send', description: 'sends', inputSchema: { type: 'object' }, contract: {} },
        { name: 'a.b', description: 'one', inputSchema: {}, contract: {} },
        { name: 'a_b', description: 'two', inputSchema: {}, contract: {} },
      ],
    });
    expect(served.toolset.tools.map((t) => t.name)).toEqual(['mail_send']);
    expect(served.reverse.get('mail_send')).toBe('mail.send');
    expect(served.dropped).toEqual([{ served: 'a_b', names: ['a.b', 'a_b'] }]);
    expect(validateToolset(served.toolset, validator).ok).toBe(true);
  });
});
