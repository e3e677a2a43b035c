// End-to-end harness: real `tools-runner` processes (store and runner), a real store client, and
// helpers to create tools and requests and to collect responses. Everything started is registered
// for cleanup; `cleanupAll()` runs in afterEach/afterAll of the e2e files.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import {
  SCHEMA,
  TAG,
  ToolResponseContext,
  type ToolResponseContext as Response,
} from '../../src/breadcrumbs/messages.js';
import { silentLogger } from '../../src/logger.js';
import { until } from '../support/waits.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const cleanups: Array<() => Promise<void> | void> = [];

export const WS = 'workspace:tools';
/** The runner secret every process started by runCli shares (override with env). */
export const E2E_RUNNER_SECRET = 'e2e-runner-secret-0123456789';

/** Runs every registered cleanup (newest first). */
export async function cleanupAll(): Promise<void> {
  for (const fn of cleanups.splice(0).reverse()) await fn();
}

/** A temp dir removed at cleanup. */
export function tempDir(prefix = 'tr-e2e-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface CliProcess {
  proc: ChildProcess;
  stdout: string[];
  stderr: string[];
  /** Resolves with the first stdout line matching `pattern`; rejects if the process exits first. */
  line(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  signal(name: NodeJS.Signals): void;
}

/** Spawns `node dist/cli/main.js <args>` (in the checkout, or `options.cwd`; or `options.bin`); killed (SIGKILL) at cleanup if still running. */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string; bin?: string } = {},
): CliProcess {
  // A private TMPDIR: whatever the process leaves (even when a test SIGKILLs it) goes with it.
  const tmp = tempDir('tr-e2e-tmp-');
  // `bin`: an installed copy's executable (run as a user would: through its shebang).
  const proc = spawn(options.bin ?? process.execPath, options.bin ? args : [cli, ...args], {
    cwd: options.cwd ?? root,
    // One runner secret for every process of a test (replicas and CLI commands must share it).
    // XDG_DATA_HOME: the default --data-dir (and audit dir) is in the private temp dir, never the real home.
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: process.env['HOME'] ?? '/tmp',
      TMPDIR: tmp,
      XDG_DATA_HOME: tmp,
      TOOLS_RUNNER_LOG_LEVEL: 'warn',
      TOOLS_RUNNER_RUNNER_SECRET: E2E_RUNNER_SECRET,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  let outBuf = '';
  proc.stdout?.on('data', (chunk: Buffer) => {
    outBuf += chunk.toString();
    let nl: number;
    while ((nl = outBuf.indexOf('\n')) !== -1) {
      const line = outBuf.slice(0, nl);
      outBuf = outBuf.slice(nl + 1);
      stdout.push(line);
      for (const w of [...waiters]) {
        if (w.pattern.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  proc.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    proc.on('exit', (code, sig) => resolve(code ?? sig ?? 'unknown')),
  );
  cleanups.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      // Graceful first (the runner drains and removes its sandbox dirs), then by force.
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
  });
  return {
    proc,
    stdout,
    stderr,
    exited,
    signal: (name) => void proc.kill(name),
    line(pattern, timeoutMs = 30_000) {
      const seen = stdout.find((l) => pattern.test(l));
      if (seen) return Promise.resolve(seen);
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no stdout line matching ${pattern} within ${timeoutMs} ms; stderr:\n${stderr.join('').slice(-3000)}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({
          pattern,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
        void exited.then((code) => {
          clearTimeout(timer);
          reject(
            new Error(`process exited (${code}) before printing ${pattern}; stderr:\n${stderr.join('').slice(-3000)}`),
          );
        });
      });
    },
  };
}

/** The lease (claim) time-to-live of runners started with FAST. */
export const CLAIM_TTL_MS = 2000;

/** Runner flags that make e2e runs quick: short leases and scans, no admin port, no bootstrap. */
export const FAST = [
  '--admin-port',
  '-1',
  '--no-bootstrap',
  '--claim-ttl-ms',
  String(CLAIM_TTL_MS),
  '--scan-interval-ms',
  '500',
  '--drain-grace-ms',
  '5000',
];

/** Starts `tools-runner start` with its embedded store; resolves once it prints `runner ready`. */
export async function startRunnerWithStore(
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<{ runner: CliProcess; url: string; dataDir: string }> {
  const dataDir = tempDir();
  const runner = runCli(['start', '--port', '0', '--data-dir', dataDir, ...FAST, ...extra], env);
  const line = await runner.line(/^store listening on /);
  await runner.line(/^runner ready$/);
  return { runner, url: line.replace('store listening on ', ''), dataDir };
}

/** The admin URL a runner started with `--admin-port 0` and log level info logged. */
export async function adminUrl(runner: CliProcess): Promise<string> {
  return until('the admin port listening line', () => {
    const line = runner.stderr
      .join('')
      .split('\n')
      .find((l) => l.includes('"msg":"admin port listening"'));
    return line === undefined ? undefined : (JSON.parse(line) as { url: string }).url;
  });
}

/** Starts `tools-runner store`; resolves with its URL. */
export async function startStoreProcess(
  dataDir: string,
  port = 0,
  extra: string[] = [],
): Promise<{ store: CliProcess; url: string }> {
  const store = runCli(['store', '--port', String(port), '--data-dir', dataDir, ...extra]);
  const line = await store.line(/^store listening on /);
  return { store, url: line.replace('store listening on ', '') };
}

/** Starts a runner against an existing store. */
export async function startRunner(
  storeUrl: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<CliProcess> {
  const runner = runCli(['start', '--store-url', storeUrl, ...FAST, ...extra], env);
  await runner.line(/^runner ready$/);
  return runner;
}

/** A store client for the test itself (closed at cleanup). */
export function client(url: string): StoreClient {
  const c = createStoreClient({
    baseUrl: url,
    logger: silentLogger(),
    auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'e2e' } },
  });
  cleanups.push(() => c.close());
  return c;
}

/** A tool.code.v1 context with sensible defaults around `source`. */
export function toolContext(
  name: string,
  source: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    name,
    description: `e2e tool ${name}`,
    version: '1.0.0',
    code: { language: 'typescript', source },
    input_schema: {
      type: 'object',
      properties: { n: { type: 'number', description: 'a number' } },
      additionalProperties: true,
    },
    output_schema: { type: 'object' },
    permissions: { net: false },
    limits: { timeout_ms: 5000, memory_mb: 64 },
    examples: [{ description: 'example', input: {} }],
    ...extra,
  };
}

/** Writes a tool.code.v1 breadcrumb directly (as an agent could). */
export async function putTool(c: StoreClient, context: Record<string, unknown>): Promise<string> {
  const name = context['name'] as string;
  const { id } = await c.createBreadcrumb({
    title: name,
    schema_name: SCHEMA.ToolCode,
    tags: [TAG.Tool, TAG.tool(name), WS],
    context,
  });
  return id;
}

/** Writes a tool.request.v1 and returns its rid; retries while the store is unreachable. */
export async function request(
  c: StoreClient,
  tool: string,
  input: unknown,
  rid: string = crypto.randomUUID(),
  extra: Record<string, unknown> = {},
): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      await c.createBreadcrumb(
        {
          title: `Request: ${tool}`,
          schema_name: SCHEMA.ToolRequest,
          tags: [TAG.Request, WS],
          context: { tool, input, requestId: rid, ...extra },
        },
        { idempotencyKey: `e2e-request:${rid}` },
      );
      return rid;
    } catch (error) {
      if ((error as { status?: number }).status === 409) return rid;
      if (attempt > 200) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** All tool.response.v1 of the workspace, grouped by request id. */
export async function responsesByRid(c: StoreClient): Promise<Map<string, Response[]>> {
  const items = await c.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true });
  const out = new Map<string, Response[]>();
  for (const item of items) {
    const parsed = ToolResponseContext.parse(item.context);
    if (!item.tags.includes(TAG.request(parsed.request_id)) || !item.tags.includes(TAG.Response)) {
      throw new Error(`response ${item.id} lacks its tags: ${item.tags.join(',')}`);
    }
    out.set(parsed.request_id, [...(out.get(parsed.request_id) ?? []), parsed]);
  }
  return out;
}

/** Polls the store until `rids` all have a response (or the deadline passes); returns the map. */
export async function waitForResponses(
  c: StoreClient,
  rids: readonly string[],
  timeoutMs = 60_000,
): Promise<Map<string, Response[]>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let map: Map<string, Response[]> | undefined;
    try {
      map = await responsesByRid(c);
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (map && rids.every((rid) => map!.has(rid))) return map;
    if (Date.now() > deadline) {
      const missing = rids.filter((rid) => !map?.has(rid));
      throw new Error(
        `${missing.length} of ${rids.length} requests unanswered after ${timeoutMs} ms (e.g. ${missing.slice(0, 3).join(', ')})`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Waits for one request's response. */
export async function answer(c: StoreClient, rid: string, timeoutMs = 30_000): Promise<Response> {
  const map = await waitForResponses(c, [rid], timeoutMs);
  const list = map.get(rid) as Response[];
  if (list.length !== 1) throw new Error(`request ${rid} has ${list.length} responses`);
  return list[0] as Response;
}
