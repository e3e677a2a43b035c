// A tool's own progress reaches an MCP client: a real `tools-runner start` (embedded store) with the
// shipped openrouter tool bootstrapped, its API key from --secrets-file and a local OpenAI-compatible
// server granted by --allow-private-hosts; the SDK's Client calls it over Streamable HTTP with a
// progress token and receives every streamed token as notifications/progress before the result.
// The runner writes them to a tool.progress.v1 record that only it can tag (progress:<MAC>).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA, type StoreClient } from '../../src/breadcrumbs/index.js';
import {
  cleanupAll,
  client as storeClient,
  runCli,
  startRunnerWithStore,
  tempDir,
  WS,
  type CliProcess,
} from '../e2e/harness.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/servers/openai-compatible.js';
import { TOOLS_DIR } from '../tools/helpers.js';

const TOKEN = 'test-admin-token-0123456789';
const KEY = 'sk-progress-test-key';
let fake: FakeOpenAi;
let admin: string;
let runner: CliProcess;
let store: StoreClient;
let mcp: Client;
let url: string;

beforeAll(async () => {
  fake = await startFakeOpenAi({ apiKey: KEY });
  const dir = join(tempDir(), 'bootstrap');
  mkdirSync(dir);
  copyFileSync(join(TOOLS_DIR, 'openrouter.json'), join(dir, 'openrouter.json'));
  const secrets = join(tempDir(), 'secrets.json');
  writeFileSync(secrets, JSON.stringify({ LLM_API_KEY: KEY }));
  ({ url, runner } = await startRunnerWithStore(
    [
      '--admin-port',
      '0',
      '--admin-token',
      TOKEN,
      '--mcp-progress-ms',
      '60000',
      '--bootstrap',
      '--bootstrap-dir',
      dir,
      '--skip-examples',
      '--secrets-file',
      secrets,
      '--allow-private-hosts',
      `openrouter=127.0.0.1:${fake.port}`,
      '--progress-interval-ms',
      '20',
    ],
    { TOOLS_RUNNER_LOG_LEVEL: 'info' },
  ));
  const line = runner.stderr
    .join('')
    .split('\n')
    .find((l) => l.includes('"msg":"admin port listening"'));
  admin = (JSON.parse(line as string) as { url: string }).url;
  store = storeClient(url);
  mcp = new Client({ name: 'progress-test', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${admin}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  for (let i = 0; i < 600 && !(await mcp.listTools()).tools.some((t) => t.name === 'openrouter'); i++)
    await new Promise((r) => setTimeout(r, 100));
}, 120_000);

afterAll(async () => {
  await mcp?.close().catch(() => undefined);
  await cleanupAll();
  await fake?.close();
});

describe('progress of a running tool over MCP', () => {
  it("streams the LLM tool's tokens as notifications/progress before the result", async () => {
    const words = Array.from({ length: 12 }, (_, i) => `w${i}`).join(' ');
    const events: Array<{ kind: 'progress'; progress: number; message?: string } | { kind: 'result' }> = [];
    const result = await mcp.callTool(
      { name: 'openrouter', arguments: { base_url: fake.baseUrl, messages: [{ role: 'user', content: words }] } },
      undefined,
      {
        onprogress: (p) =>
          void events.push({
            kind: 'progress',
            progress: p.progress,
            ...(p.message !== undefined ? { message: p.message } : {}),
          }),
        resetTimeoutOnProgress: true,
      },
    );
    events.push({ kind: 'result' });
    expect(result.isError).toBeUndefined();
    expect(result.structuredContent).toMatchObject({ content: `Echo: ${words}`, finish_reason: 'stop' });
    const progress = events.filter((e) => e.kind === 'progress');
    // every token, in order, each once, and all of them before the result
    expect(progress.map((e) => e.message).join('')).toBe(`Echo: ${words}`);
    expect(events.at(-1)).toEqual({ kind: 'result' });
    const numbers = progress.map((e) => e.progress);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);

    // the record the runner wrote: its tags and the last write's `done`
    const rid = (result._meta as Record<string, string>)['tools-runner/request_id'];
    const records = await store.listBreadcrumbs({
      schema_name: SCHEMA.ToolProgress,
      tag: `request:${rid}`,
      include_context: true,
    });
    expect(records).toHaveLength(1);
    expect(records[0]?.tags).toEqual(expect.arrayContaining([WS, 'tool:progress', `request:${rid}`]));
    expect(records[0]?.tags.some((t) => /^progress:[A-Za-z0-9_-]{32}$/.test(t))).toBe(true);
    expect(records[0]?.context).toMatchObject({ request_id: rid, tool: 'openrouter', seq: 13, done: true, dropped: 0 });
  });

  it("a forged progress record (without the runner's tag) is not forwarded", async () => {
    const events: string[] = [];
    const call = mcp.callTool(
      {
        name: 'openrouter',
        arguments: { base_url: fake.baseUrl, model: 'held', messages: [{ role: 'user', content: 'genuine' }] },
      },
      undefined,
      { onprogress: (p) => void events.push(p.message ?? '') },
    );
    // the tool is running (its API call waits at the fake server): forge a record for its request
    const release = await fake.held();
    const requests = await store.listBreadcrumbs({ schema_name: SCHEMA.ToolRequest, include_context: true, limit: 5 });
    const rid = requests
      .map((r) => r.context as { requestId?: string; input?: { model?: string } })
      .find((c) => c.input?.model === 'held')?.requestId;
    expect(rid).toBeDefined();
    await store.createBreadcrumb({
      title: 'forged',
      schema_name: SCHEMA.ToolProgress,
      tags: [WS, 'tool:progress', `request:${rid}`],
      context: { request_id: rid, tool: 'openrouter', seq: 1, events: [{ seq: 1, value: { text: 'FORGED' } }] },
    });
    release();
    const result = await call;
    expect(result.structuredContent).toMatchObject({ content: 'Echo: genuine' });
    expect(events.join('')).toBe('Echo: genuine');
  });

  it("an agent's tool naming the granted host:port is still refused (the grant is the operator tool's only)", async () => {
    const rid = `create-private-${Date.now()}`;
    await store.createBreadcrumb({
      title: 'Create tool: sneaky',
      schema_name: SCHEMA.ToolCreateRequest,
      tags: ['tool:request', WS, 'agent:agent-7'],
      context: {
        request_id: rid,
        agent_id: 'agent-7',
        tool_spec: {
          name: 'sneaky',
          description: 'reaches the local model server',
          version: '1.0.0',
          code: {
            language: 'typescript',
            source: 'export async function execute() { return { s: (await fetch("http://127.0.0.1:1/")).status }; }',
          },
          input_schema: { type: 'object', properties: {} },
          output_schema: { type: 'object', properties: { s: { type: 'number', description: 'status' } } },
          permissions: { net: [`127.0.0.1:${fake.port}`] },
          examples: [{ description: 'x', input: {} }],
        },
      },
    });
    let answer: { context?: unknown } | undefined;
    for (let i = 0; i < 600 && !answer; i++) {
      [answer] = await store.listBreadcrumbs({
        schema_name: SCHEMA.ToolCreateResponse,
        tag: `request:${rid}`,
        include_context: true,
      });
      if (!answer) await new Promise((r) => setTimeout(r, 100));
    }
    expect(answer?.context).toMatchObject({
      status: 'rejected',
      errors: [expect.objectContaining({ code: 'permission.net-blocked', path: '/tool_spec/permissions/net/0' })],
    });
  });

  it('tools-runner call --call-progress prints the streamed tokens to stderr, the response to stdout', async () => {
    const cli = runCli([
      'call',
      'openrouter',
      JSON.stringify({ base_url: fake.baseUrl, messages: [{ role: 'user', content: 'from the cli' }] }),
      '--store-url',
      url,
      '--call-progress',
    ]);
    expect(await cli.exited).toBe(0);
    expect(cli.stderr.join('')).toContain('Echo: from the cli\n');
    expect(JSON.parse(cli.stdout.join('\n'))).toMatchObject({
      tool: 'openrouter',
      status: 'success',
      output: { content: 'Echo: from the cli' },
    });
  });
});
