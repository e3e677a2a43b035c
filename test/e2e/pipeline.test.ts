// End to end through a real runner process with its embedded store and real Deno: every error code
// reaches the caller as a tagged tool.response.v1; tools created or updated after start run at once;
// the published catalog lists only runnable tools.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG, ToolCatalogContext } from '../../src/breadcrumbs/messages.js';
import { answer, cleanupAll, client, putTool, request, startRunnerWithStore, toolContext, WS } from './harness.js';

let c: StoreClient;

beforeAll(async () => {
  const { url } = await startRunnerWithStore(['--share-secrets', 'E2E_KEY=e2e-secretive']);
  c = client(url);
  const objectOut = { type: 'object', properties: { x: { type: 'number', description: 'x' } }, required: ['x'] };
  await Promise.all([
    putTool(c, toolContext('e2e-echo', 'export async function execute(input) { return { got: input }; }')),
    putTool(
      c,
      toolContext('e2e-throws', 'export async function execute() { throw new Error("kaput: the tool gave up"); }'),
    ),
    putTool(
      c,
      toolContext(
        'e2e-forever',
        'export async function execute() { await new Promise(() => setInterval(() => {}, 1000)); return {}; }',
        { limits: { timeout_ms: 600, memory_mb: 64 } },
      ),
    ),
    putTool(
      c,
      toolContext(
        'e2e-hog',
        'export async function execute() { const keep = []; for (;;) { keep.push(new Uint8Array(8 * 1024 * 1024).fill(1)); await new Promise((r) => setTimeout(r, 0)); } }',
        { limits: { timeout_ms: 20000, memory_mb: 64 } },
      ),
    ),
    putTool(
      c,
      toolContext(
        'e2e-flood',
        'export async function execute() { const line = "x".repeat(8192); for (let i = 0; i < 100000; i++) console.log(line); return {}; }',
        { limits: { timeout_ms: 20000, memory_mb: 128 } },
      ),
    ),
    putTool(
      c,
      toolContext('e2e-liar', 'export async function execute() { return { y: 1 }; }', {
        output_schema: objectOut,
        examples: [{ description: 'e', input: {} }],
      }),
    ),
    putTool(
      c,
      toolContext(
        'e2e-noapi',
        'export async function execute(input, context) { await context.api.getBreadcrumb("anything"); return {}; }',
      ),
    ),
    putTool(
      c,
      toolContext(
        'e2e-needy',
        'export async function execute(input, context) { return { n: Object.keys(context.secrets).length }; }',
        { required_secrets: ['E2E_MISSING_KEY'] },
      ),
    ),
    putTool(
      c,
      toolContext(
        'e2e-secretive',
        'export async function execute(input, context) { return { length: context.secrets.E2E_KEY.length }; }',
        { required_secrets: ['E2E_KEY'] },
      ),
    ),
    putTool(c, toolContext('e2e-evil', 'export async function execute() { return { v: eval("1+1") }; }')),
  ]);
  await c.createSecret({ name: 'E2E_KEY', scope_type: 'global', value: 'super-secret-value-123' });
});

afterAll(cleanupAll);

describe('error codes reach the caller as tagged responses', () => {
  it.each([
    ['unknown tool', 'no-such-tool', {}, 'tool.not_found', /no runnable tool named "no-such-tool"/],
    ['a rejected tool', 'e2e-evil', {}, 'tool.not_found', /exists but was rejected: .*eval/],
    ['input against input_schema', 'e2e-echo', { n: 'not a number' }, 'input.invalid', /\/n: must be number/],
    ['falsy input', 'e2e-echo', null, 'input.invalid', /must be object/],
    ['a thrown error', 'e2e-throws', {}, 'tool.error', /kaput: the tool gave up/],
    [
      'a tool that never ends (no permission: it cannot have an effect, so plain timeout)',
      'e2e-forever',
      {},
      'timeout',
      /600 ms and was killed$/,
    ],
    ['an ArrayBuffer allocation loop', 'e2e-hog', {}, 'memory_limit', /memory/],
    ['an output flood', 'e2e-flood', {}, 'output_limit', /wrote more than 1048576 bytes/],
    ['output against output_schema', 'e2e-liar', {}, 'output.invalid', /must have required property 'x'/],
    ['context.api without the grant', 'e2e-noapi', {}, 'permission.denied', /api/],
    ['a missing secret', 'e2e-needy', {}, 'secret.missing', /E2E_MISSING_KEY/],
  ])('%s', async (_what, tool, input, code, message) => {
    // only timeout.before-submit (nothing was submitted) may be retried; none of the others blindly
    // (src/errors.ts: dependency.unavailable, rate.exceeded, sandbox.crashed, internal and
    // timeout.before-submit are the retryable codes)
    const rid = await request(c, tool, input);
    const response = await answer(c, rid);
    expect(response.status).toBe('error');
    expect(response.request_id).toBe(rid);
    expect(response.error?.code).toBe(code);
    expect(response.error?.message).toMatch(message);
    expect(response.error?.retryable).toBe(code === 'timeout.before-submit');
  });

  it('a malformed request (no tool name) gets input.invalid, not silence', async () => {
    const rid = crypto.randomUUID();
    await c.createBreadcrumb({
      title: 'bad',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, WS],
      context: { requestId: rid, input: {} },
    });
    const response = await answer(c, rid);
    expect(response.error?.code).toBe('input.invalid');
    expect(response.error?.message).toMatch(/tool/);
  });

  it('a request without requestId is answered under its breadcrumb id', async () => {
    const { id } = await c.createBreadcrumb({
      title: 'r',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, WS],
      context: { tool: 'e2e-echo', input: { n: 1 } },
    });
    const response = await answer(c, id);
    expect(response.status).toBe('success');
    expect(response.output).toEqual({ got: { n: 1 } });
  });

  it('resolves secrets from the store and never echoes them', async () => {
    const rid = await request(c, 'e2e-secretive', {});
    const response = await answer(c, rid);
    expect(response.output).toEqual({ length: 'super-secret-value-123'.length });
    expect(JSON.stringify(response)).not.toContain('super-secret-value-123');
  });

  it('a following normal call still succeeds', async () => {
    const response = await answer(c, await request(c, 'e2e-echo', { n: 7 }));
    expect(response.output).toEqual({ got: { n: 7 } });
  });
});

