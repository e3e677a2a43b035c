// A `context.api` grant scoped to schemas (`permissions.breadcrumbs`, upstream's shape) through a real
// Deno process and the real embedded store: reads reach only the read and write schemas, writes only
// the write schemas; everything else is permission.denied naming the schema.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { defaultConfig, type Config } from '../../src/config/index.js';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { createToolApi } from '../../src/tool-context/tool-api.js';
import { createStore, type Store } from '../../src/store/index.js';

let store: Store;
let client: StoreClient;
let sandbox: Sandbox;
let config: Config;
let otherId: string;

beforeAll(async () => {
  config = defaultConfig({ port: 0, dataDir: ':memory:' });
  store = await createStore({ ...config, logger: silentLogger() });
  client = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  sandbox = await createSandbox({ config, logger: silentLogger() });
  ({ id: otherId } = await client.createBreadcrumb({
    title: 'other',
    schema_name: 'other.v1',
    tags: ['scope-test'],
    context: { x: 1 },
  }));
  await client.createBreadcrumb({
    title: 'def',
    schema_name: 'schedule.definition.v1',
    tags: ['scope-test'],
    context: { every: 1 },
  });
});

afterAll(async () => {
  await sandbox.close();
  client.close();
  await store.close();
});

async function calls(list: unknown[][]): Promise<Array<Record<string, unknown>>> {
  const result = await sandbox.run({
    tool: {
      name: 'scheduler',
      version: '1.0.0',
      net: [],
      api: 'write',
      timeoutMs: 20_000,
      memoryMb: 64,
      source: `export async function execute(input, context) {
      const out = [];
      for (const [method, ...args] of input.calls) {
        try { out.push({ ok: true, value: await context.api[method](...args) }); }
        catch (e) { out.push({ code: e.code, message: e.message }); }
      }
      return out;
    }`,
    },
    input: { calls: list },
    secrets: {},
    request: { id: 'r-1', workspace: 'workspace:tools' },
    api: createToolApi({
      client,
      tool: 'scheduler',
      rid: 'r-1',
      config,
      schemas: { read: ['schedule.definition.v1'], write: ['schedule.tick.v1'] },
    }),
  });
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return (result as { output: Array<Record<string, unknown>> }).output;
}

describe('permissions.breadcrumbs {read: [schedule.definition.v1], write: [schedule.tick.v1]}', () => {
  it('writes its write schema; a write to another schema is permission.denied', async () => {
    const [tick, other] = await calls([
      ['createBreadcrumb', { title: 'tick', schema_name: 'schedule.tick.v1', tags: ['t'], context: {} }],
      ['createBreadcrumb', { title: 'x', schema_name: 'note.v1', tags: ['t'], context: {} }],
    ]);
    expect(tick).toMatchObject({ ok: true });
    expect(other).toEqual({
      code: 'permission.denied',
      message:
        'context.api.createBreadcrumb failed: tool "scheduler" may write only breadcrumbs of the schemas ["schedule.tick.v1"] (permissions.breadcrumbs.write); the new breadcrumb has schema "note.v1"',
    });
  });

  it('reads its read schemas only: get of another schema is denied, a search filters it out or is denied', async () => {
    const [get, all, named, update] = await calls([
      ['getBreadcrumb', otherId],
      ['searchBreadcrumbs', { tag: 'scope-test' }],
      ['searchBreadcrumbs', { schema_name: 'other.v1' }],
      ['updateBreadcrumb', otherId, 1, { context: { x: 2 } }],
    ]);
    expect(get).toEqual({
      code: 'permission.denied',
      message: `context.api.getBreadcrumb failed: tool "scheduler" may read only breadcrumbs of the schemas ["schedule.definition.v1","schedule.tick.v1"] (permissions.breadcrumbs.read); breadcrumb "${otherId}" has schema "other.v1"`,
    });
    expect((all?.['value'] as Array<{ schema_name: string }>).map((b) => b.schema_name)).toEqual([
      'schedule.definition.v1',
    ]);
    expect(named).toMatchObject({ code: 'permission.denied' });
    expect(update).toMatchObject({ code: 'permission.denied' });
  });
});
