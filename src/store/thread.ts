// The embedded store on its own worker thread (`start --store-thread`): the worker (thread-worker.ts)
// owns the database, group commit, the HTTP server and the SSE hub; this side offers the same
// in-process endpoint as local.ts (calls and event subscriptions) over the worker's message port,
// so the runner's thread no longer pays for SQLite, HTTP serving or event frames.
//
// Messages are plain data (structured clone): a request's query travels as its string, a body as
// the JSON copy the client already made. What one side sends in one turn leaves as one array.
// A worker that dies while the store is not closing is fatal: every pending call fails, and
// `onDeath` is told (the service logs it and exits non-zero; it must not hang on a dead store).

import { Worker } from 'node:worker_threads';
import { ErrorCode, RunnerError } from '../errors.js';
import type { LogFormat, LogLevel } from '../logger.js';
import type { LocalEndpoint, LocalReply, LocalStreamSink } from '../local-transport.js';
import type { StoreOptions } from './store.js';

/** The store's options that cross to the worker (no logger, no embedder object: plain data only). */
export type ThreadStoreOptions = Omit<StoreOptions, 'logger' | 'embedder'>;

/** The worker's `workerData`. */
export interface ThreadData {
  options: ThreadStoreOptions;
  log: { level: LogLevel; format: LogFormat; bindings: Record<string, unknown> };
}

type Failure = { message: string; code: string };

/** Main thread to worker. */
export type ToWorker =
  | {
      t: 'call';
      id: number;
      method: string;
      path: string;
      query: string;
      headers: Record<string, string>;
      /** The body as JSON text (a string clones as one copy, at any nesting depth); undefined when none. */
      body: string | undefined;
      token: string | undefined;
    }
  | { t: 'stream'; id: number; query: string; token: string | undefined; lastEventId: string | undefined }
  | { t: 'unstream'; id: number }
  | { t: 'sizes' }
  | { t: 'close' };

/** Worker to main thread. */
export type FromWorker =
  | { t: 'ready'; url: string; port: number }
  | { t: 'failed'; error: Failure }
  | { t: 'reply'; id: number; reply: LocalReply }
  | { t: 'reply'; id: number; error: Failure }
  | { t: 'opened'; id: number }
  | { t: 'refused'; id: number; reply: { status: number; error: Record<string, unknown> } }
  | { t: 'refused'; id: number; error: Failure }
  | { t: 'frame'; id: number; data: string; eventId: string | undefined }
  | { t: 'end'; id: number }
  | { t: 'sizes'; sizes: { dbBytes: number; walBytes: number } }
  | { t: 'closed'; error?: Failure };

/** The store on its worker thread: what `start` uses of a Store. */
export interface StoreThread {
  url: string;
  port: number;
  local: LocalEndpoint;
  /** The database's size as last reported (refreshed on each call); SQLite only. */
  sizes(): { dbBytes: number; walBytes: number } | undefined;
  /** Closes the store (as Store.close) and ends the worker. Idempotent. */
  close(): Promise<void>;
}

const errorOf = (failure: Failure): RunnerError =>
  new RunnerError(
    (Object.values(ErrorCode) as string[]).includes(failure.code) ? (failure.code as ErrorCode) : ErrorCode.Internal,
    failure.message,
  );

/** The worker script beside this module (dist/store/thread-worker.js once built). */
const WORKER_URL = new URL('./thread-worker.js', import.meta.url);

