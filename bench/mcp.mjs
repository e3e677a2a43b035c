// What an MCP `tools/call` adds over a direct `tool.request.v1`, same runner, same run.
// Starts `tools-runner start` (embedded store, admin port with /mcp), creates an echo tool, then
// alternates N direct calls (a store client writes the request and waits for the response event)
// with N MCP calls (the SDK's Client over Streamable HTTP to /mcp). Prints
// { direct_p50_ms, mcp_http_p50_ms, added_p50_ms, added_paired_p50_ms, target_added_p50_ms, met, ... }.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createStoreClient, openEventStream } from '../dist/breadcrumbs/index.js';
import { silentLogger } from '../dist/logger.js';

const N = Number(process.argv.find((a) => a.startsWith('--n='))?.split('=')[1] ?? 300);
const WARMUP = 30;
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-'));
const WS = 'workspace:tools';
const log = (msg) => process.stderr.write(`[mcp] ${msg}\n`);

const proc = spawn(
  process.execPath,
  [
    join(root, 'dist', 'cli', 'main.js'),
    'start',
    '--port',
    '0',
    '--admin-port',
    '0',
    '--data-dir',
    dir,
    '--no-bootstrap',
    '--log-level',
    'info',
  ],
  {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  },
);
let out = '';
let err = '';
const ready = new Promise((resolve, reject) => {
  proc.on('exit', (code) => reject(new Error(`runner exited ${code}: ${err.slice(-2000)}`)));
  proc.stdout.on('data', (d) => {
    out += d;
    if (out.includes('runner ready') && /"msg":"admin port listening"/.test(err)) resolve();
  });
  proc.stderr.on('data', (d) => {
    err += d;
    if (out.includes('runner ready') && /"msg":"admin port listening"/.test(err)) resolve();
  });
});
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 1000) / 1000;
};

try {
  await ready;
  const storeUrl = /store listening on (\S+)/.exec(out)[1];
  const adminUrl = JSON.parse(err.split('\n').find((l) => l.includes('"msg":"admin port listening"'))).url;
  const store = createStoreClient({ baseUrl: storeUrl, logger: silentLogger() });
  const source = 'export async function execute(input) { return { echo: input }; }';
  await store.createBreadcrumb({
    title: 'echo',
    schema_name: 'tool.code.v1',
    tags: ['tool', 'tool:echo', WS],
    context: {
      name: 'echo',
      description: 'echo',
      version: '1.0.0',
      code: { language: 'typescript', source },
      input_schema: { type: 'object', properties: { i: { type: 'number', description: 'i' } } },
      output_schema: { type: 'object' },
      permissions: { net: false },
      limits: { timeout_ms: 5000, memory_mb: 64 },
      examples: [{ description: 'e', input: { i: 0 } }],
    },
  });
  const waiting = new Map();
  const stop = new AbortController();
  await new Promise((resolve) =>
    openEventStream({
      client: store,
      signal: stop.signal,
      logger: silentLogger(),
      onConnected: resolve,
      onEvent: (e) => {
        if (e.schema_name !== 'tool.response.v1') return;
        for (const tag of e.tags ?? []) if (tag.startsWith('request:')) waiting.get(tag.slice(8))?.();
      },
    }),
  );
  const direct = async (i) => {
    const rid = crypto.randomUUID();
    const t0 = performance.now();
    const answered = new Promise((resolve) => waiting.set(rid, resolve));
    await store.createBreadcrumb({
      title: 'Request: echo',
      schema_name: 'tool.request.v1',
      tags: ['tool:request', WS],
      context: { tool: 'echo', input: { i }, requestId: rid },
    });
    await answered;
    waiting.delete(rid);
    return performance.now() - t0;
  };
  const mcp = new Client({ name: 'bench', version: '1' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${adminUrl}/mcp`)));
  while (!(await mcp.listTools()).tools.some((t) => t.name === 'echo')) await new Promise((r) => setTimeout(r, 50));
  const viaMcp = async (i) => {
    const t0 = performance.now();
    const result = await mcp.callTool({ name: 'echo', arguments: { i } });
    if (result.isError) throw new Error(JSON.stringify(result.content));
    return performance.now() - t0;
  };
  log(`warming up (${WARMUP} of each)`);
  for (let i = 0; i < WARMUP; i++) {
    await direct(i);
    await viaMcp(i);
  }
  log(`measuring (${N} of each, alternating)`);
  const d = [];
  const m = [];
  for (let i = 0; i < N; i++) {
    if (i % 2 === 0) {
      d.push(await direct(i));
      m.push(await viaMcp(i));
    } else {
      m.push(await viaMcp(i));
      d.push(await direct(i));
    }
  }
  const paired = d.map((x, i) => m[i] - x);
  const added = Math.round((pct(m, 50) - pct(d, 50)) * 1000) / 1000;
  console.log(
    JSON.stringify(
      {
        calls_each: N,
        direct_p50_ms: pct(d, 50),
        direct_p99_ms: pct(d, 99),
        mcp_http_p50_ms: pct(m, 50),
        mcp_http_p99_ms: pct(m, 99),
        added_p50_ms: added,
        added_paired_p50_ms: pct(paired, 50),
        target_added_p50_ms: 1,
        met: added <= 1,
      },
      null,
      2,
    ),
  );
  stop.abort();
  await mcp.close();
  store.close();
} finally {
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
