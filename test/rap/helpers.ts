// Helpers of the RAP tests: in-process services (runner + embedded store on port 0, SQLite in a
// temp dir, RAP listener on port 0), store clients, agentcli manifests, requests and answers —
// everything registered for cleanup after each test.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG, ToolResponseContext } from '../../src/breadcrumbs/messages.js';
import { defaultConfig } from '../../src/config/index.js';
import { createLogger, silentLogger, type Logger } from '../../src/logger.js';
import { startService, type Service } from '../../src/service/service.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** Runs `fn` after the current test (LIFO). */
export function onCleanup(fn: () => unknown): void {
  cleanups.push(fn);
}

export const WS = 'workspace:tools';
export const BIN = fileURLToPath(new URL('../fixtures/host-tools/bin/', import.meta.url));

/** A temp dir removed after the test. */
export function tempDir(prefix = 'tr-rap-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A logger that keeps its lines (for asserting reports). */
export function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return {
    logger: createLogger({
      level: 'debug',
      write: (text) => void lines.push(JSON.parse(text) as Record<string, unknown>),
    }),
    lines,
  };
}

/** Writes an agentcli tools.json with the given tools; returns its path. */
export function manifest(dir: string, tools: Array<Record<string, unknown>>, file = 'tools.json'): string {
  const path = join(dir, file);
  writeFileSync(path, JSON.stringify({ tools }));
  return path;
}

/** An agentcli tool running a fixture program. */
export function hostTool(name: string, program: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: `test tool ${name}`,
    schema: { type: 'object', properties: { a: { type: 'number' } } },
    command: [join(BIN, program)],
    ...extra,
  };
}

/** A running in-process service and a store client of it. */
export interface Runner {
  service: Service;
  client: StoreClient;
  rapUrl: string;
}

/** Starts a service (embedded store, RAP listener on a free port) with `overrides`. */
export async function startRunner(
  overrides: Record<string, unknown> = {},
  logger: Logger = silentLogger(),
): Promise<Runner> {
  const dir = tempDir();
  const config = defaultConfig({
    port: 0,
    dataDir: dir,
    adminPort: -1,
    bootstrap: false,
    poolSize: 0,
    claimTtlMs: 2000,
    scanIntervalMs: 500,
    drainGraceMs: 2000,
    auditDir: join(dir, 'audit'),
    rapPort: 0,
    ...overrides,
  });
  const lines: string[] = [];
  const service = await startService({ config, logger, out: (line) => lines.push(line) });
  onCleanup(() => service.stop());
  const client = createStoreClient({
    baseUrl: service.storeUrl,
    logger: silentLogger(),
    auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'rap-test' } },
  });
  onCleanup(() => client.close());
  const rapLine = lines.find((l) => l.startsWith('rap listening on ')) ?? '';
  return { service, client, rapUrl: rapLine.replace('rap listening on ', '') };
}

/** Writes a tool.request.v1 as an agent would; returns its requestId. */
export async function request(
  c: StoreClient,
  tool: string,
  input: unknown,
  rid: string = crypto.randomUUID(),
): Promise<string> {
  await c.createBreadcrumb({
    title: `Request: ${tool}`,
    schema_name: SCHEMA.ToolRequest,
    tags: [TAG.Request, WS, TAG.agent('tester')],
    context: { tool, input, requestId: rid },
  });
  return rid;
}

/** Every tool.response.v1 for `rid`. */
export async function responses(c: StoreClient, rid: string): Promise<ToolResponseContext[]> {
  const items = await c.listBreadcrumbs({
    schema_name: SCHEMA.ToolResponse,
    tag: TAG.request(rid),
    include_context: true,
    limit: 20,
  });
  return items.map((item) => ToolResponseContext.parse(item.context));
}

/** Polls until `rid` has its response (exactly one is asserted by the caller). */
export async function answer(c: StoreClient, rid: string, timeoutMs = 30_000): Promise<ToolResponseContext> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await responses(c, rid);
    if (found.length > 0) return found[0] as ToolResponseContext;
    if (Date.now() > deadline) throw new Error(`request ${rid} unanswered after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls `check` until it returns a value other than undefined. */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The tool.request.v1 records the RAP tool server wrote for RAP invocation `id`. */
export async function requestsByRapId(r: Runner, id: string) {
  const items = await r.client.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS, include_context: true });
  return items.filter((item) => (item.context?.['rap'] as { id?: string } | undefined)?.id === id);
}

/** The answers of the request breadcrumb `breadcrumbId`. */
export async function responsesFor(r: Runner, breadcrumbId: string) {
  const items = await r.client.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true });
  return items
    .map((item) => ToolResponseContext.parse(item.context))
    .filter((c) => c.metadata['request_breadcrumb_id'] === breadcrumbId);
}
