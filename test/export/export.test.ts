// The shared export mapping (src/export): $ref inlining and its hostile cases, object roots, OpenAI
// strict qualification, the side-effect hints from the canonical contract, every format, and the
// TypeScript declarations compiled by the real TypeScript compiler.

import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { RunnerError } from '../../src/errors.js';
import {
  buildToolViews,
  derefSchema,
  qualifiesForOpenAIStrict,
  renderExport,
  schemaToType,
} from '../../src/export/index.js';

const OPTS = { workspace: 'workspace:tools', rapEndpoint: 'http://127.0.0.1:8082/rap/invoke' };

function tool(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> & { name: string } {
  return {
    name,
    description: `tool ${name}`,
    version: '1.0.0',
    kind: 'code',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
      additionalProperties: false,
    },
    outputSchema: { type: 'object' },
    ...extra,
  };
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('derefSchema', () => {
  it('inlines local refs ($defs, definitions, JSON pointers with escapes) and drops the definitions', () => {
    const schema = {
      type: 'object',
      properties: {
        when: { $ref: '#/$defs/time', description: 'when' },
        who: { $ref: '#/definitions/a~1b' },
        again: { $ref: '#/properties/who' },
      },
      $defs: { time: { type: 'string', format: 'date-time' } },
      definitions: { 'a/b': { type: 'integer' } },
    };
    expect(derefSchema(schema, 't')).toEqual({
      type: 'object',
      properties: {
        when: { type: 'string', format: 'date-time', description: 'when' },
        who: { type: 'integer' },
        again: { type: 'integer' },
      },
    });
  });

  it.each([
    [
      'a recursive ref',
      { type: 'object', properties: { next: { $ref: '#' } } },
      'schema of tool "t" has a recursive $ref "#"; recursive schemas cannot be exported',
    ],
    [
      'a mutual recursion',
      { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' },
      'schema of tool "t" has a recursive $ref "#/$defs/a"; recursive schemas cannot be exported',
    ],
    [
      'a remote ref',
      { $ref: 'https://evil.example/schema.json' },
      'schema of tool "t" has the $ref "https://evil.example/schema.json", which is not local; only refs into the schema itself (#/...) can be resolved',
    ],
    [
      'a dangling ref',
      { $ref: '#/$defs/missing' },
      'schema of tool "t" has the $ref "#/$defs/missing", which points nowhere',
    ],
    ['a prototype key', { $ref: '#/__proto__' }, 'schema of tool "t" has the $ref "#/__proto__", which points nowhere'],
  ])('rejects %s naming the tool and the ref', (_label, schema, message) => {
    const error = thrown(() => derefSchema(schema, 't'));
    expect(error).toBeInstanceOf(RunnerError);
    expect(error).toMatchObject({ code: 'input.invalid', message });
  });

  it('stops a "billion laughs" of refs at the node limit', () => {
    const defs: Record<string, unknown> = { l0: { type: 'string' } };
    for (let i = 1; i <= 30; i++)
      defs[`l${i}`] = { type: 'array', items: [{ $ref: `#/$defs/l${i - 1}` }, { $ref: `#/$defs/l${i - 1}` }] };
    const error = thrown(() => derefSchema({ $defs: defs, $ref: '#/$defs/l30' }, 'bomb'));
    expect(error).toMatchObject({
      code: 'input.invalid',
      message: 'schema of tool "bomb" expands to more than 20000 nodes or 64 levels once its $refs are inlined',
    });
  });
});

describe('buildToolViews', () => {
  it('omits every tool of a name collision, empty names and non-object input schemas, with reasons', () => {
    const views = buildToolViews([
      tool('mail.send'),
      tool('mail_send'),
      tool('ok'),
      tool(''),
      tool('str', { inputSchema: { type: 'string' } }),
      tool('loop', { inputSchema: { $ref: '#' } }),
    ]);
    expect(views.tools.map((t) => t.exportName)).toEqual(['ok']);
    expect(views.omitted).toEqual([
      { name: '', exportName: '', reason: 'tool name "" is empty and cannot be exported' },
      {
        name: 'loop',
        exportName: 'loop',
        reason: 'schema of tool "loop" has a recursive $ref "#"; recursive schemas cannot be exported',
      },
      {
        name: 'mail.send',
        exportName: 'mail_send',
        reason: 'tool names "mail.send" and "mail_send" all export as "mail_send"; none of them is exported',
      },
      {
        name: 'mail_send',
        exportName: 'mail_send',
        reason: 'tool names "mail.send" and "mail_send" all export as "mail_send"; none of them is exported',
      },
      {
        name: 'str',
        exportName: 'str',
        reason: 'input schema of tool "str" is not an object schema (type "object"); it cannot be exported',
      },
    ]);
  });

  it('a null schema is the empty-object schema; a schema without type gets type object', () => {
    const views = buildToolViews([
      tool('a', { inputSchema: null }),
      tool('b', { inputSchema: { properties: { x: { type: 'number' } } } }),
    ]);
    expect(views.tools.map((t) => t.inputSchema)).toEqual([
      { type: 'object', additionalProperties: false },
      { type: 'object', properties: { x: { type: 'number' } } },
    ]);
  });

  it.each([
    [undefined, { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }, {}],
    [
      { side_effect: 'bogus' },
      { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      {},
    ],
    [
      { side_effect: 'read-only' },
      { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      { readOnly: true, idempotent: true },
    ],
    [
      { side_effect: 'reversible-write', idempotent: true },
      { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      { idempotent: true },
    ],
    [
      { side_effect: 'code-execution' },
      { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      { destructive: true },
    ],
    [
      { side_effect: 'financial' },
      { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      { destructive: true },
    ],
  ])('contract %j → MCP hints %j and RAP annotations %j', (contract, hints, rap) => {
    const view = buildToolViews([tool('t', contract === undefined ? {} : { contract })]).tools[0];
    expect(view?.hints).toEqual(hints);
    expect(view?.rap).toEqual(rap);
  });
});

describe('qualifiesForOpenAIStrict', () => {
  it.each([
    [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }, true],
    [{ type: 'object', properties: {}, required: [], additionalProperties: false }, true],
    [{ type: 'object', properties: { a: { type: 'string' } }, required: [], additionalProperties: false }, false],
    [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, false],
    [
      {
        type: 'object',
        properties: { a: { type: 'object', properties: { b: { type: 'number' } }, required: ['b'] } },
        required: ['a'],
        additionalProperties: false,
      },
      false,
    ],
    [
      {
        type: 'object',
        properties: { a: { oneOf: [{ type: 'string' }] } },
        required: ['a'],
        additionalProperties: false,
      },
      false,
    ],
    [{ type: 'string' }, false],
  ])('%j → %s', (schema, expected) => {
    expect(qualifiesForOpenAIStrict(schema)).toBe(expected);
  });
});

describe('renderExport', () => {
  const catalog = [
    tool('get-time'),
    tool('loose', { inputSchema: { type: 'object', properties: { a: { type: 'string' } } } }),
    tool('x.y'),
    tool('x_y'),
  ];

  it('openai: strict only when the schema qualifies; reverse map; omissions listed', () => {
    const out = renderExport('openai', catalog, OPTS);
    const doc = JSON.parse(out.text) as {
      tools: Array<{ function: Record<string, unknown> }>;
      reverse: Record<string, string>;
      omitted: unknown[];
    };
    expect(doc.tools.map((t) => [t.function['name'], t.function['strict']])).toEqual([
      ['get-time', true],
      ['loose', undefined],
    ]);
    expect(doc.reverse).toEqual({ 'get-time': 'get-time', loose: 'loose' });
    expect(doc.omitted).toHaveLength(2);
    expect(out.omitted.map((o) => o.name)).toEqual(['x.y', 'x_y']);
  });

  it('rap: a toolset with name, endpoint and annotated tools', () => {
    const doc = JSON.parse(
      renderExport('rap', [tool('a', { contract: { side_effect: 'read-only' } })], OPTS).text,
    ) as Record<string, unknown>;
    expect(doc).toEqual({
      name: 'tools-runner-tools',
      description: 'Tools of the tools-runner workspace workspace:tools',
      endpoint: 'http://127.0.0.1:8082/rap/invoke',
      tools: [
        {
          name: 'a',
          description: 'tool a',
          inputSchema: tool('a')['inputSchema'],
          annotations: { readOnly: true, idempotent: true },
        },
      ],
    });
  });

  it('aruntime: each exported tool as an ARuntime description from its contract and the facts the entry carries', () => {
    const contract = { side_effect: 'reversible-write', idempotent: true, owner: 'ops', retry: { max_attempts: 2 } };
    const entries = [
      tool('a', { contract, timeoutMs: 2500, net: ['api.example.com'], requiredSecrets: ['K'] }),
      tool('h.x', {
        kind: 'host',
        version: 'abcdef012345',
        outputSchema: undefined,
        contract: { side_effect: 'bogus' },
        tags: ['t'],
        budget: { usd: 1 },
      }),
      tool('x.y'),
      tool('x_y'),
    ];
    const out = renderExport('aruntime', entries, OPTS);
    expect(out.omitted.map((o) => o.name)).toEqual(['x.y', 'x_y']);
    expect(JSON.parse(out.text)).toEqual({
      format: 'aruntime',
      tools: [
        {
          toolId: 'a',
          version: '1.0.0',
          description: 'tool a',
          owner: 'ops',
          inputSchema: tool('a')['inputSchema'],
          outputSchema: { type: 'object' },
          egressPolicy: { allow: ['api.example.com'] },
          authenticationRef: ['K'],
          permissionClass: 'write',
          sideEffectClass: 'reversible write',
          idempotency: { idempotent: true, keyRequired: false },
          timeoutSeconds: 2.5,
          retryPolicy: { maxAttempts: 2 },
        },
        // An invalid contract in the catalog is unknown: no side-effect class (fails closed).
        {
          toolId: 'h.x',
          version: 'abcdef012345',
          description: 'tool h.x',
          inputSchema: tool('a')['inputSchema'],
          idempotency: { keyRequired: false },
          rateLimits: { budget: { usd: 1 } },
          observability: { tags: ['t'] },
        },
      ],
      omitted: out.omitted.map((o) => ({ name: o.name, exportedAs: o.exportName, reason: o.reason })),
    });
  });

  it('typescript: declarations that compile and type inputs, outputs and the context', () => {
    const hostile = tool('evil', {
      description: 'ends a comment */ declare const pwned: 1; /*',
      inputSchema: {
        type: 'object',
        properties: {
          'weird key': { type: 'string', description: 'x */ y' },
          n: { type: 'integer' },
          tags: { type: 'array', items: { enum: ['a', 'b'] } },
        },
        required: ['n'],
      },
      outputSchema: {
        type: 'object',
        properties: {
          ok: { const: true },
          pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false },
          maybe: { type: ['string', 'null'] },
        },
        required: ['ok'],
        additionalProperties: false,
      },
    });
    const text = renderExport('typescript', [tool('get-time'), hostile, tool('x.y'), tool('x_y')], OPTS).text;
    const usage = `
${text}
const input: EvilInput = { n: 1, 'weird key': 'k', tags: ['a'] };
const output: EvilOutput = { ok: true, pair: ['a', 1], maybe: null };
const run: GetTimeExecute = async (i, context) => { context.log(i.a, context.request.workspace, context.secrets['K']); await context.api.getBreadcrumb('id'); return {}; };
const names: ToolName[] = ['get-time', 'evil'];
export { input, output, run, names };
`;
    const bad = `${text}\nconst wrong: EvilOutput = { ok: false };\nconst missing: EvilInput = {};\nexport { wrong, missing };\n`;
    const diagnostics = (source: string): string[] => {
      const file = 'exported.ts';
      const host = ts.createCompilerHost({ strict: true, noEmit: true, types: [] });
      const original = host.getSourceFile.bind(host);
      host.getSourceFile = (name, version) =>
        name === file ? ts.createSourceFile(file, source, version) : original(name, version);
      const program = ts.createProgram(
        [file],
        { strict: true, noEmit: true, types: [], target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'] },
        host,
      );
      return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    };
    expect(diagnostics(usage)).toEqual([]);
    expect(diagnostics(bad)).toEqual([
      "Type 'false' is not assignable to type 'true'.",
      "Property 'n' is missing in type '{}' but required in type 'EvilInput'.",
    ]);
    // The description stays inside its comment: `pwned` is never declared.
    expect(text).toContain('ends a comment *\\/ declare const pwned: 1; /*');
    expect(diagnostics(`${text}\nexport const p = pwned;\n`)).toEqual(["Cannot find name 'pwned'."]);
    expect(text).toContain('// Not exported: tool names "x.y" and "x_y" all export as "x_y"; none of them is exported');
  });
});

describe('schemaToType', () => {
  it.each([
    [{ type: 'string' }, 'string'],
    [{ enum: ['a', 1, null] }, '("a" | 1 | null)'],
    [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, '(string | number)'],
    [
      {
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false },
          { type: 'object', properties: { b: { type: 'number' } }, additionalProperties: false },
        ],
      },
      '({\n  a: string;\n} & {\n  b?: number;\n})',
    ],
    [{ type: 'object', additionalProperties: { type: 'number' } }, '{\n  [key: string]: number;\n}'],
    [{ type: 'object', additionalProperties: false }, 'Record<string, never>'],
    [{ type: 'array' }, 'unknown[]'],
    [{ type: 'bogus' }, 'unknown'],
    [{}, 'unknown'],
  ])('%j → %s', (schema, expected) => {
    expect(schemaToType(schema)).toBe(expected);
  });
});
