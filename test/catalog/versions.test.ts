// Coexisting versions of one tool name, against the real embedded store over HTTP: which version a
// request's `context.version` (exact or range) routes to, the default (highest non-deprecated),
// deprecation warnings, removed versions (tool.not_found naming the replacement), same-version
// duplicates, another writer's "version" of an owned name, ownership and the catalog entries.

import { describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { createCatalog, type Lookup, type OperatorTool } from '../../src/catalog/catalog.js';
import { createStamper } from '../../src/catalog/deployment.js';
import { resolveRunnerKey } from '../../src/catalog/runner-key.js';
import { defaultConfig } from '../../src/config/index.js';
import type { HostTool } from '../../src/host-tools/index.js';
import { silentLogger } from '../../src/logger.js';
import { catalogChangeOf } from '../../src/request/events.js';
import { routeRequest } from '../../src/request/route.js';
import { createSchemaValidator, validateToolDefinition } from '../../src/screen/index.js';

const validator = createSchemaValidator();
import { onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const config = defaultConfig();
const stamper = createStamper(
  resolveRunnerKey({ runnerSecret: 'versions-test', dataDir: ':memory:', logger: silentLogger() }).key,
);
const T0 = Date.parse('2030-01-01T00:00:00Z');

function context(name: string, version: string, contract?: Record<string, unknown>): Record<string, unknown> {
  return {
    name,
    description: `tool ${name}`,
    version,
    code: { language: 'typescript', source: `export async function execute() { return { v: "${version}" }; }` },
    input_schema: { type: 'object', properties: {} },
    output_schema: { type: 'object' },
    examples: [{ description: 'e', input: {} }],
    ...(contract ? { contract } : {}),
  };
}

async function setup(options: { pins?: Map<string, OperatorTool>; hosts?: HostTool[] } = {}) {
  const store = await startStore();
  const as = (agentId: string): StoreClient => {
    const c = createStoreClient({
      baseUrl: store.url,
      logger: silentLogger(),
      auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: agentId } },
    });
    onCleanup(() => c.close());
    return c;
  };
  const clock = { now: T0 };
  const catalog = createCatalog({
    client: as('tools-runner'),
    workspace: WS,
    logger: silentLogger(),
    stamper,
    validate: (ctx, origin) => validateToolDefinition(ctx, { origin, config, validator }),
    operatorTools: () => options.pins ?? new Map(),
    hostTools: () => options.hosts ?? [],
    now: () => clock.now,
  });
  const alice = as('alice');
  const write = async (
    c: StoreClient,
    name: string,
    version: string,
    contract?: Record<string, unknown>,
  ): Promise<string> => {
    const { id } = await c.createBreadcrumb({
      title: name,
      schema_name: SCHEMA.ToolCode,
      tags: [TAG.Tool, TAG.tool(name), WS],
      context: context(name, version, contract),
    });
    // created_at has millisecond resolution: let the clock pass it, so "oldest" is never a tie.
    const createdMs = Date.parse((await c.getBreadcrumbFull(id)).created_at as string);
    while (Date.now() <= createdMs) await new Promise((r) => setImmediate(r));
    return id;
  };
  return { as, alice, catalog, clock, write };
}

/** The version a lookup routes to, or its refusal as `code: message`. */
const outcome = (found: Lookup): string =>
  found.kind === 'route'
    ? `${found.route.version}${found.route.warnings ? ` [${found.route.warnings.join(' | ')}]` : ''}`
    : found.kind === 'refused'
      ? `${found.code}: ${found.message}`
      : 'unknown';

