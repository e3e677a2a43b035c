// Shared pieces of the host-tool tests: temp dirs, fixture programs, manifests on disk, a logger that
// keeps its lines, and a check that no child process was left behind.

import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, type Logger } from '../../src/logger.js';
import { createSchemaCache, type ExecuteHostToolOptions, type HostToolConfig } from '../../src/host-tools/index.js';
import { createSchemaValidator } from '../../src/screen/index.js';

/** The test file's one schema validator, as the runner keeps one for its lifetime. */
export const validator = createSchemaValidator();
/** Compiled-schema cache over `validator`, for executeHostTool's `schemas`. */
export const schemas = createSchemaCache(validator);

/** Per-test changes to executeHostTool options; `config` is merged into testConfig(). */
export type OptionOverrides = Omit<Partial<ExecuteHostToolOptions>, 'config'> & { config?: Partial<HostToolConfig> };

/** Absolute path of a fixture program under test/fixtures/host-tools/bin. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/host-tools/bin/${name}`, import.meta.url));
}

/** Temp directories made by a test file; remove them in afterEach/afterAll. */
export function createTempDirs(): { make(): Promise<string>; cleanup(): Promise<void> } {
  const dirs: string[] = [];
  return {
    async make() {
      const dir = await mkdtemp(path.join(tmpdir(), 'legacy-test-'));
      dirs.push(dir);
      return dir;
    },
    async cleanup() {
      await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}

/** Writes `doc` (JSON value or raw text) to `<dir>/<rel>` and returns the absolute path. */
export async function writeManifest(dir: string, doc: unknown, rel = 'tools.json'): Promise<string> {
  const file = path.join(dir, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, typeof doc === 'string' ? doc : JSON.stringify(doc, null, 2));
  return file;
}

/** A logger whose JSON lines are kept in `lines` (parsed). */
export function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>>; text(): string } {
  const raw: string[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => raw.push(line) });
  return {
    logger,
    get lines() {
      return raw.map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    text: () => raw.join(''),
  };
}

/** Configuration of executeHostTool for tests. */
export function testConfig(overrides: Partial<HostToolConfig> = {}): HostToolConfig {
  return { execTimeoutMs: 30_000, maxOutputBytes: 1024 * 1024, redact: [], ...overrides };
}

/** Pids of live (non-zombie) processes whose parent is this test process. */
export function livingChildren(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === process.pid && fields[0] !== 'Z') out.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

/** Whether `pid` is alive (exists and is not a zombie). */
/** Polls until `pid` is gone (a killed orphan stays visible to kill(0) until it is reaped). */
export async function diesWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

/** A resolveSecret from a plain object. */
export function secretsFrom(values: Record<string, string>): (name: string) => Promise<string | undefined> {
  return async (name) => values[name];
}
