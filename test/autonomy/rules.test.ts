// The rules of autonomy that need no process: the origin seal (forged, moved or edited origins do
// not verify), nested-call refusals (cycle, depth), and the screen's reading of `subscriptions` and
// `bootstrap` (table of bad inputs with their exact messages).

import { describe, expect, it } from 'vitest';
import { createRequestKeys } from '../../src/breadcrumbs/index.js';
import { readAutonomy } from '../../src/screen/autonomy.js';
import { checkOrigin, depthOfTags, sealOrigin, type RequestOrigin } from '../../src/tool-context/origin.js';
import { nestedCallRefusal } from '../../src/tool-context/tool-calls.js';

const keys = createRequestKeys(Buffer.alloc(32, 9));
const origin: RequestOrigin = {
  kind: 'call',
  agent: 'alice',
  depth: 1,
  chain: ['workflow'],
  parent_tool: 'workflow',
  parent_rid: 'r0',
  deadline_at: 1,
};
const call = { rid: 'r1', tool: 'calculator', input: { expression: '1 + 1' }, idempotency_key: 'k1' };
const context = (o: Record<string, unknown>, c: Record<string, unknown> = call): Record<string, unknown> => ({
  tool: c['tool'],
  input: c['input'],
  ...(c['idempotency_key'] !== undefined ? { idempotency_key: c['idempotency_key'] } : {}),
  ...(c['version'] !== undefined ? { version: c['version'] } : {}),
  ...(c['isolation'] !== undefined ? { isolation: c['isolation'] } : {}),
  origin: o,
});
const verified = (ctx: Record<string, unknown>, rid: string, createdBy?: string, authenticated = false) =>
  checkOrigin(
    keys,
    { context: ctx, ...(createdBy !== undefined ? { created_by: createdBy } : {}) },
    rid,
    authenticated,
  );

describe('origin seal', () => {
  it("verifies the runner's own seal of this very call", () => {
    expect(verified(context(sealOrigin(keys, call, origin)), 'r1')).toEqual({ kind: 'sealed', origin });
    expect(checkOrigin(keys, { context: { tool: 'x', input: {} } }, 'r1', true)).toEqual({ kind: 'none' });
  });

  it.each([
    ['another agent', (o: Record<string, unknown>) => ({ ...o, agent: 'mallory' }), call, 'r1'],
    ['a reset depth', (o: Record<string, unknown>) => ({ ...o, depth: 0 }), call, 'r1'],
    ['a shorter chain', (o: Record<string, unknown>) => ({ ...o, chain: [] }), call, 'r1'],
    ['a later deadline', (o: Record<string, unknown>) => ({ ...o, deadline_at: 2 }), call, 'r1'],
    ['another parent', (o: Record<string, unknown>) => ({ ...o, parent_rid: 'r9' }), call, 'r1'],
    ['no MAC', (o: Record<string, unknown>) => ({ ...o, mac: undefined }), call, 'r1'],
    ['a MAC of another secret', () => sealOrigin(createRequestKeys(Buffer.alloc(32, 1)), call, origin), call, 'r1'],
    ['another input', (o: Record<string, unknown>) => o, { ...call, input: { expression: 'rm -rf' } }, 'r1'],
    ['another tool', (o: Record<string, unknown>) => o, { ...call, tool: 'pay' }, 'r1'],
    ['no idempotency key', (o: Record<string, unknown>) => o, { ...call, idempotency_key: undefined }, 'r1'],
    ['another idempotency key', (o: Record<string, unknown>) => o, { ...call, idempotency_key: 'k2' }, 'r1'],
    ['a version', (o: Record<string, unknown>) => o, { ...call, version: '1.0.0' }, 'r1'],
    ['an isolation', (o: Record<string, unknown>) => o, { ...call, isolation: 'process' }, 'r1'],
    ['another rid', (o: Record<string, unknown>) => o, call, 'r2'],
    ['not an object', () => 'origin', call, 'r1'],
  ])('refuses %s', (_what, edit, usedCall, rid) => {
    const sealed = sealOrigin(keys, call, origin);
    const checked = verified(context(edit(sealed) as Record<string, unknown>, usedCall), rid);
    expect(checked).toEqual({
      kind: 'refused',
      problem: `context.origin of request "${rid}" is not the runner's seal of this request: a sealed request runs only exactly as the runner wrote it (tool, version, input, idempotency_key, isolation, requestId and origin)`,
    });
  });

  it('with auth on, refuses a sealed request stored by any writer but the one the seal names', () => {
    const sealed = sealOrigin(keys, call, { ...origin, writer: 'tools-runner' });
    expect(verified(context(sealed), 'r1', 'tools-runner', true).kind).toBe('sealed');
    expect(verified(context(sealed), 'r1', 'bob', true)).toEqual({
      kind: 'refused',
      problem: `the sealed request "r1" was stored by "bob", not by the runner's own identity ("tools-runner"): only the runner writes sealed requests`,
    });
    // sealed without a writer (a runner without a token): never trusted with auth on
    expect(verified(context(sealOrigin(keys, call, origin)), 'r1', 'tools-runner', true).kind).toBe('refused');
    // with auth off the store cannot tell writers apart: the seal alone decides
    expect(verified(context(sealed), 'r1', 'bob', false).kind).toBe('sealed');
  });

  it('reads the deepest created-by:depth mark (0 without one)', () => {
    expect(depthOfTags(['a', 'created-by:depth:2', 'created-by:depth:5', 'created-by:depth:x'])).toBe(5);
    expect(depthOfTags(['created-by:tool:x'])).toBe(0);
  });
});

