// Shared helpers of the sandbox tests: fixture tools, a per-file temp dir (TMPDIR) so leftovers are
// attributable, and leak checks that scan /proc for Deno processes running our harness.

import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { defaultConfig, type Config, type OptionKey } from '../../src/config/index.js';
import { createLogger, type Logger } from '../../src/logger.js';
import type { ExecutionResult } from '../../src/result.js';
import { HARNESS_PATH } from '../../src/sandbox/command.js';
import { TEMP_PREFIX } from '../../src/sandbox/process.js';
import { RELAY_LAUNCHER_PATH } from '../../src/sandbox/relay-launcher.js';
import type { SandboxJob, SandboxTool } from '../../src/sandbox/index.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/sandbox/', import.meta.url));

/** Source of a fixture tool (test/fixtures/sandbox/<name>.ts). */
/** Whether a process with this pid exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function fixture(name: string): string {
  return readFileSync(join(FIXTURES, `${name}.ts`), 'utf8');
}

/** A tool from a fixture, with generous limits (the machine is shared and slow). */
export function tool(name: string, overrides: Partial<SandboxTool> = {}): SandboxTool {
  return {
    name,
    version: '1.0.0',
    source: fixture(name),
    net: [],
    api: false,
    timeoutMs: 30_000,
    memoryMb: 128,
    ...overrides,
  };
}

/** A job for `t`. */
export function job(t: SandboxTool, input: unknown = {}, extra: Partial<SandboxJob> = {}): SandboxJob {
  return {
    tool: t,
    input,
    secrets: {},
    request: { id: 'req-1', workspace: 'workspace:tools', agentId: 'agent-1' },
    ...extra,
  };
}

/**
 * Configuration for tests: small pool, default limits unless overridden. TEST_SANDBOX_LAUNCHER (e.g.
 * `deno-relay`) runs the sandbox tests with that launcher for every process, warm ones included.
 */
export function testConfig(overrides: Partial<Record<OptionKey, unknown>> = {}): Config {
  const launcher = process.env['TEST_SANDBOX_LAUNCHER'];
  return defaultConfig({
    poolSize: 1,
    poolMax: 4,
    logLevel: 'silent',
    ...(launcher ? { sandboxLauncher: launcher } : {}),
    ...overrides,
  });
}

/** A logger that keeps its lines for assertions. */
export function captureLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: createLogger({ level: 'debug', write: (line) => lines.push(line) }), lines };
}

/** Points os.tmpdir() at a fresh directory for this test file; restore() removes it. */
export function isolateTmp(): { dir: string; restore(): void } {
  const previous = process.env.TMPDIR;
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-test-'));
  process.env.TMPDIR = dir;
  return {
    dir,
    restore() {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function descendsFromUs(pid: number): boolean {
  let current: number | undefined = pid;
  for (let depth = 0; depth < 64 && current !== undefined && current > 1; depth++) {
    current = parentOf(current);
    if (current === process.pid) return true;
  }
  return false;
}

/** Pids of our Deno relay launchers (descendants, or orphaned). */
export function ourRelayLaunchers(): number[] {
  return ourDenoProcesses(true);
}

/** Pids of Deno processes running our harness that are ours (descendants) or orphaned; `relay`: relay launchers instead. */
export function ourDenoProcesses(relay = false): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    // the harness's own path, or the JavaScript copy a sandbox starts its processes from
    const isHarness =
      cmdline.includes(HARNESS_PATH) || /tools-runner-sbx-\d+-harness-[^/\0]+\/harness\.js/.test(cmdline);
    const isDeno = isHarness || cmdline.split('\0')[0]?.endsWith('/deno') === true;
    // the Deno relay launcher starts sandbox processes; it is none itself (ourRelayLaunchers)
    if (!isDeno || cmdline.includes(RELAY_LAUNCHER_PATH) !== relay) continue;
    if (descendsFromUs(pid) || ((isHarness || relay) && parentOf(pid) === 1)) found.push(pid);
  }
  return found;
}

/** Sandbox temp dirs left in `dir`. */
export function leftoverTempDirs(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith(TEMP_PREFIX));
}

/** Asserts that no Deno process and no sandbox temp dir was left behind. */
export function expectNoLeaks(dir: string): void {
  expect(ourDenoProcesses()).toEqual([]);
  expect(ourRelayLaunchers()).toEqual([]);
  expect(leftoverTempDirs(dir)).toEqual([]);
}

/** Polls `condition` (a state we cannot subscribe to) until true or the deadline passes. */
export async function waitFor(condition: () => boolean, timeoutMs = 30_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The error code of a result, or 'ok'. */
export function codeOf(result: ExecutionResult): string {
  return result.ok ? 'ok' : result.error.code;
}

/**
 * The lifecycle most sandbox test files share: a private TMPDIR for the file, and after each test the
 * test's sandbox closed (`current`, then `forget` it) and nothing left behind.
 */
export function useIsolatedSandboxes(current: () => { close(): Promise<void> } | undefined, forget: () => void): void {
  let tmp: ReturnType<typeof isolateTmp>;
  beforeAll(() => {
    tmp = isolateTmp();
  });
  afterEach(async () => {
    await current()?.close();
    forget();
    expectNoLeaks(tmp.dir);
  });
  afterAll(() => {
    tmp.restore();
  });
}

/** Local HTTP servers of a test file: `listen` starts one on `host` (free port), `closeAll` stops them. */
export function localServers(): {
  listen(host: string, handler: Parameters<typeof createServer>[1]): Promise<number>;
  closeAll(): Promise<void>;
} {
  const servers: Server[] = [];
  return {
    listen(host, handler) {
      const server = createServer(handler);
      servers.push(server);
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, host, () => resolve((server.address() as { port: number }).port));
      });
    },
    closeAll: () =>
      Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve)))).then(
        () => undefined,
      ),
  };
}
