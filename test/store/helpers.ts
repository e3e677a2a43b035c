// Shared helpers of the store tests: a real store on port 0, raw HTTP calls, a raw SSE reader and
// temp dirs — everything registered for cleanup in afterEach.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import { createLogger, type Logger } from '../../src/logger.js';
import { createStore, type Store, type StoreOptions } from '../../src/store/index.js';
import { PG_UNAVAILABLE, sharedPgCluster, stopSharedPgCluster } from '../support/pg-cluster.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** Runs `fn` after the current test (LIFO). */
export function onCleanup(fn: () => unknown): void {
  cleanups.push(fn);
}

/** A temp dir removed after the test. */
export function tempDir(prefix = 'store-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A logger that keeps its lines, with a way to wait for a message. */
export function captureLogger(): {
  logger: Logger;
  lines: Array<Record<string, unknown>>;
  waitFor(msg: string): Promise<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<{ msg: string; resolve: (line: Record<string, unknown>) => void }> = [];
  const logger = createLogger({
    level: 'debug',
    write: (text) => {
      const line = JSON.parse(text) as Record<string, unknown>;
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.msg === line.msg) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    },
  });
  return {
    logger,
    lines,
    waitFor: (msg) => {
      const found = lines.find((line) => line.msg === msg);
      return found ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ msg, resolve }));
    },
  };
}

/** The store's database backends the contract tests run against. */
export type Backend = 'sqlite' | 'postgres';
export const BACKENDS: Backend[] = PG_UNAVAILABLE === undefined ? ['sqlite', 'postgres'] : ['sqlite'];
/** The secrets key of PostgreSQL test stores (a PostgreSQL store needs one). */
export const PG_TEST_SECRETS_KEY = 'ab'.repeat(32);
let backend: Backend = 'sqlite';
afterAll(stopSharedPgCluster);

/** The backend of the running `describeBackends` block. */
export function currentBackend(): Backend {
  return backend;
}

/**
 * Runs the block once per backend (`name [sqlite]`, `name [postgres]`): inside it `startStore()`
 * without a `dataDir` starts a store on a fresh database of that backend (PostgreSQL: a fresh
 * database in this file's throwaway cluster). Where PostgreSQL cannot run, its block is skipped
 * with the reason in its name (in CI that is an error instead: see test/support/pg-cluster.ts).
 */
export function describeBackends(name: string, fn: (backend: Backend) => void): void {
  for (const each of BACKENDS) {
    describe(`${name} [${each}]`, () => {
      beforeAll(() => {
        backend = each;
      });
      afterAll(() => {
        backend = 'sqlite';
      });
      fn(each);
    });
  }
  if (PG_UNAVAILABLE !== undefined)
    describe.skip(`${name} [postgres] skipped: ${PG_UNAVAILABLE}`, () => it('needs PostgreSQL', () => {}));
}

/** A fresh PostgreSQL database URL in this file's cluster. */
export async function pgDatabase(): Promise<string> {
  return (await sharedPgCluster()).database();
}

/** Starts a store (in memory unless `dataDir` is given; on PostgreSQL inside a postgres `describeBackends` block) and closes it after the test. */
export async function startStore(overrides: Partial<StoreOptions> = {}): Promise<Store> {
  const pg =
    backend === 'postgres' && overrides.dataDir === undefined && overrides.db === undefined
      ? { db: await pgDatabase(), secretsKey: PG_TEST_SECRETS_KEY }
      : overrides.db !== undefined
        ? { secretsKey: PG_TEST_SECRETS_KEY }
        : {};
  const store = await createStore({
    host: '127.0.0.1',
    port: 0,
    dataDir: ':memory:',
    maxBodyBytes: 64 * 1024,
    authSecret: undefined,
    adminKey: undefined,
    secretsKey: undefined,
    pingIntervalMs: 5000,
    eventRetention: 1000,
    logger: createLogger({ level: 'silent' }),
    ...pg,
    ...overrides,
  });
  onCleanup(() => store.close());
  return store;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

/** One raw HTTP call (fetch); parses JSON bodies. */
export async function call(
  base: string,
  method: string,
  path: string,
  options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const response = await fetch(base + path, {
    method,
    body,
    headers: { 'Content-Type': 'application/json', ...options.headers },
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // keep text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** A minimal create body. */
export function crumb(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { title: 'a crumb', context: { n: 1 }, tags: ['t:a'], ...extra };
}

export interface SseFrame {
  id?: string;
  data: any;
}

/** A raw SSE connection (node:http + eventsource-parser): collects frames, waits for counts. */
export interface SseConnection {
  status: number;
  frames: SseFrame[];
  /** Frames except pings. */
  events(): SseFrame[];
  waitForEvents(count: number): Promise<SseFrame[]>;
  ended: Promise<void>;
  close(): void;
}

/** Opens `GET /events/stream` and resolves once headers arrived. */
export function openSse(
  base: string,
  options: { headers?: Record<string, string>; query?: string } = {},
): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const frames: SseFrame[] = [];
    const waiters: Array<{ count: number; resolve: (frames: SseFrame[]) => void }> = [];
    const events = (): SseFrame[] => frames.filter((frame) => frame.data?.type !== 'ping');
    const check = (): void => {
      for (const waiter of [...waiters]) {
        if (events().length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(events());
        }
      }
    };
    const parser = createParser({
      onEvent: (message) => {
        frames.push({ ...(message.id !== undefined ? { id: message.id } : {}), data: JSON.parse(message.data) });
        check();
      },
    });
    const req = http.get(`${base}/events/stream${options.query ?? ''}`, { headers: options.headers }, (res) => {
      let endResolve: () => void = () => {};
      const ended = new Promise<void>((r) => (endResolve = r));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.feed(chunk));
      res.on('close', () => endResolve());
      res.on('error', () => endResolve());
      let body = '';
      if ((res.statusCode ?? 0) >= 300) res.on('data', (c: string) => (body += c));
      const connection: SseConnection = {
        status: res.statusCode ?? 0,
        frames,
        events,
        waitForEvents: (count) =>
          events().length >= count
            ? Promise.resolve(events())
            : new Promise((r) => waiters.push({ count, resolve: r })),
        ended,
        close: () => req.destroy(),
      };
      onCleanup(() => req.destroy());
      resolve(connection);
    });
    req.on('error', reject);
  });
}
