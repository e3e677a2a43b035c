// context.api round trips through a real Deno process and the real embedded store (over HTTP),
// with the runner's policy adapter: the tool reads and writes breadcrumbs without any token or
// network permission, and cannot touch the runner's own records or Secret breadcrumbs.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { defaultConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, type Sandbox, type SandboxTool } from '../../src/sandbox/index.js';
import { createToolApi } from '../../src/service/tool-api.js';
import { createStore, type Store } from '../../src/store/index.js';

let store: Store;
let client: StoreClient;
let sandbox: Sandbox;

beforeAll(async () => {
  const config = defaultConfig({ port: 0, dataDir: ':memory:' });
  store = await createStore({ ...config, logger: silentLogger() });
  client = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  sandbox = await createSandbox({ config, logger: silentLogger() });
});

afterAll(async () => {
  await sandbox.close();
  client.close();
  await store.close();
});

function tool(source: string, api: SandboxTool['api'] = 'write'): SandboxTool {
  return { name: 'api-user', version: '1.0.0', source, net: [], api, timeoutMs: 10_000, memoryMb: 64 };
}

async function run(source: string, input: unknown = {}, api: SandboxTool['api'] = 'write') {
  return sandbox.run({
    tool: tool(source, api),
    input,
    secrets: {},
    request: { id: 'r-1', workspace: 'workspace:tools' },
    api: createToolApi({ client, tool: 'api-user', rid: 'r-1' }),
  });
}

describe('context.api against the real store', () => {
  it('creates, reads, updates and searches breadcrumbs', async () => {
    const result = await run(`export async function execute(input, context) {
      const { id } = await context.api.createBreadcrumb({ title: 'note', tags: ['api-test'], context: { text: 'first' } });
      const read = await context.api.getBreadcrumb(id);
      await context.api.updateBreadcrumb(id, read.version, { context: { text: 'second' } });
      const again = await context.api.getBreadcrumb(id);
      const found = await context.api.searchBreadcrumbs({ tag: 'api-test' });
      return { id, first: read.context.text, second: again.context.text, version: again.version, found: found.map((f) => f.id), tags: again.tags };
    }`);
    expect(result.ok, JSON.stringify(result)).toBe(true);
    if (!result.ok) return;
    const out = result.output as { id: string; first: string; second: string; version: number; found: string[]; tags: string[] };
    expect(out).toMatchObject({ first: 'first', second: 'second', version: 2, found: [out.id] });
    expect(out.tags).toContain('created-by:tool:api-user');
    const full = await client.getBreadcrumbFull(out.id);
    expect(full.context).toEqual({ text: 'second' });
  });

  it('a stale version in updateBreadcrumb is a conflict the tool sees', async () => {
    const { id } = await client.createBreadcrumb({ title: 'x', tags: [], context: {} });
    const result = await run(`export async function execute(input, context) {
      try { await context.api.updateBreadcrumb(input.id, 7, { context: { a: 1 } }); return { ok: true }; }
      catch (e) { return { code: e.code, message: e.message }; }
    }`, { id });
    expect(result.ok && result.output).toMatchObject({ code: 'conflict' });
  });

  it("refuses writes to the runner's own schemas and reads of Secret breadcrumbs", async () => {
    const { id } = await client.createBreadcrumb({ title: 's', tags: [], context: { k: 'v' }, sensitivity: 'Secret' });
    const result = await run(`export async function execute(input, context) {
      const out = {};
      try { await context.api.createBreadcrumb({ title: 'fake', schema_name: 'tool.response.v1', tags: ['request:x'], context: {} }); } catch (e) { out.create = e.code; }
      try { await context.api.getBreadcrumb(input.id); } catch (e) { out.read = e.code; }
      return out;
    }`, { id });
    expect(result.ok && result.output).toEqual({ create: 'permission.denied', read: 'permission.denied' });
  });

  it('a read grant cannot write', async () => {
    const result = await run(`export async function execute(input, context) {
      try { await context.api.createBreadcrumb({ title: 'n', tags: [], context: {} }); return { wrote: true }; }
      catch (e) { return { code: e.code }; }
    }`, {}, 'read');
    expect(result.ok && result.output).toEqual({ code: 'permission.denied' });
  });
});
