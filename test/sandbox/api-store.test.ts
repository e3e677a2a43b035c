// context.api round trips through a real Deno process and the real embedded store (over HTTP),
// with the runner's policy adapter: the tool reads and writes breadcrumbs without any token or
// network permission, cannot touch the runner's own records, other writers' records or Secret
// breadcrumbs, cannot forge provenance, and one execution's calls are capped.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, StoreError, type StoreClient } from '../../src/breadcrumbs/index.js';
import { defaultConfig, type Config } from '../../src/config/index.js';
import { ErrorCode } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, type Sandbox, type SandboxTool } from '../../src/sandbox/index.js';
import { createToolApi } from '../../src/tool-context/tool-api.js';
import { createStore, type Store } from '../../src/store/index.js';

let store: Store;
let client: StoreClient;
let sandbox: Sandbox;
let config: Config;

beforeAll(async () => {
  config = defaultConfig({ port: 0, dataDir: ':memory:' });
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
  return { name: 'api-user', version: '1.0.0', source, net: [], api, timeoutMs: 20_000, memoryMb: 64 };
}

async function run(
  source: string,
  input: unknown = {},
  opts: { api?: SandboxTool['api']; config?: Partial<Config>; client?: StoreClient } = {},
) {
  return sandbox.run({
    tool: tool(source, opts.api ?? 'write'),
    input,
    secrets: {},
    request: { id: 'r-1', workspace: 'workspace:tools' },
    api: createToolApi({
      client: opts.client ?? client,
      tool: 'api-user',
      rid: 'r-1',
      config: { ...config, ...opts.config },
    }),
  });
}

/** Runs `calls` (a list of [method, ...args]) in the tool, one after the other; each answers {ok, value} or {code, message}. */
async function calls(list: unknown[][], opts: Parameters<typeof run>[2] = {}): Promise<Array<Record<string, unknown>>> {
  const result = await run(
    `export async function execute(input, context) {
    const out = [];
    for (const [method, ...args] of input.calls) {
      try { out.push({ ok: true, value: await context.api[method](...args) }); }
      catch (e) { out.push({ code: e.code, message: e.message }); }
    }
    return out;
  }`,
    { calls: list },
    opts,
  );
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return (result as { output: Array<Record<string, unknown>> }).output;
}

const OWN = 'created-by:tool:api-user';

describe('context.api against the real store', () => {
  it('creates, reads, updates and searches breadcrumbs', async () => {
    const result = await run(`export async function execute(input, context) {
      const { id } = await context.api.createBreadcrumb({ title: 'note', tags: ['api-test'], context: { text: 'first' } });
      const read = await context.api.getBreadcrumb(id);
      await context.api.updateBreadcrumb(id, read.version, { context: { text: 'second' } });
      const again = await context.api.getBreadcrumb(id);
      const found = await context.api.searchBreadcrumbs({ tag: 'api-test', limit: 5 });
      return { id, first: read.context.text, second: again.context.text, version: again.version, found: found.map((f) => f.id), tags: again.tags };
    }`);
    expect(result.ok, JSON.stringify(result)).toBe(true);
    if (!result.ok) return;
    const out = result.output as {
      id: string;
      first: string;
      second: string;
      version: number;
      found: string[];
      tags: string[];
    };
    expect(out).toMatchObject({
      first: 'first',
      second: 'second',
      version: 2,
      found: [out.id],
      tags: ['api-test', OWN],
    });
    expect((await client.getBreadcrumbFull(out.id)).context).toEqual({ text: 'second' });
  });

  it('a stale version in updateBreadcrumb is a conflict the tool sees', async () => {
    const [created] = await calls([['createBreadcrumb', { title: 'x', tags: [], context: {} }]]);
    const id = (created?.value as { id: string }).id;
    const [stale] = await calls([['updateBreadcrumb', id, 7, { context: { a: 1 } }]]);
    expect(stale).toEqual({
      code: 'conflict',
      message: expect.stringMatching(/^context\.api\.updateBreadcrumb failed: /),
    });
  });

  it('a read grant cannot write', async () => {
    const [create] = await calls([['createBreadcrumb', { title: 'n', tags: [], context: {} }]], { api: 'read' });
    expect(create).toMatchObject({ code: 'permission.denied' });
  });
});

describe('a write grant cannot erase or alter what others wrote', () => {
  it.each([
    ['ttl in the past', { ttl: '2000-01-01T00:00:00Z' }],
    ['ttl now', { ttl: new Date().toISOString() }],
    ['visibility downgrade', { visibility: 'Public' }],
    ['sensitivity downgrade', { sensitivity: 'Low' }],
    ['context overwrite', { context: { hijacked: true } }],
    ['tags replaced (own mark added)', { tags: [OWN] }],
  ])("%s on another agent's breadcrumb is refused; it and its history stay", async (_what, patch) => {
    const { id } = await client.createBreadcrumb({
      title: 'victim',
      tags: ['agent:alice'],
      context: { v: 1 },
      visibility: 'Private',
      sensitivity: 'Pii',
    });
    await client.updateBreadcrumb(id, { context: { v: 2 } });
    const [update, unversioned] = await calls([
      ['updateBreadcrumb', id, 2, patch],
      ['updateBreadcrumb', id, undefined, patch],
    ]);
    const message = `context.api.updateBreadcrumb failed: tool "api-user" may only update breadcrumbs it created (tagged "${OWN}"); breadcrumb "${id}" is not one of them`;
    expect(update).toEqual({ code: 'permission.denied', message });
    expect(unversioned).toEqual({ code: 'permission.denied', message });
    expect(await client.getBreadcrumbFull(id)).toMatchObject({
      version: 2,
      context: { v: 2 },
      visibility: 'Private',
      sensitivity: 'Pii',
      ttl: null,
      tags: ['agent:alice'],
    });
    expect((await client.history(id)).map((h) => h.version)).toEqual([2, 1]);
  });

  it("a create that names a victim's id (with a ttl in the past) makes a new record; the victim stays", async () => {
    const { id } = await client.createBreadcrumb({ title: 'victim', tags: [], context: { v: 1 } });
    const [created] = await calls([
      [
        'createBreadcrumb',
        {
          id,
          title: 'x',
          tags: [],
          context: {},
          ttl: '2000-01-01T00:00:00Z',
          owner_id: 'someone',
          created_by: 'someone',
        },
      ],
    ]);
    expect(created).toMatchObject({ ok: true });
    expect((created?.value as { id: string }).id).not.toBe(id);
    expect(await client.getBreadcrumbFull(id)).toMatchObject({ title: 'victim', context: { v: 1 } });
  });

  it('its own breadcrumbs it may change, expire included', async () => {
    const out = await calls([['createBreadcrumb', { title: 'mine', tags: ['t'], context: {} }]]);
    const id = (out[0]?.value as { id: string }).id;
    const [visibility, expire, read] = await calls([
      ['updateBreadcrumb', id, 1, { visibility: 'Public' }],
      ['updateBreadcrumb', id, 2, { ttl: '2000-01-01T00:00:00Z' }],
      ['getBreadcrumb', id],
    ]);
    expect(visibility).toMatchObject({ ok: true, value: { ok: true, version: 2 } });
    expect(expire).toMatchObject({ ok: true, value: { ok: true, version: 3 } });
    expect(read).toEqual({
      code: 'not_found',
      message: `context.api.getBreadcrumb failed: breadcrumb "${id}" not found`,
    });
  });
});

describe('provenance marks: added, never forged or removed', () => {
  it('create drops foreign created-by marks (any case) and adds its own', async () => {
    const [created] = await calls([
      [
        'createBreadcrumb',
        {
          title: 'p',
          tags: ['x', 'created-by:tool:calculator', 'Created-By:agent:bob', ' created-by:tool:api-user'],
          context: {},
        },
      ],
    ]);
    const id = (created?.value as { id: string }).id;
    expect((await client.getBreadcrumbFull(id)).tags).toEqual(['x', OWN]);
  });

  it('update keeps every existing mark, drops new foreign ones, and re-adds its own', async () => {
    const [created] = await calls([['createBreadcrumb', { title: 'p', tags: ['x'], context: {} }]]);
    const id = (created?.value as { id: string }).id;
    // another writer with rights adds its own mark; the tool must not remove it
    await client.updateBreadcrumb(id, { tags: ['x', OWN, 'created-by:agent:carol'] });
    const [dropAll, forge] = await calls([
      ['updateBreadcrumb', id, undefined, { tags: [] }],
      ['updateBreadcrumb', id, undefined, { tags: ['y', 'created-by:tool:calculator'] }],
    ]);
    expect(dropAll).toMatchObject({ ok: true });
    expect(forge).toMatchObject({ ok: true });
    expect((await client.getBreadcrumbFull(id)).tags).toEqual(['y', OWN, 'created-by:agent:carol']);
  });
});

describe("the runner's namespace", () => {
  it.each([
    'tool.response.v1',
    'Tool.Code.v1',
    ' tool.code.v1 ',
    'TOOL.REQUEST.V1',
    'tool\u200b.code.v1',
    'ｔｏｏｌ.code.v1',
    'tool.claim.v1',
    'tool.anything.v9',
  ])('refuses schema %j on create and on update', async (schema) => {
    const [own] = await calls([['createBreadcrumb', { title: 'mine', tags: [], context: {} }]]);
    const id = (own?.value as { id: string }).id;
    const message = (action: string) =>
      `context.api.${action} failed: tools may not write the runner's schema ${JSON.stringify(schema)} (tool.* records are the runner's)`;
    expect(
      await calls([
        ['createBreadcrumb', { title: 'fake', schema_name: schema, tags: [], context: {} }],
        ['updateBreadcrumb', id, undefined, { schema_name: schema }],
      ]),
    ).toEqual([
      { code: 'permission.denied', message: message('createBreadcrumb') },
      { code: 'permission.denied', message: message('updateBreadcrumb') },
    ]);
  });

  it.each([
    'tool:response',
    'tool:request',
    'request:r-1',
    'claim:r-1:1',
    'Tool:Response',
    'tool',
    ' TOOL ',
    'response:r-1',
    'tool:catalog',
    'tool:calculator',
  ])('refuses the reserved tag %j on create and on update', async (tag) => {
    const [own] = await calls([['createBreadcrumb', { title: 'mine', tags: [], context: {} }]]);
    const id = (own?.value as { id: string }).id;
    const message = (action: string) =>
      `context.api.${action} failed: tools may not write the runner's tag ${JSON.stringify(tag)} (tool, tool:*, request:*, claim:*, response:* are reserved)`;
    expect(
      await calls([
        ['createBreadcrumb', { title: 'fake answer', tags: ['workspace:tools', tag], context: { status: 'success' } }],
        ['updateBreadcrumb', id, undefined, { tags: [tag] }],
      ]),
    ).toEqual([
      { code: 'permission.denied', message: message('createBreadcrumb') },
      { code: 'permission.denied', message: message('updateBreadcrumb') },
    ]);
  });

  it("hides the runner's records (requests, responses, claims, create requests, definitions) from get and search unless granted", async () => {
    const tag = `ns-${Date.now()}`;
    const records = await Promise.all([
      client.createBreadcrumb({
        title: 'req',
        schema_name: 'tool.request.v1',
        tags: [tag, 'tool:request'],
        context: { tool: 'x', input: { secret: 'inputs of another agent' } },
      }),
      client.createBreadcrumb({
        title: 'resp',
        schema_name: 'tool.response.v1',
        tags: [tag, 'tool:response', 'request:r-9'],
        context: { output: 'outputs' },
      }),
      client.createBreadcrumb({ title: 'claim', schema_name: 'tool.claim.v1', tags: [tag], context: {} }),
      client.createBreadcrumb({ title: 'create', schema_name: 'tool.create.request.v1', tags: [tag], context: {} }),
      client.createBreadcrumb({ title: 'by tag only', tags: [tag, 'request:r-9'], context: {} }),
    ]);
    const plain = await client.createBreadcrumb({ title: 'plain', tags: [tag], context: {} });
    const ids = records.map((r) => r.id);
    const out = await calls(
      [
        ...ids.map((id) => ['getBreadcrumb', id]),
        ['searchBreadcrumbs', { tag, limit: 10 }],
        ['searchBreadcrumbs', { tag: 'tool:response' }],
        ['searchBreadcrumbs', { schema_name: 'Tool.Request.v1' }],
      ],
      { api: 'read' },
    );
    expect(out.slice(0, ids.length)).toEqual(
      ids.map((id) => ({
        code: 'permission.denied',
        message: `context.api.getBreadcrumb failed: breadcrumb "${id}" is one of the runner's own records, which tool "api-user" may not read`,
      })),
    );
    expect((out[ids.length]?.value as Array<{ id: string }>).map((r) => r.id)).toEqual([plain.id]);
    expect(out.slice(ids.length + 1)).toEqual([
      {
        code: 'permission.denied',
        message:
          'context.api.searchBreadcrumbs failed: tag "tool:response" names the runner\'s own records, which tool "api-user" may not read',
      },
      {
        code: 'permission.denied',
        message:
          'context.api.searchBreadcrumbs failed: schema "Tool.Request.v1" names the runner\'s own records, which tool "api-user" may not read',
      },
    ]);
    const granted = await calls(
      [
        ['getBreadcrumb', ids[0]],
        ['searchBreadcrumbs', { tag, limit: 10 }],
      ],
      { api: 'read', config: { toolApiRunnerReaders: ['api-user'] } },
    );
    expect(granted[0]).toMatchObject({
      ok: true,
      value: { id: ids[0], context: { input: { secret: 'inputs of another agent' } } },
    });
    expect((granted[1]?.value as unknown[]).length).toBe(6);
  });
});

describe('Secret breadcrumbs', () => {
  it('are never returned, and removed before limit applies (no count side channel)', async () => {
    const tag = `secret-${Date.now()}`;
    const low: string[] = [];
    for (let i = 0; i < 3; i++)
      low.push((await client.createBreadcrumb({ title: `low ${i}`, tags: [tag], context: {} })).id);
    for (let i = 0; i < 5; i++)
      await client.createBreadcrumb({ title: `secret ${i}`, tags: [tag], context: { k: 'v' }, sensitivity: 'Secret' });
    const [three, two, get] = await calls(
      [
        ['searchBreadcrumbs', { tag, limit: 3 }],
        ['searchBreadcrumbs', { tag, limit: 2, include_context: false }],
        ['searchBreadcrumbs', { tag, q: 'secret' }],
      ],
      { api: 'read' },
    );
    expect((three?.value as Array<{ id: string }>).map((r) => r.id).sort()).toEqual([...low].sort());
    expect(two?.value).toHaveLength(2);
    expect((two?.value as Array<Record<string, unknown>>)[0]).not.toHaveProperty('context');
    expect(get?.value).toEqual([]);
  });
});

describe('caps on one execution', () => {
  it('refuses a reply over toolApiMaxReplyBytes and replies beyond toolApiMaxJobBytes, with rate.exceeded', async () => {
    const tag = `big-${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        (await client.createBreadcrumb({ title: `big ${i}`, tags: [tag], context: { blob: 'x'.repeat(40_000) } })).id,
      );
    const caps = { toolApiMaxReplyBytes: 100_000, toolApiMaxJobBytes: 100_000 };
    const out = await calls(
      [
        ['searchBreadcrumbs', { tag, limit: 4 }],
        ['searchBreadcrumbs', { tag, limit: 4, include_context: false }],
        ['getBreadcrumb', ids[0]],
        ['getBreadcrumb', ids[1]],
        ['getBreadcrumb', ids[2]],
        ['getBreadcrumb', ids[3]],
      ],
      { api: 'read', config: caps },
    );
    expect(out[0]).toEqual({
      code: 'rate.exceeded',
      message:
        'context.api.searchBreadcrumbs failed: the reply would exceed 100000 bytes (toolApiMaxReplyBytes) at result 3 (limit 4); ask for fewer results or pass include_context: false',
    });
    expect(out[1]).toMatchObject({ ok: true });
    expect(out.slice(2).map((o) => o.ok ?? o.code)).toEqual([true, true, 'rate.exceeded', 'rate.exceeded']);
    expect(out[4]?.message).toMatch(
      /^context\.api\.getBreadcrumb failed: a reply of \d+ bytes would bring this execution past 100000 bytes received \(toolApiMaxJobBytes\)$/,
    );
  });

  it('runs at most toolApiMaxConcurrent calls at once; the others wait their turn and succeed', async () => {
    const { id } = await client.createBreadcrumb({ title: 'shared', tags: [], context: {} });
    let inFlight = 0;
    let most = 0;
    // a typed-boundary decorator over the real client, counting concurrent store reads
    const counting: StoreClient = {
      ...client,
      async getBreadcrumbFull(target, opts) {
        inFlight++;
        most = Math.max(most, inFlight);
        try {
          await new Promise((resolve) => setImmediate(resolve));
          return await client.getBreadcrumbFull(target, opts);
        } finally {
          inFlight--;
        }
      },
    };
    const result = await run(
      `export async function execute(input, context) {
      const all = await Promise.all(Array.from({ length: 30 }, () => context.api.getBreadcrumb(input.id)));
      return all.map((r) => r.id);
    }`,
      { id },
      { api: 'read', client: counting, config: { toolApiMaxConcurrent: 2 } },
    );
    expect(result).toMatchObject({ ok: true, output: Array(30).fill(id) });
    expect(most).toBe(2);
  });

  it('a store outage during a search is an error, never fewer results', async () => {
    const tag = `outage-${Date.now()}`;
    for (let i = 0; i < 3; i++) await client.createBreadcrumb({ title: `o ${i}`, tags: [tag], context: {} });
    let reads = 0;
    const flaky: StoreClient = {
      ...client,
      async getBreadcrumbFull(target, opts) {
        if (++reads === 2)
          throw new StoreError({
            status: 503,
            storeCode: 'unavailable',
            code: ErrorCode.DependencyUnavailable,
            message: 'store GET /breadcrumbs/x/full answered 503',
          });
        return client.getBreadcrumbFull(target, opts);
      },
    };
    const [search] = await calls([['searchBreadcrumbs', { tag, limit: 3 }]], { api: 'read', client: flaky });
    expect(search).toEqual({
      code: 'dependency.unavailable',
      message: 'context.api.searchBreadcrumbs failed: store GET /breadcrumbs/x/full answered 503',
    });
  });
});