describe('catalog follows the store', () => {
  it('runs a tool created after start; a direct PATCH of it takes it out, saying why (trust model)', async () => {
    const id = await putTool(c, toolContext('e2e-late', 'export async function execute() { return { v: 1 }; }'));
    expect((await answer(c, await request(c, 'e2e-late', {}))).output).toEqual({ v: 1 });
    await c.updateBreadcrumb(id, {
      context: toolContext('e2e-late', 'export async function execute() { return { v: 2 }; }', { version: '2.0.0' }),
    });
    let response: Awaited<ReturnType<typeof answer>> | undefined;
    // The update's event may race the next request; the catalog must converge within a few calls.
    for (let i = 0; i < 20 && response?.error?.code !== 'tool.not_found'; i++) {
      response = await answer(c, await request(c, 'e2e-late', {}));
      expect(response.output).not.toEqual({ v: 2 });
    }
    expect(response?.error?.message).toBe(
      `no runnable tool named "e2e-late" (a tool.code.v1 named "e2e-late" exists but was rejected: /deployment: definition ${id} was changed after it was written (store version 2) and not through the runner; a tool changes only through a tool.create.request.v1 of its owner with replaces_version)`,
    );
  });

  it('an invalid update takes the tool out', async () => {
    const id = await putTool(c, toolContext('e2e-spoiled', 'export async function execute() { return {}; }'));
    expect((await answer(c, await request(c, 'e2e-spoiled', {}))).status).toBe('success');
    await c.updateBreadcrumb(id, {
      context: toolContext('e2e-spoiled', 'export async function execute() { return new Function("return 1")(); }', {
        version: '1.0.1',
      }),
    });
    let code: string | undefined;
    for (let i = 0; i < 20 && code !== 'tool.not_found'; i++) {
      code = (await answer(c, await request(c, 'e2e-spoiled', {}))).error?.code;
    }
    expect(code).toBe('tool.not_found');
  });

  it('publishes one tool.catalog.v1 listing only runnable tools', async () => {
    // Its own tools, so the test does not depend on what another test left behind: one runnable,
    // one taken out by a direct PATCH (rejected), and e2e-evil, rejected from the start.
    await putTool(c, toolContext('e2e-listed', 'export async function execute() { return { v: 1 }; }'));
    const id = await putTool(c, toolContext('e2e-patched', 'export async function execute() { return { v: 1 }; }'));
    expect((await answer(c, await request(c, 'e2e-patched', {}))).output).toEqual({ v: 1 });
    await c.updateBreadcrumb(id, {
      context: toolContext('e2e-patched', 'export async function execute() { return { v: 2 }; }', { version: '2.0.0' }),
    });
    let names: string[] = [];
    let rejected: string[] = [];
    const settled = () => names.includes('e2e-listed') && rejected.includes('e2e-patched');
    for (let i = 0; i < 100 && !settled(); i++) {
      const items = await c.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, tag: WS, include_context: true });
      expect(items.length).toBe(1);
      const catalog = ToolCatalogContext.parse(items[0]?.context);
      names = catalog.tools.map((t) => t.name);
      rejected = ((catalog['rejectedTools'] ?? []) as Array<{ name: string }>).map((t) => t.name);
      // the catalog is republished after the change: poll the store until this version arrives
      if (!settled()) await new Promise((r) => setTimeout(r, 100));
    }
    expect(names).toContain('e2e-echo');
    expect(names).toContain('e2e-listed');
    expect(names).not.toContain('e2e-patched');
    expect(rejected).toContain('e2e-patched');
    expect(names).not.toContain('e2e-evil');
    expect(rejected).toContain('e2e-evil');
  });
});