/** Starts the store on a worker thread; resolves once it accepts connections (rejects as createStore would). */
export function createStoreThread(
  data: ThreadData,
  onDeath: (error: Error) => void,
  workerUrl: URL = WORKER_URL,
): Promise<StoreThread> {
  const worker = new Worker(workerUrl, { workerData: data });
  let outbox: ToWorker[] = [];
  const send = (message: ToWorker): void => {
    outbox.push(message);
    if (outbox.length === 1)
      queueMicrotask(() => {
        const batch = outbox;
        outbox = [];
        try {
          worker.postMessage(batch);
        } catch (error) {
          // Never leave a caller waiting on a message that was not sent.
          const failure = new RunnerError(
            ErrorCode.Internal,
            `a message to the store thread was not sent: ${String(error)}`,
          );
          for (const message of batch)
            if (message.t === 'call') {
              calls.get(message.id)?.reject(failure);
              calls.delete(message.id);
            } else if (message.t === 'stream') {
              streams.get(message.id)?.opened?.reject(failure);
              streams.delete(message.id);
            }
        }
      });
  };
  let nextId = 1;
  const calls = new Map<number, { resolve(reply: LocalReply): void; reject(error: Error): void }>();
  const streams = new Map<
    number,
    { sink: LocalStreamSink; opened?: { resolve(): void; reject(reason: unknown): void } }
  >();
  let sizes: { dbBytes: number; walBytes: number } | undefined;
  let state: 'starting' | 'running' | 'closing' | 'gone' = 'starting';
  let started: { resolve(thread: StoreThread): void; reject(error: Error): void };
  let closed: (() => void) | undefined;
  let closeError: Error | undefined;

  const dead = (error: Error): void => {
    const was = state;
    state = 'gone';
    for (const call of calls.values()) call.reject(error);
    calls.clear();
    for (const stream of streams.values()) stream.opened?.reject(error);
    streams.clear();
    closed?.();
    if (was === 'starting') started.reject(error);
    else if (was === 'running') onDeath(error);
  };

  const onMessage = (message: FromWorker): void => {
    switch (message.t) {
      case 'ready':
        state = 'running';
        started.resolve(thread(message.url, message.port));
        return;
      case 'failed':
        state = 'gone';
        started.reject(errorOf(message.error));
        return;
      case 'reply': {
        const call = calls.get(message.id);
        calls.delete(message.id);
        if ('error' in message) call?.reject(errorOf(message.error));
        else call?.resolve(message.reply);
        return;
      }
      case 'opened': {
        const stream = streams.get(message.id);
        stream?.opened?.resolve();
        if (stream) delete stream.opened;
        return;
      }
      case 'refused': {
        const stream = streams.get(message.id);
        streams.delete(message.id);
        stream?.opened?.reject('reply' in message ? message.reply : errorOf(message.error));
        return;
      }
      case 'frame':
        streams.get(message.id)?.sink.frame(message.data, message.eventId);
        return;
      case 'end': {
        const stream = streams.get(message.id);
        streams.delete(message.id);
        stream?.sink.end();
        return;
      }
      case 'sizes':
        sizes = message.sizes;
        return;
      case 'closed':
        if (message.error) closeError = errorOf(message.error);
        state = 'gone';
        closed?.();
        return;
    }
  };
  worker.on('message', (batch: FromWorker[]) => {
    for (const message of batch) onMessage(message);
  });
  worker.on('error', (error) => {
    if (state !== 'gone') dead(new Error(`the store thread failed: ${error.message}`, { cause: error }));
  });
  worker.on('exit', (code) => {
    if (state !== 'gone') dead(new Error(`the store thread exited (code ${code}) while the store was running`));
  });

  const closedAll = (): Error =>
    new RunnerError(ErrorCode.DependencyUnavailable, 'the store thread is gone (closed or died)');

  const thread = (url: string, port: number): StoreThread => {
    let closing: Promise<void> | undefined;
    const local: LocalEndpoint = {
      url,
      call(method, path, request) {
        // While closing, the worker answers 503 as the in-process store does.
        if (state !== 'running' && state !== 'closing') return Promise.reject(closedAll());
        let body: string | undefined;
        try {
          body = request.body === undefined ? undefined : JSON.stringify(request.body);
        } catch (error) {
          // The store client copies bodies as JSON first, so what it sends always passes here.
          return Promise.resolve({
            status: 400,
            error: { error: `request body cannot be written as JSON: ${String(error)}`, code: 'invalid_body' },
          });
        }
        const id = nextId++;
        return new Promise<LocalReply>((resolve, reject) => {
          calls.set(id, { resolve, reject });
          send({
            t: 'call',
            id,
            method,
            path,
            query: request.query.toString(),
            headers: request.headers,
            body,
            token: request.token,
          });
        });
      },
      async stream(query, token, lastEventId, sink) {
        if (state !== 'running' && state !== 'closing') throw closedAll();
        const id = nextId++;
        await new Promise<void>((resolve, reject) => {
          streams.set(id, { sink, opened: { resolve, reject } });
          send({ t: 'stream', id, query: query.toString(), token, lastEventId });
        });
        return {
          close: () => {
            if (!streams.delete(id) || state === 'gone') return;
            send({ t: 'unstream', id });
          },
        };
      },
    };
    return {
      url,
      port,
      local,
      sizes: () => {
        if (state === 'running') send({ t: 'sizes' });
        return sizes;
      },
      close: () =>
        (closing ??= (async () => {
          if (state === 'running') {
            state = 'closing';
            await new Promise<void>((resolve) => {
              closed = resolve;
              send({ t: 'close' });
            });
          }
          await worker.terminate();
          if (closeError) throw closeError;
        })()),
    };
  };

  return new Promise<StoreThread>((resolve, reject) => {
    started = { resolve, reject };
  });
}
