// `tools-runner mcp` over stdio, as a desktop client runs it, driven by the SDK's own Client and
// StdioClientTransport (spawning `node dist/cli/main.js mcp ...`): as a client of a running
// runner's store (--store-url) and with an embedded service. stdout must carry MCP frames only.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cleanupAll,
  client as storeClient,
  E2E_RUNNER_SECRET,
  FAST,
  putTool,
  runCli,
  startRunnerWithStore,
  tempDir,
  toolContext,
} from '../e2e/harness.js';

const cli = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));
let open: Client[] = [];

afterEach(async () => {
  for (const c of open) await c.close().catch(() => undefined);
  open = [];
  await cleanupAll();
});

/** Spawns `tools-runner mcp <args>` and connects the SDK client; stderr lines are collected. */
async function spawnMcp(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ mcp: Client; stderr: string[]; errors: Error[] }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp', ...args],
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: process.env['HOME'] ?? '/tmp',
      TMPDIR: tempDir('tr-mcp-tmp-'),
      ...env,
    },
    stderr: 'pipe',
  });
  const stderr: string[] = [];
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const mcp = new Client({ name: 'stdio-test', version: '1.0.0' });
  const errors: Error[] = [];
  mcp.onerror = (error) => errors.push(error);
  open.push(mcp);
  await mcp.connect(transport);
  return { mcp, stderr, errors };
}

async function untilListed(mcp: Client, name: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await mcp.listTools()).tools.some((t) => t.name === name)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${name} never listed`);
}

describe('tools-runner mcp (stdio)', () => {
  it('as a client of a running runner: lists, calls, reports input.invalid, and notifies list_changed', async () => {
    const { url } = await startRunnerWithStore();
    const store = storeClient(url);
    await putTool(
      store,
      toolContext('double', 'export async function execute(input) { return { value: input.n * 2 }; }', {
        input_schema: {
          type: 'object',
          properties: { n: { type: 'number', description: 'a number' } },
          required: ['n'],
        },
        examples: [{ description: 'example', input: { n: 1 } }],
      }),
    );
    // The runner's secret, so answers are checked for its answer tag.
    const { mcp, stderr, errors } = await spawnMcp(['--store-url', url, '--log-level', 'warn'], {
      TOOLS_RUNNER_RUNNER_SECRET: E2E_RUNNER_SECRET,
    });
    await untilListed(mcp, 'double');
    const ok = await mcp.callTool({ name: 'double', arguments: { n: 21 } });
    expect(ok.structuredContent).toEqual({ value: 42 });
    const bad = await mcp.callTool({ name: 'double', arguments: {} });
    expect(bad).toMatchObject({
      isError: true,
      content: [
        {
          type: 'text',
          text: 'input.invalid: input does not match the input_schema of "double": /n: must have required property \'n\'',
        },
      ],
    });
    const changed = new Promise<void>((resolve) =>
      mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    await putTool(store, toolContext('later', 'export async function execute() { return { later: true }; }'));
    await changed;
    expect((await mcp.callTool({ name: 'later', arguments: {} })).structuredContent).toEqual({ later: true });
    expect(errors).toEqual([]);
    expect(stderr.join('')).not.toContain('runner secret unknown');
  });

  it('answers server/discover sent as the very first message, then serves initialize as before', async () => {
    const { url } = await startRunnerWithStore();
    const proc = spawn(process.execPath, [cli, 'mcp', '--store-url', url, '--log-level', 'warn'], {
      cwd: root,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: process.env['HOME'] ?? '/tmp',
        TMPDIR: tempDir('tr-mcp-tmp-'),
        TOOLS_RUNNER_RUNNER_SECRET: E2E_RUNNER_SECRET,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    try {
      const lines: Array<Record<string, unknown>> = [];
      let buffer = '';
      proc.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
          lines.push(JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>);
          buffer = buffer.slice(nl + 1);
        }
      });
      proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} })}\n`);
      await expect.poll(() => lines.length, { timeout: 20_000 }).toBeGreaterThan(0);
      expect(lines[0]).toMatchObject({
        jsonrpc: '2.0',
        id: 1,
        result: {
          resultType: 'complete',
          supportedVersions: expect.arrayContaining(['2025-11-25']),
          capabilities: { tools: { listChanged: true } },
        },
      });
      proc.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })}\n`,
      );
      await expect.poll(() => lines.length, { timeout: 20_000 }).toBeGreaterThan(1);
      expect(lines[1]).toMatchObject({
        id: 2,
        result: { protocolVersion: '2025-11-25', serverInfo: { name: 'tools-runner' } },
      });
    } finally {
      proc.kill('SIGTERM');
    }
  });

  it('against a store, without the runner secret, it refuses to start and says why', async () => {
    const { url } = await startRunnerWithStore();
    const dataDir = tempDir();
    const cli = runCli(['mcp', '--store-url', url, '--data-dir', dataDir], { TOOLS_RUNNER_RUNNER_SECRET: '' });
    expect(await cli.exited).toBe(2);
    expect(cli.stderr.join('')).toContain(`tools-runner mcp: no runner key: ${dataDir}/runner.key does not exist`);
  });

  it('with an embedded service: the store, runner and MCP in one process', async () => {
    const dataDir = tempDir();
    const { mcp, stderr, errors } = await spawnMcp([
      '--port',
      '0',
      '--data-dir',
      dataDir,
      ...FAST,
      '--log-level',
      'info',
    ]);
    expect((await mcp.listTools()).tools).toEqual([]);
    const line = stderr
      .join('')
      .split('\n')
      .find((l) => l.includes('"msg":"store listening on '));
    const url = (JSON.parse(line as string) as { msg: string }).msg.replace('store listening on ', '');
    const changed = new Promise<void>((resolve) =>
      mcp.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    await putTool(
      storeClient(url),
      toolContext('greet', 'export async function execute(input) { return { hello: input.who ?? "world" }; }'),
    );
    await changed;
    const result = await mcp.callTool({ name: 'greet', arguments: { who: 'mcp' } });
    expect(result).toMatchObject({
      structuredContent: { hello: 'mcp' },
      content: [{ type: 'text', text: '{"hello":"mcp"}' }],
    });
    expect(errors).toEqual([]);
  });
});
