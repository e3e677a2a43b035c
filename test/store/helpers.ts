// Shared helpers of the store tests: a real store on port 0, raw HTTP calls, a raw SSE reader and
// temp dirs — everything registered for cleanup in afterEach.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';
import { afterEach } from 'vitest';
import { createLogger, type Logger } from '../../src/logger.js';
import { createStore, type Store, type StoreOptions } from '../../src/store/index.js';

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
export function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>>; waitFor(msg: string): Promise<Record<string, unknown>> } {
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

/** Starts a store (in memory unless `dataDir` is given) and closes it after the test. */
export async function startStore(overrides: Partial<StoreOptions> = {}): Promise<Store> {
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
export async function call(base: string, method: string, path: string, options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const response = await fetch(base + path, { method, body, headers: { 'Content-Type': 'application/json', ...options.headers } });
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
export function openSse(base: string, options: { headers?: Record<string, string>; query?: string } = {}): Promise<SseConnection> {
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
        waitForEvents: (count) => (events().length >= count ? Promise.resolve(events()) : new Promise((r) => waiters.push({ count, resolve: r }))),
        ended,
        close: () => req.destroy(),
      };
      onCleanup(() => req.destroy());
      resolve(connection);
    });
    req.on('error', reject);
  });
}