describe('coexisting versions', () => {
  it('routes exact versions and ranges to the highest matching version', async () => {
    const { alice, catalog, write } = await setup();
    for (const version of ['1.0.0', '1.4.2', '2.0.0', '2.1.0', '2.1.5', '3.0.0-beta.1'])
      await write(alice, 'calc', version);
    await catalog.load();
    const at = (spec?: string): string => outcome(catalog.lookup('calc', spec));
    expect(at()).toBe('2.1.5');
    expect(at('2.1.0')).toBe('2.1.0');
    expect(at('v2.1.0')).toBe('2.1.0');
    expect(at('^2')).toBe('2.1.5');
    expect(at('~2.1')).toBe('2.1.5');
    expect(at('~2.0')).toBe('2.0.0');
    expect(at('2.x')).toBe('2.1.5');
    expect(at('^1')).toBe('1.4.2');
    expect(at('>=2 <2.1')).toBe('2.0.0');
    expect(at('*')).toBe('2.1.5');
    // Prereleases match only a range that names one.
    expect(at('^3.0.0-beta')).toBe('3.0.0-beta.1');
    expect(at('3.0.0-beta.1')).toBe('3.0.0-beta.1');
    expect(at('^3')).toBe(
      'tool.not_found: tool "calc" has no version matching "^3" (versions: 3.0.0-beta.1, 2.1.5, 2.1.0, 2.0.0, 1.4.2, 1.0.0)',
    );
    expect(at('2.2.0')).toBe(
      'tool.not_found: tool "calc" has no version 2.2.0 (versions: 3.0.0-beta.1, 2.1.5, 2.1.0, 2.0.0, 1.4.2, 1.0.0)',
    );
    for (const bad of ['latest', '^^2', '2.1.0.0', 'x.y.z', '>=']) {
      expect(at(bad)).toBe(
        `input.invalid: context.version ${JSON.stringify(bad)} is neither a version nor a version range (e.g. "2.1.0", "^2", "~2.1", "2.x")`,
      );
    }
    expect(catalog.lookup('nothing', '^1')).toEqual({ kind: 'unknown' });
    const route = catalog.resolve('calc', '^1');
    expect(route?.kind === 'code' && route.tool.source).toContain('"1.4.2"');
  });

  it('defaults to the highest non-deprecated version, and warns on a deprecated one', async () => {
    const { alice, catalog, clock, write } = await setup();
    const deprecation = { deprecated_at: '2030-02-01T00:00:00Z', replacement: 'calc@^3' };
    await write(alice, 'calc', '1.0.0');
    await write(alice, 'calc', '2.0.0', { deprecation });
    await catalog.load();
    expect(outcome(catalog.lookup('calc'))).toBe('2.0.0'); // not deprecated yet
    clock.now = Date.parse('2030-02-01T00:00:00Z'); // deprecated_at <= now
    expect(outcome(catalog.lookup('calc'))).toBe('1.0.0');
    expect(outcome(catalog.lookup('calc', '^2'))).toBe(
      '2.0.0 [tool calc@2.0.0 is deprecated since 2030-02-01T00:00:00Z; use calc@^3]',
    );
    expect(outcome(catalog.lookup('calc', '*'))).toBe(
      '2.0.0 [tool calc@2.0.0 is deprecated since 2030-02-01T00:00:00Z; use calc@^3]',
    );
    expect(outcome(catalog.lookup('calc', '1.0.0'))).toBe('1.0.0');
  });

  it('when every version is deprecated, defaults to the highest (with its warning)', async () => {
    const { alice, catalog, write } = await setup();
    await write(alice, 'old', '1.0.0', { deprecation: { deprecated_at: '2020-01-01T00:00:00Z' } });
    await write(alice, 'old', '1.1.0', {
      deprecation: { deprecated_at: '2020-01-01T00:00:00Z', removal_at: '2031-01-01T00:00:00Z', replacement: 'new' },
    });
    await catalog.load();
    expect(outcome(catalog.lookup('old'))).toBe(
      '1.1.0 [tool old@1.1.0 is deprecated since 2020-01-01T00:00:00Z, removal on 2031-01-01T00:00:00Z; use new]',
    );
    expect(outcome(catalog.lookup('old', '1.0.0'))).toBe(
      '1.0.0 [tool old@1.0.0 is deprecated since 2020-01-01T00:00:00Z]',
    );
  });

  it('does not route a removed version: tool.not_found names the replacement', async () => {
    const { alice, catalog, clock, write } = await setup();
    await write(alice, 'conv', '1.0.0', {
      deprecation: { deprecated_at: '2029-01-01T00:00:00Z', removal_at: '2030-06-01T00:00:00Z', replacement: 'conv@2' },
    });
    await write(alice, 'conv', '2.0.0');
    await write(alice, 'gone', '1.0.0', { deprecation: { removal_at: '2030-06-01T00:00:00Z' } });
    await catalog.load();
    expect(outcome(catalog.lookup('conv', '1.0.0'))).toBe(
      '1.0.0 [tool conv@1.0.0 is deprecated since 2029-01-01T00:00:00Z, removal on 2030-06-01T00:00:00Z; use conv@2]',
    );
    expect(outcome(catalog.lookup('gone'))).toBe('1.0.0');
    clock.now = Date.parse('2030-06-01T00:00:00Z');
    const removed = 'tool.not_found: tool conv@1.0.0 was removed on 2030-06-01T00:00:00Z; use conv@2';
    expect(outcome(catalog.lookup('conv', '1.0.0'))).toBe(removed);
    expect(outcome(catalog.lookup('conv', '^1'))).toBe(removed);
    expect(outcome(catalog.lookup('conv', '*'))).toBe('2.0.0');
    expect(outcome(catalog.lookup('conv'))).toBe('2.0.0');
    expect(outcome(catalog.lookup('conv', '^3'))).toBe(
      'tool.not_found: tool "conv" has no version matching "^3" (versions: 2.0.0)',
    );
    // Only a removed version left: the default finds nothing runnable.
    expect(outcome(catalog.lookup('gone'))).toBe(
      'tool.not_found: tool gone@1.0.0 was removed on 2030-06-01T00:00:00Z; its contract names no replacement',
    );
    expect(catalog.entries().map((e) => e.name)).toEqual(['conv']);
    // Through the request path: the same answers as results.
    expect(await routeRequest(catalog, 'conv', '1.0.0')).toMatchObject({
      ok: false,
      result: { ok: false, error: { code: 'tool.not_found', message: removed.slice('tool.not_found: '.length) } },
    });
    expect(await routeRequest(catalog, 'conv', 'one')).toMatchObject({
      ok: false,
      result: {
        ok: false,
        error: {
          code: 'input.invalid',
          message: 'context.version "one" is neither a version nor a version range (e.g. "2.1.0", "^2", "~2.1", "2.x")',
        },
      },
    });
    const routed = await routeRequest(catalog, 'conv', '^2');
    expect(routed.ok && routed.route.version).toBe('2.0.0');
  });

  it("keeps a same-version copy shadowed and another writer's version of an owned name rejected", async () => {
    const { as, alice, catalog, write } = await setup();
    const v1 = await write(alice, 'calc', '1.0.0');
    const copy = await write(alice, 'calc', '1.0.0+build.2');
    const v2 = await write(alice, 'calc', '2.0.0');
    const mallory = as('mallory');
    const hijack = await write(mallory, 'calc', '9.0.0');
    const hijackPatch = await write(mallory, 'calc', '2.0.1');
    await catalog.load();
    expect(outcome(catalog.lookup('calc'))).toBe('2.0.0');
    expect(outcome(catalog.lookup('calc', '9.0.0'))).toBe(
      'tool.not_found: tool "calc" has no version 9.0.0 (versions: 2.0.0, 1.0.0)',
    );
    expect(outcome(catalog.lookup('calc', '^2'))).toBe('2.0.0');
    expect(catalog.resolve('calc', '1.0.0')).toMatchObject({ kind: 'code', breadcrumbId: v1, owner: 'agent:alice' });
    const reasons = Object.fromEntries(catalog.rejected().map((r) => [r.id, r.errors]));
    expect(reasons[copy]).toEqual([
      {
        code: 'trust.shadowed',
        path: '/name',
        message: `an older definition of "calc" version 1.0.0+build.2 (${v1}) by the same owner wins; publish a new version instead of a copy`,
      },
    ]);
    for (const id of [hijack, hijackPatch]) {
      expect(reasons[id]).toEqual([
        {
          code: 'trust.owner',
          path: '/name',
          message: 'the name "calc" belongs to agent:alice; this definition, by agent:mallory, is not runnable',
        },
      ]);
    }
    expect(catalog.ownership('calc')).toEqual({
      kind: 'owned',
      owner: 'agent:alice',
      version: '2.0.0',
      id: v2,
      versions: [
        { version: '2.0.0', id: v2 },
        { version: '1.0.0', id: v1 },
      ],
    });
    // The owner's copy is shadowed only while the original lives.
    await alice.deleteBreadcrumb(v1);
    await catalog.applyChange({ kind: 'deleted', id: v1 });
    expect(catalog.resolve('calc', '1.0.0')).toMatchObject({ breadcrumbId: copy, version: '1.0.0+build.2' });
  });

  it('follows an in-place update of one version (the old version is gone, the others stay)', async () => {
    const { alice, catalog, write } = await setup();
    const v1 = await write(alice, 'calc', '1.0.0');
    const v2 = await write(alice, 'calc', '2.0.0');
    await catalog.load();
    // A changed record is untrusted (no stamp): the owner's version 1 stops routing, version 2 runs on.
    await alice.updateBreadcrumb(v1, { context: context('calc', '1.1.0') });
    await catalog.applyChange({ kind: 'changed', id: v1, version: 2 });
    expect(outcome(catalog.lookup('calc', '^1'))).toBe(
      'tool.not_found: tool "calc" has no version matching "^1" (versions: 2.0.0)',
    );
    expect(outcome(catalog.lookup('calc'))).toBe('2.0.0');
    // Ownership still names the tampered record, so the owner can replace it through the create flow.
    expect(catalog.ownership('calc')).toMatchObject({
      version: '2.0.0',
      id: v2,
      versions: [
        { version: '2.0.0', id: v2 },
        { version: '1.0.0', id: v1 },
      ],
    });
    // A stale event (older store version) changes nothing.
    await catalog.applyChange({ kind: 'changed', id: v2, version: 1 });
    expect(outcome(catalog.lookup('calc'))).toBe('2.0.0');
  });

  it('lists every runnable version in the catalog entries, with the default version and its contract', async () => {
    const { alice, catalog, clock, write } = await setup();
    const deprecation = {
      deprecated_at: '2029-01-01T00:00:00Z',
      removal_at: '2031-01-01T00:00:00Z',
      replacement: 'calc@2',
    };
    await write(alice, 'calc', '1.0.0', { side_effect: 'read-only', deprecation });
    await write(alice, 'calc', '2.0.0', { side_effect: 'read-only', idempotent: true });
    await write(alice, 'calc', '0.9.0', { deprecation: { removal_at: '2030-01-01T00:00:00Z' } });
    await catalog.load();
    const [entry] = catalog.entries();
    expect(entry).toMatchObject({
      name: 'calc',
      version: '2.0.0',
      kind: 'code',
      status: 'active',
      contract: { side_effect: 'read-only', idempotent: true },
    });
    expect(entry?.versions).toEqual([
      { version: '2.0.0', status: 'active' },
      { version: '1.0.0', status: 'deprecated', ...deprecation },
    ]);
    clock.now = Date.parse('2031-01-01T00:00:00Z');
    expect(catalog.entries()[0]?.versions).toEqual([{ version: '2.0.0', status: 'active' }]);
  });

  it('gives pinned operator tools and host tools one version each', async () => {
    const pinned = validateToolDefinition(
      context('echo', '1.2.0', { deprecation: { deprecated_at: '2020-01-01T00:00:00Z', replacement: 'echo2' } }),
      { origin: 'bootstrap', config, validator },
    );
    if (!pinned.ok) throw new Error('fixture invalid');
    const pins = new Map<string, OperatorTool>([
      ['echo', { tool: pinned.tool, context: context('echo', '1.2.0'), file: 'echo.json' }],
    ]);
    const host = {
      name: 'host-tool',
      manifestDigest: '0123456789abcdef',
      inputSchema: null,
      resultSchema: null,
      description: 'h',
      transport: {},
      secrets: [],
      observabilityTags: [],
    } as unknown as HostTool;
    const { alice, catalog, write } = await setup({ pins, hosts: [host] });
    await write(alice, 'echo', '2.0.0');
    await catalog.load();
    expect(outcome(catalog.lookup('echo'))).toBe(
      '1.2.0 [tool echo@1.2.0 is deprecated since 2020-01-01T00:00:00Z; use echo2]',
    );
    expect(outcome(catalog.lookup('echo', '2.0.0'))).toBe(
      'tool.not_found: tool "echo" has no version 2.0.0 (versions: 1.2.0)',
    );
    expect(outcome(catalog.lookup('echo', '^1'))).toMatch(/^1\.2\.0 /);
    expect(outcome(catalog.lookup('host-tool'))).toBe('0123456789ab');
    expect(outcome(catalog.lookup('host-tool', '0123456789ab'))).toBe('0123456789ab');
    expect(outcome(catalog.lookup('host-tool', '^1'))).toBe(
      'tool.not_found: host tool "host-tool" has one version (0123456789ab); context.version "^1" does not match it',
    );
    expect(outcome(catalog.lookup('host-tool', 'newest'))).toBe(
      'input.invalid: context.version "newest" is neither a version nor a version range (e.g. "2.1.0", "^2", "~2.1", "2.x")',
    );
    const byName = Object.fromEntries(catalog.entries().map((e) => [e.name, e]));
    expect(byName['host-tool']).toMatchObject({
      version: '0123456789ab',
      versions: [{ version: '0123456789ab', status: 'active' }],
      contract: {},
    });
    expect(byName['echo']).toMatchObject({
      version: '1.2.0',
      status: 'deprecated',
      versions: [{ version: '1.2.0', status: 'deprecated', replacement: 'echo2' }],
    });
  });
});

