// The MCP bridge and session against the real embedded store (HTTP, SQLite in a temp dir) and the
// SDK's own Client over its in-memory transport: pagination, name collisions, list_changed, and
// answers forged by other writers of the store. No runner here: the test writes the catalog and
// plays the hostile agents (and, for the genuine answer, writes what the runner's responder writes).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRequestKeys,
  createStoreClient,
  openEventStream,
  SCHEMA,
  TAG,
  type StoreClient,
  type StoreEvent,
} from '../../src/breadcrumbs/index.js';
import { sealCatalog } from '../../src/catalog/publisher.js';
import { silentLogger } from '../../src/logger.js';
import { createMcpBridge, type McpBridge } from '../../src/mcp/bridge.js';
import { createMcpSession } from '../../src/mcp/server.js';
import { captureLogger, onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const keys = createRequestKeys(Buffer.alloc(32, 7));

function entry(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: `tool ${name}`,
    version: '1.0.0',
    kind: 'code',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object' },
    examples: [],
    status: 'active',
    ...extra,
  };
}

async function setup(
  names: string[],
  logger = silentLogger(),
): Promise<{ store: StoreClient; bridge: McpBridge; mcp: Client; catalogId: string; events: StoreEvent[] }> {
  const server = await startStore();
  onCleanup(() => server.close());
  const store = createStoreClient({ baseUrl: server.url, logger: silentLogger() });
  onCleanup(() => store.close());
  const { id: catalogId } = await store.createBreadcrumb({
    title: 'catalog',
    schema_name: SCHEMA.ToolCatalog,
    tags: [WS, TAG.Catalog],
    context: sealCatalog(keys, {
      workspace: WS,
      totalTools: names.length,
      activeTools: names.length,
      lastUpdated: new Date().toISOString(),
      tools: names.map((n) => entry(n)),
    }),
  });
  const bridge = createMcpBridge({ client: store, workspace: WS, logger, keys, callTimeoutMs: 10_000 });
  onCleanup(() => bridge.close());
  const events: StoreEvent[] = [];
  const stop = new AbortController();
  onCleanup(() => stop.abort());
  await new Promise<void>((resolve) => {
    openEventStream({
      client: store,
      signal: stop.signal,
      logger: silentLogger(),
      onConnected: () => resolve(),
      onEvent: (e) => {
        events.push(e);
        bridge.handleEvent(e);
      },
    });
  });
  const session = createMcpSession({ bridge, logger, progressMs: 1000, pageSize: 2 });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await session.connect(serverSide);
  const mcp = new Client({ name: 'bridge test', version: '1' });
  await mcp.connect(clientSide);
  onCleanup(() => mcp.close());
  return { store, bridge, mcp, catalogId, events };
}

/** Every tool name, following nextCursor. */
async function allNames(mcp: Client): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await mcp.listTools(cursor === undefined ? {} : { cursor });
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return names;
}

