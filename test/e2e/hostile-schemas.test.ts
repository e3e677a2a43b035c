// End to end through a real runner process: agent-written schema patterns cannot stall the service
// (they run on RE2 under a work budget), patterns RE2 cannot run make the tool unrunnable with the
// reason, and a write-grant tool cannot erase another agent's breadcrumb.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { answer, cleanupAll, client, putTool, request, startRunnerWithStore, toolContext } from './harness.js';

let c: StoreClient;
const ECHO = 'export async function execute(input) { return { got: input }; }';
const patterned = (pattern: string) => ({
  input_schema: {
    type: 'object',
    properties: { s: { type: 'string', pattern, description: 's' } },
    additionalProperties: false,
  },
  examples: [{ description: 'empty', input: {} }],
});

beforeAll(async () => {
  const { url } = await startRunnerWithStore();
  c = client(url);
  await Promise.all([
    putTool(c, toolContext('e2e-redos', ECHO, patterned('^(.*){16}x$'))),
    putTool(c, toolContext('e2e-lookahead', ECHO, patterned('^(?!admin)\\w+$'))),
    putTool(c, toolContext('e2e-plain', ECHO)),
    putTool(
      c,
      toolContext(
        'e2e-eraser',
        `export async function execute(input, context) {
      try { await context.api.updateBreadcrumb(input.id, undefined, { ttl: '2000-01-01T00:00:00Z' }); return { erased: true }; }
      catch (e) { return { code: e.code }; }
    }`,
        { permissions: { net: false, api: 'write' }, input_schema: { type: 'object' } },
      ),
    ),
  ]);
});

afterAll(cleanupAll);

describe('hostile schemas and write grants through the service', () => {
  it('a catastrophic pattern answers at once, a healthy call right after it too', async () => {
    const hostile = await request(c, 'e2e-redos', { s: 'a'.repeat(18) });
    const huge = await request(c, 'e2e-redos', { s: 'a'.repeat(200_000) });
    const fine = await request(c, 'e2e-redos', { s: 'abcx' });
    const healthy = await request(c, 'e2e-plain', { n: 1 });
    expect((await answer(c, hostile)).error).toMatchObject({
      code: 'input.invalid',
      message: 'input does not match the input_schema of "e2e-redos": /s: must match pattern "^(.*){16}x$"',
    });
    expect((await answer(c, huge)).error?.message).toMatch(
      /^input does not match the input_schema of "e2e-redos": \/: checking a string of 200000 characters against pattern "\^\(\.\*\)\{16\}x\$" would exceed the regex work budget/,
    );
    expect(await answer(c, fine)).toMatchObject({ status: 'success', output: { got: { s: 'abcx' } } });
    expect(await answer(c, healthy)).toMatchObject({ status: 'success' });
  });

  it('a pattern RE2 cannot run makes the tool unrunnable, with the reason', async () => {
    const rid = await request(c, 'e2e-lookahead', { s: 'x' });
    expect((await answer(c, rid)).error?.code).toBe('tool.not_found');
    expect((await answer(c, rid)).error?.message).toBe(
      'no runnable tool named "e2e-lookahead" (a tool.code.v1 named "e2e-lookahead" exists but was rejected: /input_schema/properties/s/pattern: ' +
        'Pattern "^(?!admin)\\\\w+$" is not supported by the linear-time regex engine (RE2: no back-references, lookahead or lookbehind): error parsing regexp: invalid or unsupported Perl syntax: `(?!`)',
    );
  });

  it("a write-grant tool cannot expire another agent's breadcrumb", async () => {
    const { id } = await c.createBreadcrumb({ title: 'victim', tags: ['agent:alice'], context: { v: 1 } });
    const rid = await request(c, 'e2e-eraser', { id });
    expect(await answer(c, rid)).toMatchObject({ status: 'success', output: { code: 'permission.denied' } });
    expect(await c.getBreadcrumbFull(id)).toMatchObject({ title: 'victim', ttl: null });
    expect((await c.history(id)).length).toBe(1);
  });
});
