// The catalog's ownership rules against the real embedded store over HTTP: on a fresh start the
// oldest runnable definition wins a name even when a newer one is listed first; the owner is
// remembered after its definition is deleted or tampered with; operator pins and host names are
// reserved.

import { describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { createCatalog, type OperatorTool } from '../../src/catalog/catalog.js';
import { createStamper } from '../../src/catalog/deployment.js';
import { resolveRunnerKey } from '../../src/catalog/runner-key.js';
import { defaultConfig } from '../../src/config/index.js';
import type { HostTool } from '../../src/host-tools/index.js';
import { silentLogger } from '../../src/logger.js';
import { createSchemaValidator, validateToolDefinition } from '../../src/screen/index.js';
import { onCleanup, startStore } from '../store/helpers.js';

const validator = createSchemaValidator();

const WS = 'workspace:tools';
const config = defaultConfig();
const stamper = createStamper(
  resolveRunnerKey({ runnerSecret: 'catalog-test', dataDir: ':memory:', logger: silentLogger() }).key,
);

function context(name: string, marker: string): Record<string, unknown> {
  return {
    name,
    description: `tool ${name}`,
    version: '1.0.0',
    code: { language: 'typescript', source: `export async function execute() { return { marker: "${marker}" }; }` },
    input_schema: { type: 'object', properties: {} },
    output_schema: { type: 'object' },
    examples: [{ description: 'e', input: {} }],
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
  const runner = as('tools-runner');
  const catalog = createCatalog({
    client: runner,
    workspace: WS,
    logger: silentLogger(),
    stamper,
    validate: (ctx, origin) => validateToolDefinition(ctx, { origin, config, validator }),
    operatorTools: () => options.pins ?? new Map(),
    hostTools: () => options.hosts ?? [],
  });
  const write = async (c: StoreClient, name: string, marker: string): Promise<string> =>
    (
      await c.createBreadcrumb({
        title: name,
        schema_name: SCHEMA.ToolCode,
        tags: [TAG.Tool, TAG.tool(name), WS],
        context: context(name, marker),
      })
    ).id;
  return { as, catalog, write };
}

const marker = (route: ReturnType<ReturnType<typeof createCatalog>['resolve']>): string | undefined =>
  route?.kind === 'code' ? /marker: "(\w+)"/.exec(route.tool.source)?.[1] : undefined;

describe('catalog ownership', () => {
  it('gives a name to its oldest runnable definition on a fresh start, whatever the listing order', async () => {
    const { as, catalog, write } = await setup();
    const alice = as('alice');
    const victimId = await write(alice, 'shared', 'alice');
    // created_at has millisecond resolution: let the clock pass it, so "oldest" is not a tie.
    const createdMs = Date.parse((await alice.getBreadcrumbFull(victimId)).created_at as string);
    while (Date.now() <= createdMs) await new Promise((r) => setImmediate(r));
    const attackerId = await write(as('mallory'), 'shared', 'mallory');
    await catalog.load(); // the listing is newest first: mallory's record is fetched first
    expect(marker(catalog.resolve('shared'))).toBe('alice');
    expect(catalog.ownership('shared')).toEqual({
      kind: 'owned',
      owner: 'agent:alice',
      version: '1.0.0',
      id: victimId,
      versions: [{ version: '1.0.0', id: victimId }],
    });
    expect(catalog.rejected()).toEqual([
      {
        id: attackerId,
        name: 'shared',
        errors: [
          {
            code: 'trust.owner',
            path: '/name',
            message: 'the name "shared" belongs to agent:alice; this definition, by agent:mallory, is not runnable',
          },
        ],
      },
    ]);
  });

  it('remembers the owner after its definition is deleted or tampered with', async () => {
    const { as, catalog, write } = await setup();
    const alice = as('alice');
    const mallory = as('mallory');
    const victimId = await write(alice, 'kept', 'alice');
    await catalog.load();
    await mallory.updateBreadcrumb(victimId, { context: context('kept', 'mallory') });
    await catalog.load();
    expect(catalog.resolve('kept')).toBeUndefined();
    expect(catalog.rejected()[0]?.errors[0]?.code).toBe('trust.untrusted');
    await mallory.deleteBreadcrumb(victimId);
    const attackerId = await write(mallory, 'kept', 'mallory');
    await catalog.load();
    expect(catalog.resolve('kept')).toBeUndefined();
    expect(catalog.ownership('kept')).toEqual({
      kind: 'owned',
      owner: 'agent:alice',
      version: '1.0.0',
      versions: [{ version: '1.0.0' }],
    });
    expect(catalog.rejected()).toEqual([
      {
        id: attackerId,
        name: 'kept',
        errors: [
          {
            code: 'trust.owner',
            path: '/name',
            message: 'the name "kept" belongs to agent:alice; this definition, by agent:mallory, is not runnable',
          },
        ],
      },
    ]);
    // The owner's own new definition takes the name back.
    await write(alice, 'kept', 'again');
    await catalog.load();
    expect(marker(catalog.resolve('kept'))).toBe('again');
  });

  it('reserves pinned operator names and host tool names', async () => {
    const pinnedTool = validateToolDefinition(context('calculator', 'operator'), {
      origin: 'bootstrap',
      config,
      validator,
    });
    if (!pinnedTool.ok) throw new Error('fixture invalid');
    const pins = new Map<string, OperatorTool>([
      ['calculator', { tool: pinnedTool.tool, context: context('calculator', 'operator'), file: 'calculator.json' }],
    ]);
    const host = {
      name: 'host-tool',
      manifestDigest: 'abcdef0123456789',
      transport: {},
      secrets: [],
      observabilityTags: [],
    } as unknown as HostTool;
    const { as, catalog, write } = await setup({ pins, hosts: [host] });
    const calcId = await write(as('mallory'), 'calculator', 'mallory');
    const hostId = await write(as('mallory'), 'host-tool', 'mallory');
    await catalog.load();
    expect(marker(catalog.resolve('calculator'))).toBe('operator');
    expect(catalog.resolve('host-tool')).toEqual({ kind: 'host', tool: host, version: 'abcdef012345' });
    expect(catalog.ownership('calculator')).toEqual({ kind: 'reserved', by: 'bootstrap' });
    expect(catalog.ownership('host-tool')).toEqual({ kind: 'reserved', by: 'host' });
    const reasons = Object.fromEntries(catalog.rejected().map((r) => [r.id, r.errors[0]?.message]));
    expect(reasons[calcId]).toBe(
      `the name "calculator" is reserved by the operator's bootstrap file; the runner runs only that file's definition, not this record`,
    );
    expect(reasons[hostId]).toBe(
      `the name "host-tool" is reserved by a host tool of the operator's manifests; no tool.code.v1 of that name runs`,
    );
  });

  it('keeps the exported (MCP/RAP) names of host tools: a colliding agent tool is the one left out, and says why', async () => {
    // Code tool names are already export-safe ([a-z][a-z0-9_-]), so only host tools (a manifest's or
    // a RAP server's: dots and other characters allowed) can share an exported name with them.
    const hosts: HostTool[] = [
      {
        name: 'host.echo',
        manifestDigest: 'abcdef0123456789',
        transport: {},
        secrets: [],
        observabilityTags: [],
      } as unknown as HostTool,
      {
        name: 'mail.send',
        manifestDigest: '0123456789abcdef',
        transport: {},
        secrets: [],
        observabilityTags: [],
      } as unknown as HostTool,
    ];
    const { as, catalog, write } = await setup({ hosts });
    const mailId = await write(as('mallory'), 'mail_send', 'mallory');
    const echoId = await write(as('mallory'), 'host-echo', 'fine');
    const clashId = await write(as('mallory'), 'host_echo', 'mallory');
    const unrelated = await write(as('mallory'), 'mail_read', 'mallory');
    await catalog.load();
    expect(catalog.resolve('mail_send')).toBeUndefined();
    expect(catalog.resolve('host_echo')).toBeUndefined();
    expect(marker(catalog.resolve('host-echo'))).toBe('fine');
    expect(marker(catalog.resolve('mail_read'))).toBe('mallory');
    expect(catalog.entries().map((e) => e.name)).toEqual(['host-echo', 'host.echo', 'mail_read', 'mail.send']);
    const reasons = Object.fromEntries(
      catalog.rejected().map((r) => [r.id, r.errors.map((e) => `${e.code}: ${e.message}`)]),
    );
    expect(reasons[mailId]).toEqual([
      `trust.reserved: the name "mail_send" exports to MCP and RAP as "mail_send", the name of the operator's host tool "mail.send"; clients could not tell them apart, so this tool is not runnable: choose another name`,
    ]);
    expect(reasons[clashId]).toEqual([
      `trust.reserved: the name "host_echo" exports to MCP and RAP as "host_echo", the name of the operator's host tool "host.echo"; clients could not tell them apart, so this tool is not runnable: choose another name`,
    ]);
    expect(reasons[echoId]).toBeUndefined();
    expect(reasons[unrelated]).toBeUndefined();
    // The create flow asks first, so the owner is told before anything is written.
    expect(catalog.ownership('mail_send')).toEqual({ kind: 'reserved', by: 'host', collidesWith: 'mail.send' });
    expect(catalog.ownership('host_echo')).toEqual({ kind: 'reserved', by: 'host', collidesWith: 'host.echo' });
    expect(catalog.ownership('host-echo')).toMatchObject({ kind: 'owned' });
  });

  it("a host tool that appears later (a RAP server's) takes its exported name back from an agent tool at once", async () => {
    const hosts: HostTool[] = [];
    const { as, catalog, write } = await setup({ hosts });
    await write(as('mallory'), 'late_tool', 'mallory');
    await catalog.load();
    expect(catalog.entries().map((e) => e.name)).toEqual(['late_tool']);
    hosts.push({
      name: 'late.tool',
      manifestDigest: 'abcdef0123456789',
      transport: {},
      secrets: [],
      observabilityTags: [],
    } as unknown as HostTool);
    // Before the next reindex the catalog's entries already leave the agent's tool out...
    expect(catalog.entries().map((e) => e.name)).toEqual(['late.tool']);
    // ...and after it, the tool is rejected with the reason.
    await catalog.load();
    expect(catalog.resolve('late_tool')).toBeUndefined();
    expect(catalog.rejected().map((r) => r.errors[0]?.code)).toEqual(['trust.reserved']);
  });
});
