// Console test harness: the real service in-process (embedded store on port 0, SQLite in a temp
// dir, real Deno sandbox, admin port 0 with the console), the console bundle built when stale, and
// Debian's Chromium driven by playwright-core. Everything started is stopped in cleanupConsole().

import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { defaultConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/logger.js';
import { serviceExtensions } from '../../src/cli/extensions.js';
import { startService, type Service } from '../../src/service/service.js';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const WS = 'workspace:tools';
export const ARTIFACTS = join(root, 'artifacts', 'console');
const cleanups: Array<() => Promise<void> | void> = [];

/** Runs every registered cleanup, newest first. */
export async function cleanupConsole(): Promise<void> {
  for (const fn of cleanups.splice(0).reverse()) await fn();
}

function newest(dir: string): number {
  return Math.max(
    0,
    ...readdirSync(dir, { withFileTypes: true }).map((e) =>
      e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs,
    ),
  );
}

/** Builds dist/console/public unless it is newer than every file of console/. */
export async function ensureConsoleBuilt(): Promise<void> {
  const built = statSync(join(root, 'dist', 'console', 'public', 'index.html'), { throwIfNoEntry: false });
  if (built && built.mtimeMs >= newest(join(root, 'console'))) return;
  const { buildConsole } = (await import(join(root, 'scripts', 'build-console.mjs'))) as {
    buildConsole(): Promise<unknown>;
  };
  await buildConsole();
}

export interface Running {
  service: Service;
  adminUrl: string;
  client: StoreClient;
}

/** Starts the whole service with the console on a free admin port. */
export async function startConsoleService(overrides: Record<string, unknown> = {}): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'tr-console-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const config = defaultConfig({
    port: 0,
    dataDir: dir,
    adminPort: 0,
    bootstrap: false,
    claimTtlMs: 3000,
    scanIntervalMs: 500,
    drainGraceMs: 2000,
    poolSize: 1,
    ...overrides,
  });
  const service = await startService({ config, logger: silentLogger(), extensions: serviceExtensions(config) });
  cleanups.push(() => service.stop());
  const client = createStoreClient({
    baseUrl: service.storeUrl,
    logger: silentLogger(),
    auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'console-test' } },
  });
  cleanups.push(() => client.close());
  return { service, adminUrl: service.adminUrl as string, client };
}

/** A tool.code.v1 context with defaults around `source`. */
export function toolContext(
  name: string,
  source: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    name,
    description: `test tool ${name}`,
    version: '1.0.0',
    code: { language: 'typescript', source },
    input_schema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'a text' } },
      required: ['text'],
      additionalProperties: false,
    },
    output_schema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'the result' } },
      required: ['text'],
    },
    permissions: { net: false },
    limits: { timeout_ms: 5000, memory_mb: 64 },
    examples: [{ description: 'shouts', input: { text: 'hi' }, output: { text: 'HI' }, match: 'exact' }],
    ...extra,
  };
}

export const UPPER =
  'export async function execute(input: { text: string }) {\n  return { text: input.text.toUpperCase() };\n}\n';

/** Writes a tool.code.v1 straight into the store (as an agent could). */
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

/** Polls `fn` until it returns a value other than undefined. */
export async function until<T>(fn: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Launches Debian's Chromium (closed at cleanup). */
export async function launchBrowser(): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  cleanups.push(() => browser.close());
  return browser;
}

/** Saves a full-page screenshot to artifacts/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
