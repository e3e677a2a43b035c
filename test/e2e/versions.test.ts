// Coexisting tool versions end to end (real runner process, embedded store, Deno): two versions of
// one tool called side by side, pinned by exact version and by range; a new major from the owner
// coexists while a minor replaces; another agent cannot publish a version of the name; a removed
// version answers tool.not_found naming its replacement; a deprecated one answers with
// metadata.warnings; tool.catalog.v1 lists the versions.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import {
  SCHEMA,
  TAG,
  ToolCreateResponseContext,
  type CatalogEntry,
  type ToolCreateResponseContext as CreateResponse,
} from '../../src/breadcrumbs/messages.js';
import { silentLogger } from '../../src/logger.js';
import {
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  startRunnerWithStore,
  toolContext,
  waitForResponses,
  WS,
} from './harness.js';

let url: string;
let c: StoreClient;
const opened: StoreClient[] = [];

function agent(agentId: string): StoreClient {
  const a = createStoreClient({
    baseUrl: url,
    logger: silentLogger(),
    auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: agentId } },
  });
  opened.push(a);
  return a;
}

async function create(
  as: StoreClient,
  spec: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<CreateResponse> {
  const rid = crypto.randomUUID();
  await as.createBreadcrumb({
    title: 'create',
    schema_name: SCHEMA.ToolCreateRequest,
    tags: [TAG.Request, WS],
    context: { request_id: rid, tool_spec: spec, ...extra },
  });
  for (let i = 0; i < 300; i++) {
    const items = await as.listBreadcrumbs({
      schema_name: SCHEMA.ToolCreateResponse,
      tag: TAG.request(rid),
      include_context: true,
    });
    if (items[0]) return ToolCreateResponseContext.parse(items[0].context);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no tool.create.response.v1 for ${rid}`);
}

/** A tool spec multiplying `n` by `factor` (its example checks it). */
function multiplier(version: string, factor: number): Record<string, unknown> {
  return {
    name: 'scale',
    version,
    description: `multiplies n by ${factor}`,
    code: {
      language: 'typescript',
      source: `export async function execute(input) { return { out: input.n * ${factor} }; }`,
    },
    input_schema: { type: 'object', properties: { n: { type: 'number', description: 'the number' } }, required: ['n'] },
    output_schema: {
      type: 'object',
      properties: { out: { type: 'number', description: 'the product' } },
      required: ['out'],
    },
    permissions: { net: false },
    examples: [{ description: 'two', input: { n: 2 }, output: { out: 2 * factor }, match: 'exact' }],
  };
}

/** The entry of `name` in the runner's published tool.catalog.v1, once `ready` accepts it. */
async function catalogEntry(name: string, ready: (entry: CatalogEntry) => boolean): Promise<CatalogEntry> {
  let last: CatalogEntry | undefined;
  for (let i = 0; i < 300; i++) {
    const items = await c.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, tag: WS, include_context: true });
    const tools = (items.find((item) => item.tags.includes(TAG.Catalog))?.context?.['tools'] ?? []) as CatalogEntry[];
    last = tools.find((t) => t.name === name);
    if (last && ready(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`catalog entry of ${name} never became ready; last: ${JSON.stringify(last)}`);
}

beforeAll(async () => {
  ({ url } = await startRunnerWithStore());
  c = client(url);
});

afterAll(async () => {
  for (const a of opened.splice(0)) a.close();
  await cleanupAll();
});

describe('tool versions', () => {
  it('runs two versions of one tool side by side: a new major coexists, a minor replaces, ranges pin', async () => {
    const owner = agent('owner-1');
    const v1 = await create(owner, multiplier('1.0.0', 2));
    expect(v1.status, JSON.stringify(v1.errors)).toBe('created');
    // A new major without replaces_version: a new record beside version 1.
    const v2 = await create(owner, multiplier('2.0.0', 3));
    expect(v2.status, JSON.stringify(v2.errors)).toBe('created');
    expect(v2.tool?.id).not.toBe(v1.tool?.id);
    // A minor of major 2 replaces 2.0.0 in place.
    const v21 = await create(owner, multiplier('2.1.0', 3), { replaces_version: '2.0.0' });
    expect(v21.status, JSON.stringify(v21.errors)).toBe('updated');
    expect(v21.tool).toEqual({ id: v2.tool?.id, name: 'scale', version: '2.1.0' });
    // A minor without replaces_version is the old conflict, naming the version of its major.
    const clash = await create(owner, multiplier('1.1.0', 2));
    expect(clash.errors).toEqual([
      {
        code: 'conflict',
        path: '/tool_spec/name',
        message:
          'a tool named "scale" already exists (version 1.0.0); set replaces_version to "1.0.0" to replace it, or give tool_spec.version a new major to publish it beside the existing version(s)',
      },
    ]);
    const refused = async (spec: Record<string, unknown>, replaces: string): Promise<unknown> =>
      (await create(owner, spec, { replaces_version: replaces })).errors;
    expect(await refused(multiplier('3.0.0', 4), '2.5.0')).toEqual([
      {
        code: 'conflict',
        path: '/replaces_version',
        message: 'replaces_version is "2.5.0" but "scale" has no such version (versions: 2.1.0, 1.0.0)',
      },
    ]);
    expect(await refused(multiplier('1.2.0', 2), '2.1.0')).toEqual([
      {
        code: 'conflict',
        path: '/replaces_version',
        message:
          'version "1.2.0" is a minor/patch of major 1, so it replaces a version of that major (1.0.0), not "2.1.0"',
      },
    ]);
    expect(await refused(multiplier('1.0.0', 2), '1.0.0')).toEqual([
      {
        code: 'conflict',
        path: '/tool_spec/version',
        message: 'version "1.0.0" is the version being replaced; give the new tool a new version',
      },
    ]);
    // Only the owner publishes versions, a new major included.
    const hijack = await create(agent('mallory'), multiplier('9.0.0', 0));
    expect(hijack.errors).toEqual([
      {
        code: 'permission.denied',
        path: '/tool_spec/name',
        message:
          'tool "scale" belongs to agent:owner-1; only its owner can replace it (this request is from agent:mallory)',
      },
    ]);

    const entry = await catalogEntry('scale', (e) => e.version === '2.1.0' && e.versions?.length === 2);
    expect(entry.versions).toEqual([
      { version: '2.1.0', status: 'active' },
      { version: '1.0.0', status: 'active' },
    ]);

    const calls: Array<[string | undefined, string, number]> = [
      [undefined, '2.1.0', 15],
      ['1.0.0', '1.0.0', 10],
      ['^1', '1.0.0', 10],
      ['~2.1', '2.1.0', 15],
      ['2.x', '2.1.0', 15],
      ['^2', '2.1.0', 15],
    ];
    const rids = await Promise.all(
      calls.map(([version]) =>
        request(c, 'scale', { n: 5 }, crypto.randomUUID(), version !== undefined ? { version } : {}),
      ),
    );
    const answers = await waitForResponses(c, rids);
    calls.forEach(([version, toolVersion, out], index) => {
      const response = answers.get(rids[index] as string)?.[0];
      expect(response?.status, `version ${version}: ${JSON.stringify(response?.error)}`).toBe('success');
      expect(response?.output).toEqual({ out });
      expect(response?.metadata['tool_version']).toBe(toolVersion);
      expect(response?.metadata['warnings']).toBeUndefined();
    });

    const replaced = await answer(c, await request(c, 'scale', { n: 5 }, crypto.randomUUID(), { version: '2.0.0' }));
    expect(replaced.error).toMatchObject({
      code: 'tool.not_found',
      message: 'tool "scale" has no version 2.0.0 (versions: 2.1.0, 1.0.0)',
    });
    const bad = await answer(c, await request(c, 'scale', { n: 5 }, crypto.randomUUID(), { version: 'newest' }));
    expect(bad.error).toMatchObject({
      code: 'input.invalid',
      message: 'context.version "newest" is neither a version nor a version range (e.g. "2.1.0", "^2", "~2.1", "2.x")',
    });
  });

  it('answers a removed version with tool.not_found naming its replacement and a deprecated one with metadata.warnings', async () => {
    const source = (v: string): string => `export async function execute() { return { v: "${v}" }; }`;
    await putTool(
      c,
      toolContext('legacy', source('1.0.0'), {
        contract: {
          deprecation: {
            deprecated_at: '2020-01-01T00:00:00Z',
            removal_at: '2021-01-01T00:00:00Z',
            replacement: 'legacy@^2',
          },
        },
      }),
    );
    await putTool(
      c,
      toolContext('legacy', source('1.5.0'), {
        version: '1.5.0',
        contract: {
          side_effect: 'read-only',
          deprecation: {
            deprecated_at: '2020-01-01T00:00:00Z',
            removal_at: '2999-01-01T00:00:00Z',
            replacement: 'legacy@^2',
          },
        },
      }),
    );
    await putTool(
      c,
      toolContext('legacy', source('2.0.0'), { version: '2.0.0', contract: { side_effect: 'read-only' } }),
    );
    const entry = await catalogEntry('legacy', (e) => e.versions?.length === 2);
    expect(entry).toMatchObject({ version: '2.0.0', status: 'active', contract: { side_effect: 'read-only' } });
    expect(entry.versions).toEqual([
      { version: '2.0.0', status: 'active' },
      {
        version: '1.5.0',
        status: 'deprecated',
        deprecated_at: '2020-01-01T00:00:00Z',
        removal_at: '2999-01-01T00:00:00Z',
        replacement: 'legacy@^2',
      },
    ]);

    const removed = await answer(c, await request(c, 'legacy', {}, crypto.randomUUID(), { version: '1.0.0' }));
    expect(removed.status).toBe('error');
    expect(removed.error).toMatchObject({
      code: 'tool.not_found',
      message: 'tool legacy@1.0.0 was removed on 2021-01-01T00:00:00Z; use legacy@^2',
    });

    const deprecated = await answer(c, await request(c, 'legacy', {}, crypto.randomUUID(), { version: '~1.5' }));
    expect(deprecated.status).toBe('success');
    expect(deprecated.output).toEqual({ v: '1.5.0' });
    expect(deprecated.metadata['tool_version']).toBe('1.5.0');
    expect(deprecated.metadata['warnings']).toEqual([
      'tool legacy@1.5.0 is deprecated since 2020-01-01T00:00:00Z, removal on 2999-01-01T00:00:00Z; use legacy@^2',
    ]);

    const current = await answer(c, await request(c, 'legacy', {}));
    expect(current.output).toEqual({ v: '2.0.0' });
    expect(current.metadata['warnings']).toBeUndefined();
  });
});