describe('catalog events', () => {
  it('passes only tool.code.v1 changes of the workspace and deletions to the catalog', () => {
    const updated = {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'b1',
      schema_name: SCHEMA.ToolCode,
      tags: [WS],
      version: 3,
    };
    expect(catalogChangeOf(updated, WS)).toEqual({ kind: 'changed', id: 'b1', version: 3 });
    expect(catalogChangeOf({ ...updated, tags: undefined, version: undefined }, WS)).toEqual({
      kind: 'changed',
      id: 'b1',
    });
    expect(catalogChangeOf({ ...updated, tags: ['workspace:other'] }, WS)).toBeUndefined();
    expect(catalogChangeOf({ ...updated, schema_name: SCHEMA.ToolRequest }, WS)).toBeUndefined();
    expect(catalogChangeOf({ ...updated, type: 'breadcrumb.created' }, WS)).toBeUndefined();
    expect(catalogChangeOf({ ...updated, breadcrumb_id: undefined }, WS)).toBeUndefined();
    expect(
      catalogChangeOf({ type: 'breadcrumb.deleted', breadcrumb_id: 'b2', schema_name: SCHEMA.ToolRequest }, WS),
    ).toEqual({ kind: 'deleted', id: 'b2' });
    expect(catalogChangeOf({ type: 'breadcrumb.deleted', breadcrumb_id: 'b3' }, WS)).toEqual({
      kind: 'deleted',
      id: 'b3',
    });
    expect(catalogChangeOf({ type: 'ping' }, WS)).toBeUndefined();
  });
});
