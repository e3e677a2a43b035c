// MCP over Streamable HTTP at `/mcp` on the admin port of a real `tools-runner start` (embedded
// store, real Deno tools), driven by the SDK's own Client: list, success, input.invalid, timeout,
// progress, cancellation, list_changed, the bearer token and the Origin check; and `export --format
// mcp` prints exactly what tools/list serves.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNotFound, SCHEMA, type StoreClient } from '../../src/breadcrumbs/index.js';
import {
  cleanupAll,
  client as storeClient,
  putTool,
  runCli,
  startRunnerWithStore,
  tempDir,
  toolContext,
  responsesByRid,
  WS,
  type CliProcess,
} from '../e2e/harness.js';

const TOKEN = 'test-admin-token-0123456789';
let url: string;
let admin: string;
let runner: CliProcess;
let store: StoreClient;
const clients: Client[] = [];

async function connect(name = 'http-test'): Promise<Client> {
  const mcp = new Client({ name, version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${admin}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  clients.push(mcp);
  return mcp;
}

/** Resolves once the runner's published catalog lists `name` (tools/list reads the published catalog). */
async function published(mcp: Client, name: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await mcp.listTools()).tools.some((t) => t.name === name)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${name} never appeared in tools/list`);
}

beforeAll(async () => {
  // A host tool whose name MCP does not allow (the dot): exported as host_echo, called by its real name.
  const manifest = join(tempDir(), 'tools.json');
  const bin = fileURLToPath(new URL('../fixtures/host-tools/bin/echo-json', import.meta.url));
  writeFileSync(
    manifest,
    JSON.stringify({
      tools: [
        {
          name: 'host.echo',
          description: 'echoes its arguments',
          schema: { type: 'object', properties: { a: { type: 'number' } } },
          command: [bin],
        },
      ],
    }),
  );
  ({ url, runner } = await startRunnerWithStore(
    [
      '--admin-port',
      '0',
      '--admin-token',
      TOKEN,
      '--mcp-progress-ms',
      '200',
      '--concurrency',
      '1',
      '--manifests',
      manifest,
      '--granted-capabilities',
      'exec',
      '--audit-dir',
      join(tempDir(), 'audit'),
    ],
    { TOOLS_RUNNER_LOG_LEVEL: 'info' },
  ));
  const line = runner.stderr
    .join('')
    .split('\n')
    .find((l) => l.includes('"msg":"admin port listening"'));
  admin = (JSON.parse(line as string) as { url: string }).url;
  store = storeClient(url);
  await putTool(
    store,
    toolContext('mcp-echo', 'export async function execute(input) { return { got: input }; }', {
      input_schema: {
        type: 'object',
        properties: { n: { type: 'number', description: 'a number' } },
        required: ['n'],
        additionalProperties: false,
      },
      output_schema: { type: 'object', properties: { got: { type: 'object' } }, required: ['got'] },
      examples: [{ description: 'example', input: { n: 1 } }],
    }),
  );
  await putTool(
    store,
    toolContext('spin', 'export async function execute() { for (;;) {} }', {
      limits: { timeout_ms: 300, memory_mb: 64 },
    }),
  );
  await putTool(
    store,
    toolContext(
      'nap',
      'export async function execute(input) { await new Promise((r) => setTimeout(r, input.ms)); return { slept: input.ms }; }',
      {
        input_schema: {
          type: 'object',
          properties: { ms: { type: 'number', description: 'sleep' } },
          required: ['ms'],
        },
        limits: { timeout_ms: 20_000, memory_mb: 64 },
        examples: [{ description: 'example', input: { ms: 1 } }],
      },
    ),
  );
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await cleanupAll();
});

describe('MCP over Streamable HTTP', () => {
  it('lists the catalog with mangled names, schemas and all four hints', async () => {
    const mcp = await connect();
    await published(mcp, 'nap');
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(['host_echo', 'mcp-echo', 'nap', 'spin']);
    expect(tools[0]).toMatchObject({
      name: 'host_echo',
      title: 'host.echo',
      inputSchema: { type: 'object', properties: { a: { type: 'number' } } },
    });
    expect(tools[1]).toEqual({
      name: 'mcp-echo',
      title: 'mcp-echo',
      description: 'e2e tool mcp-echo',
      inputSchema: {
        type: 'object',
        properties: { n: { type: 'number', description: 'a number' } },
        required: ['n'],
        additionalProperties: false,
      },
      outputSchema: { type: 'object', properties: { got: { type: 'object' } }, required: ['got'] },
      annotations: {
        title: 'mcp-echo',
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
      _meta: {
        'tools-runner/name': 'mcp-echo',
        'tools-runner/version': '1.0.0',
        'tools-runner/kind': 'code',
        'tools-runner/sideEffect': 'unknown',
      },
    });
  });

  it('calls a tool: one tool.request.v1 tagged agent:mcp:<client>, answered as structuredContent + text', async () => {
    const mcp = await connect('Claude Desktop');
    await published(mcp, 'mcp-echo');
    const result = await mcp.callTool({ name: 'mcp-echo', arguments: { n: 1 } });
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toEqual({ got: { n: 1 } });
    expect(result.content).toEqual([{ type: 'text', text: '{"got":{"n":1}}' }]);
    const meta = result._meta as Record<string, string>;
    const request = await store.getBreadcrumbFull(meta['tools-runner/request_breadcrumb_id'] as string);
    expect(request.schema_name).toBe(SCHEMA.ToolRequest);
    expect(request.tags).toEqual(['tool:request', WS, 'agent:mcp:Claude_Desktop']);
    expect(request.context).toEqual({
      tool: 'mcp-echo',
      input: { n: 1 },
      requestId: meta['tools-runner/request_id'],
      requestedBy: 'mcp:Claude_Desktop',
    });
    const response = await store.getBreadcrumbFull(meta['tools-runner/response_breadcrumb_id'] as string);
    expect(response.tags).toContain(`request:${meta['tools-runner/request_id']}`);
  });

  it('_meta "tools-runner/isolation": "process" demands a fresh process (context.isolation); any other value is -32602 naming it', async () => {
    const mcp = await connect();
    await published(mcp, 'mcp-echo');
    const result = await mcp.callTool({
      name: 'mcp-echo',
      arguments: { n: 2 },
      _meta: { 'tools-runner/isolation': 'process' },
    });
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toEqual({ got: { n: 2 } });
    const meta = result._meta as Record<string, string>;
    const request = await store.getBreadcrumbFull(meta['tools-runner/request_breadcrumb_id'] as string);
    expect(request.context).toMatchObject({ tool: 'mcp-echo', input: { n: 2 }, isolation: 'process' });
    const response = await store.getBreadcrumbFull(meta['tools-runner/response_breadcrumb_id'] as string);
    expect((response.context['metadata'] as Record<string, unknown>)['isolation']).toBe('process');
    const error = await mcp
      .callTool({ name: 'mcp-echo', arguments: { n: 3 }, _meta: { 'tools-runner/isolation': 'warm' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: -32602 });
    expect((error as Error).message).toContain(
      '_meta["tools-runner/isolation"] must be "process" (a fresh sandbox process for the call; omit it for the runner\'s default), got "warm"',
    );
  });

  it('a mangled name reaches the tool by its real name', async () => {
    const mcp = await connect();
    const result = await mcp.callTool({ name: 'host_echo', arguments: { a: 2 } });
    expect(result.structuredContent).toEqual({ a: 2 });
    const meta = result._meta as Record<string, string>;
    expect((await store.getBreadcrumbFull(meta['tools-runner/request_breadcrumb_id'] as string)).context['tool']).toBe(
      'host.echo',
    );
  });

  it("an agent tool whose name mangles to a host tool's MCP name is the one left out, and its owner reads why", async () => {
    const mcp = await connect();
    const id = await putTool(
      store,
      toolContext('host_echo', 'export async function execute() { return { stolen: true }; }'),
    );
    const reason = `the name "host_echo" exports to MCP and RAP as "host_echo", the name of the operator's host tool "host.echo"; clients could not tell them apart, so this tool is not runnable: choose another name`;
    // The published catalog (what the owner reads) names the reason...
    for (let i = 0; ; i++) {
      const [catalog] = await store.listBreadcrumbs({
        schema_name: SCHEMA.ToolCatalog,
        tag: WS,
        include_context: true,
        limit: 1,
      });
      const rejected = (catalog?.context?.['rejectedTools'] ?? []) as Array<{ id: string; reason: string }>;
      if (rejected.some((r) => r.id === id && r.reason === `/name: ${reason}`)) break;
      if (i > 300) throw new Error('host_echo never appeared in rejectedTools');
      await new Promise((r) => setTimeout(r, 50));
    }
    // ...and the host tool keeps its MCP name.
    const listed = (await mcp.listTools()).tools.filter((t) => t.name === 'host_echo');
    expect(listed.map((t) => t.title)).toEqual(['host.echo']);
    const result = await mcp.callTool({ name: 'host_echo', arguments: { a: 3 } });
    expect(result.structuredContent).toEqual({ a: 3 });
    await store.deleteBreadcrumb(id);
  });

  it("input.invalid comes back as isError with the code and the runner's message", async () => {
    const mcp = await connect();
    await published(mcp, 'mcp-echo');
    const result = await mcp.callTool({ name: 'mcp-echo', arguments: { n: 'x' } });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(result.content).toEqual([
      { type: 'text', text: 'input.invalid: input does not match the input_schema of "mcp-echo": /n: must be number' },
    ]);
    expect((result._meta as Record<string, unknown>)['tools-runner/error']).toMatchObject({
      code: 'input.invalid',
      retryable: false,
    });
  });

  it('a tool that runs past its timeout is isError timeout (no permission, so no effect possible: plain timeout)', async () => {
    const mcp = await connect();
    await published(mcp, 'spin');
    const result = await mcp.callTool({ name: 'spin', arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'timeout: tool "spin" timed out after 300 ms and was killed' }],
    });
  });

  it('sends progress notifications while a call runs, when the client sent a progress token', async () => {
    const mcp = await connect();
    await published(mcp, 'nap');
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = await mcp.callTool({ name: 'nap', arguments: { ms: 1500 } }, undefined, {
      onprogress: (p) => progress.push(p),
      resetTimeoutOnProgress: true,
    });
    expect(result.structuredContent).toEqual({ slept: 1500 });
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]).toMatchObject({
      progress: 1,
      message: expect.stringMatching(/^nap: running for \d+(\.\d)? s$/),
    });
  });

  // Cancelling deletes the request breadcrumb; the runner withdraws a deleted request: a queued job is
  // dropped, a running one aborted (its Deno process killed), and neither is answered.
  it('cancellation withdraws the request: the queued call never runs, the running one is stopped, neither is answered', async () => {
    const mcp = await connect('canceller');
    await published(mcp, 'nap');
    // --concurrency 1: the first call runs, the second waits in the runner's queue.
    const running = new AbortController();
    const queued = new AbortController();
    const first = mcp
      .callTool({ name: 'nap', arguments: { ms: 1500 } }, undefined, { signal: running.signal })
      .catch((e: unknown) => e);
    // (400 ms, not 1: once the first call's slot frees, the queued call may start before the client's
    // second cancellation arrives; it must still be running then, or it is answered and never withdrawn)
    const second = mcp
      .callTool({ name: 'nap', arguments: { ms: 400 } }, undefined, { signal: queued.signal })
      .catch((e: unknown) => e);
    let requests: Array<{ id: string; context?: Record<string, unknown> }> = [];
    while (requests.length < 2) {
      requests = (
        await store.listBreadcrumbs({
          schema_name: SCHEMA.ToolRequest,
          tag: 'agent:mcp:canceller',
          include_context: true,
        })
      ).map((r) => ({ id: r.id, context: r.context }));
    }
    running.abort();
    queued.abort();
    for (const outcome of [await first, await second]) {
      expect(outcome).toBeInstanceOf(McpError);
      expect((outcome as Error).message).toBe('MCP error -32001: AbortError: This operation was aborted');
    }
    for (const request of requests) {
      let gone = false;
      for (let i = 0; i < 200 && !gone; i++) {
        gone = await store.getBreadcrumbFull(request.id).then(
          () => false,
          (e: unknown) => isNotFound(e),
        );
        if (!gone) await new Promise((r) => setTimeout(r, 25));
      }
      expect(gone).toBe(true);
    }
    // The service keeps serving, and a later call (run after the aborted nap would have ended) finds
    // no answer to either withdrawn request.
    const after = await mcp.callTool({ name: 'nap', arguments: { ms: 1600 } });
    expect(after.structuredContent).toEqual({ slept: 1600 });
    const rids = requests.map((r) => String(r.context?.['requestId']));
    const responses = await responsesByRid(store);
    for (const rid of rids) expect(responses.get(rid)).toBeUndefined();
  });

  it('sends notifications/tools/list_changed after a tool is created', async () => {
    const mcp = await connect();
    await published(mcp, 'nap');
    const changed = new Promise<void>((resolve) =>
      mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    await putTool(store, toolContext('fresh', 'export async function execute() { return { fresh: true }; }'));
    await changed;
    expect((await mcp.listTools()).tools.map((t) => t.name)).toContain('fresh');
    expect((await mcp.callTool({ name: 'fresh', arguments: {} })).structuredContent).toEqual({ fresh: true });
  });

  it('export --format mcp prints exactly what tools/list serves', async () => {
    const mcp = await connect();
    const listed = (await mcp.listTools()).tools;
    const cli = runCli(['export', '--format', 'mcp', '--store-url', url]);
    expect(await cli.exited).toBe(0);
    expect(JSON.parse(cli.stdout.join('\n')).tools).toEqual(listed);
  });

  it('requires the bearer token, and refuses browser requests from another origin', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const none = await fetch(`${admin}/mcp`, { method: 'POST', headers, body: JSON.stringify(init) });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="tools-runner"');
    // The admin port's guard answers first, in MCP's JSON-RPC error format.
    expect(await none.json()).toEqual({
      jsonrpc: '2.0',
      error: {
        code: -32001,
        message: 'the admin port requires the admin token (Authorization: Bearer <token>, or log in at /)',
      },
      id: null,
    });
    for (const [wrong, message] of [
      ['Bearer nope', 'the bearer token is not the admin token'],
      [`Bearer ${TOKEN}x`, 'the bearer token is not the admin token'],
      [`bearer ${TOKEN}`, 'malformed Authorization header; expected "Bearer <admin token>"'],
      [TOKEN, 'malformed Authorization header; expected "Bearer <admin token>"'],
    ]) {
      const reply = await fetch(`${admin}/mcp`, {
        method: 'POST',
        headers: { ...headers, authorization: wrong as string },
        body: JSON.stringify(init),
      });
      expect(reply.status).toBe(401);
      expect(((await reply.json()) as { error: { message: string } }).error.message).toBe(message);
    }
    const foreign = await fetch(`${admin}/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${TOKEN}`, origin: 'https://evil.example' },
      body: JSON.stringify(init),
    });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { message: string } }).error.message).toBe(
      `Origin "https://evil.example" is not this admin port's origin (http://${new URL(admin).host}); cross-site requests are refused`,
    );
    const stale = await fetch(`${admin}/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${TOKEN}`, 'mcp-session-id': 'gone' },
      body: JSON.stringify(init),
    });
    expect(stale.status).toBe(404);
    // The endpoint keeps serving.
    const mcp = await connect();
    expect((await mcp.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('answers server/discover without a session (revision 2026-07-28 clients), and an unknown tool is a -32602 protocol error', async () => {
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${TOKEN}`,
    };
    const reply = await fetch(`${admin}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 'd1', method: 'server/discover', params: {} }),
    });
    expect(reply.status).toBe(200);
    const body = (await reply.json()) as {
      id: string;
      result: { supportedVersions: string[]; capabilities: unknown; _meta: Record<string, unknown> };
    };
    expect(body.id).toBe('d1');
    expect(body.result.supportedVersions).toContain('2025-11-25');
    expect(body.result.capabilities).toEqual({ tools: { listChanged: true } });
    expect(body.result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'tools-runner' });
    // Still behind the gate: no token, no answer.
    const { authorization: _, ...anonymous } = headers;
    expect(
      (
        await fetch(`${admin}/mcp`, {
          method: 'POST',
          headers: anonymous,
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'server/discover' }),
        })
      ).status,
    ).toBe(401);
    const notJson = await fetch(`${admin}/mcp`, { method: 'POST', headers, body: '{"jsonrpc":' });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: { code: number } }).error.code).toBe(-32700);

    const mcp = await connect();
    const error = await mcp.callTool({ name: 'no-such-tool', arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(error).toMatchObject({ code: -32602 });
    expect((error as Error).message).toContain('Unknown tool: "no-such-tool"');
  });
});