describe('nested-call refusals', () => {
  it('refuses a cycle, naming the chain', () => {
    expect(nestedCallRefusal({ tool: 'pong', origin: { ...origin, chain: ['ping'] } }, 'ping', 4)?.message).toBe(
      'context.tools.call("ping") refused: a cycle of nested calls (ping -> pong -> ping)',
    );
    expect(nestedCallRefusal({ tool: 'self' }, 'self', 4)?.code).toBe('input.invalid');
  });

  it('refuses a call one level past the depth limit', () => {
    const deep = { ...origin, depth: 2, chain: ['a', 'b'] };
    expect(nestedCallRefusal({ tool: 'c', origin: deep }, 'd', 3)).toBeUndefined();
    const refusal = nestedCallRefusal({ tool: 'c', origin: { ...deep, depth: 3 } }, 'd', 3);
    expect(refusal?.code).toBe('rate.exceeded');
    expect(refusal?.message).toBe(
      'context.tools.call("d") refused: depth 4 is over the limit of 3 nested calls (nestedCallMaxDepth; chain a -> b -> c)',
    );
  });
});

describe('subscriptions and bootstrap in a definition', () => {
  const agent = { origin: 'agent' as const, api: 'read' as const, apiSchemas: { read: ['note.v1'], write: [] } };
  it.each([
    [
      { subscriptions: 'x' },
      agent,
      '/subscriptions',
      'subscriptions must be an array of {schema_name, tag?, input?}, got "x"',
    ],
    [
      { subscriptions: [{}] },
      agent,
      '/subscriptions/0/schema_name',
      'schema_name must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$, got undefined',
    ],
    [
      { subscriptions: [{ schema_name: 'tool.request.v1' }] },
      agent,
      '/subscriptions/0/schema_name',
      'schema "tool.request.v1" is the runner\'s (tool.* records); a tool may not subscribe to it',
    ],
    [
      { subscriptions: [{ schema_name: 'other.v1' }] },
      agent,
      '/subscriptions/0/schema_name',
      'tool may subscribe only to schemas its grant may read (["note.v1"]); "other.v1" is not one of them',
    ],
    [
      { subscriptions: [{ schema_name: 'note.v1' }] },
      { origin: 'agent' as const, api: false as const },
      '/subscriptions/0/schema_name',
      'tool may subscribe only to schemas its grant may read (no permissions.api or permissions.breadcrumbs grant); "note.v1" is not one of them',
    ],
    [
      { subscriptions: [{ schema_name: 'note.v1', tag: '' }] },
      agent,
      '/subscriptions/0/tag',
      'tag must be a non-empty string of at most 256 characters, got ""',
    ],
    [
      { subscriptions: [{ schema_name: 'note.v1', input: [1] }] },
      agent,
      '/subscriptions/0/input',
      'input must be an object, got [1]',
    ],
    [
      { bootstrap: { mode: 'once', priority: 'high' } },
      { origin: 'bootstrap' as const, api: false as const },
      '/bootstrap/priority',
      'bootstrap.priority must be a number, got "high"',
    ],
  ])('%j is refused', (definition, options, path, message) => {
    const result = readAutonomy(definition as Record<string, unknown>, options);
    expect(result.errors).toEqual([{ code: expect.any(String), path, message }]);
  });

  it("accepts a granted subscription and an operator bootstrap; ignores an agent's bootstrap with a warning", () => {
    expect(
      readAutonomy(
        { subscriptions: [{ schema_name: 'note.v1', tag: 'note:new', description: 'upstream field' }] },
        agent,
      ).subscriptions,
    ).toEqual([{ schemaName: 'note.v1', tag: 'note:new', input: {} }]);
    expect(
      readAutonomy(
        { bootstrap: { enabled: true, mode: 'continuous', priority: 100 } },
        { origin: 'bootstrap', api: false },
      ).bootstrap,
    ).toEqual({ mode: 'continuous', priority: 100, input: {} });
    const ignored = readAutonomy({ bootstrap: { enabled: true, mode: 'continuous' } }, agent);
    expect(ignored.bootstrap).toBeUndefined();
    expect(ignored.warnings[0]?.message).toBe(
      'bootstrap.mode "continuous" is honoured only for the operator\'s tools (the bootstrap directory); ignored',
    );
    expect(
      readAutonomy({ bootstrap: { enabled: false, mode: 'once' } }, { origin: 'bootstrap', api: false }).bootstrap,
    ).toBeUndefined();
  });
});