describe('tools/list', () => {
  it('pages with an opaque cursor and lists every tool exactly once', async () => {
    const { mcp } = await setup(['e', 'a', 'c', 'b', 'd']);
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await mcp.listTools(cursor === undefined ? {} : { cursor });
      pages.push(page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(pages).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
  });

  it('refuses a cursor it did not issue with -32602 naming it', async () => {
    const { mcp } = await setup(['a']);
    const error = await mcp.listTools({ cursor: 'not a cursor!' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({
      code: -32602,
      message: 'MCP error -32602: MCP error -32602: invalid cursor "not a cursor!": not a cursor this server issued',
    });
  });

  it('exports neither of two tools whose names collide after mangling, and logs both', async () => {
    const captured = captureLogger();
    const { mcp } = await setup(['mail.send', 'mail_send', 'get-time'], captured.logger);
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(['get-time']);
    const warnings = captured.lines.filter((l) => l.msg === 'tool not exported over MCP').map((l) => l.tool);
    expect(warnings).toEqual(['mail.send', 'mail_send']);
    const error = await mcp.callTool({ name: 'mail_send', arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({
      code: -32602,
      message:
        'MCP error -32602: MCP error -32602: Unknown tool: "mail_send" (tool names "mail.send" and "mail_send" all export as "mail_send"; none of them is exported)',
    });
  });

  it('sends notifications/tools/list_changed when the published catalog changes, and not for an equal rewrite', async () => {
    const { store, mcp, catalogId } = await setup(['a']);
    await mcp.listTools();
    let count = 0;
    const waiters: Array<{ n: number; resolve: () => void }> = [];
    mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      count++;
      for (const w of waiters.filter((w) => w.n === count)) w.resolve();
    });
    const nth = (n: number) => new Promise<void>((resolve) => waiters.push({ n, resolve }));
    const full = await store.getBreadcrumbFull(catalogId);
    // An equal rewrite (only lastUpdated differs), then two real changes: notifications arrive in
    // order, so when the second real change's arrives, a spurious one would already be counted.
    await store.updateBreadcrumb(catalogId, { context: sealCatalog(keys, { ...full.context, lastUpdated: 'later' }) });
    const first = nth(1);
    await store.updateBreadcrumb(catalogId, {
      context: sealCatalog(keys, { ...full.context, tools: [entry('a'), entry('b')] }),
    });
    await first;
    expect((await mcp.listTools()).tools.map((t) => t.name)).toEqual(['a', 'b']);
    const second = nth(2);
    await store.updateBreadcrumb(catalogId, {
      context: sealCatalog(keys, { ...full.context, tools: [entry('a'), entry('b'), entry('c')] }),
    });
    await second;
    expect(count).toBe(2);
    expect(await allNames(mcp)).toEqual(['a', 'b', 'c']);
  });
});

describe('tools/call answers', () => {
  it("ignores answers forged by other writers and returns the runner's", async () => {
    const { store, mcp, events } = await setup(['echo']);
    const pending = mcp.callTool({ name: 'echo', arguments: { n: 1 } });
    // Wait for the bridge's request, then answer as a hostile agent would, then as the runner does.
    let request: StoreEvent | undefined;
    while (!(request = events.find((e) => e.schema_name === SCHEMA.ToolRequest)))
      await new Promise((r) => setTimeout(r, 10));
    const ctx = request.context as { requestId: string; tool: string; input: unknown };
    expect(request.tags).toEqual([TAG.Request, WS, 'agent:mcp:bridge_test']);
    expect(ctx).toMatchObject({ tool: 'echo', input: { n: 1 }, requestedBy: 'mcp:bridge_test' });
    const rid = ctx.requestId;
    const answer = (output: unknown, metadata: Record<string, unknown>) => ({
      request_id: rid,
      tool: 'echo',
      status: 'success',
      output,
      execution_time_ms: 1,
      metadata,
      timestamp: new Date().toISOString(),
    });
    const id = request.breadcrumb_id as string;
    // 1: right tags, but no answer tag (anyone can write `request:<rid>`).
    await store.createBreadcrumb({
      title: 'forged',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, TAG.request(rid)],
      context: answer({ forged: 1 }, { request_breadcrumb_id: id }),
    });
    // 2: a copied answer tag of another request.
    await store.createBreadcrumb({
      title: 'forged',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, TAG.request(rid), keys.answerTag('other')],
      context: answer({ forged: 2 }, { request_breadcrumb_id: id }),
    });
    // 3: the right answer tag but another request's breadcrumb id in metadata.
    await store.createBreadcrumb({
      title: 'forged',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, TAG.request(rid), keys.answerTag(id)],
      context: answer({ forged: 3 }, { request_breadcrumb_id: 'other' }),
    });
    // 4: another workspace.
    await store.createBreadcrumb({
      title: 'forged',
      schema_name: SCHEMA.ToolResponse,
      tags: ['workspace:other', TAG.Response, TAG.request(rid), keys.answerTag(id)],
      context: answer({ forged: 4 }, { request_breadcrumb_id: id }),
    });
    await store.createBreadcrumb({
      title: 'Response: echo',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, TAG.request(rid), keys.answerTag(id)],
      context: answer({ got: 1 }, { request_breadcrumb_id: id }),
    });
    const result = await pending;
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toEqual({ got: 1 });
    expect(result.content).toEqual([{ type: 'text', text: '{"got":1}' }]);
  });

  it('ignores catalogs not sealed with the runner secret, whatever their id', async () => {
    const { store, mcp } = await setup(['real']);
    for (const context of [
      { workspace: WS, totalTools: 1, activeTools: 1, lastUpdated: 'x', tools: [entry('evil')] },
      sealCatalog(createRequestKeys(Buffer.alloc(32, 9)), {
        workspace: WS,
        totalTools: 1,
        activeTools: 1,
        lastUpdated: 'x',
        tools: [entry('evil')],
      }),
      {
        ...sealCatalog(keys, {
          workspace: WS,
          totalTools: 1,
          activeTools: 1,
          lastUpdated: 'x',
          tools: [entry('real')],
        }),
        tools: [entry('evil')],
      },
    ]) {
      await store.createBreadcrumb({
        title: 'catalog',
        schema_name: SCHEMA.ToolCatalog,
        tags: [WS, TAG.Catalog],
        context,
      });
    }
    expect((await mcp.listTools()).tools.map((t) => t.name)).toEqual(['real']);
  });

  it('a tool name that is not in the catalog is the protocol error -32602 naming it (as the specification lists it)', async () => {
    const { mcp } = await setup(['echo']);
    const error = await mcp.callTool({ name: 'nope', arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({
      code: -32602,
      message:
        'MCP error -32602: MCP error -32602: Unknown tool: "nope" (no tool named "nope" in the catalog of workspace:tools)',
    });
  });

  it('answers server/discover (revision 2026-07-28) with the versions it speaks', async () => {
    const { mcp } = await setup(['echo']);
    const result = await mcp.request({ method: 'server/discover', params: {} }, z.looseObject({}));
    expect(result).toEqual({
      resultType: 'complete',
      supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
      capabilities: { tools: { listChanged: true } },
      instructions: expect.any(String),
      ttlMs: 60_000,
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'tools-runner', version: expect.any(String) } },
    });
  });
});
