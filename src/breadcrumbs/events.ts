// Reader of the store's event stream (`GET /events/stream`, SSE) over fetch + eventsource-parser.
//
// States: CONNECTING → OPEN (response headers arrived: onConnected fires) → LOST (error, stall,
// or a clean end of stream — upstream's runner never reconnects after a clean end; we always do)
// → WAITING (exponential backoff with jitter; reset after a healthy connection) → CONNECTING…
// until `signal` aborts, which resolves `closed`. A connection that brings no frame at all (not
// even a ping) for `stallMs` is treated as dead. `Last-Event-ID` is sent when known; the embedded
// store resumes from it, upstream ignores it — so callers must catch up on `reconnect: true`.

import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { StoreClient } from './client.js';
import { withQuery } from './client-http.js';
import { searchParams, type LocalEndpoint } from './client-local.js';
import { EVENT, type StoreEvent } from './messages.js';
import { parseStoreEvent } from './store-shapes.js';
import { errorFromBody, errorFromResponse } from './store-error.js';
import { backoffMs } from '../backoff.js';

/** Options of `openEventStream`. */
export interface EventStreamOptions {
  client: StoreClient;
  signal: AbortSignal;
  logger: Logger;
  /** Server-side filter; an embedded-store extension (sent as `x_schema_name`/`x_tag`) that upstream IGNORES (callers must still filter). */
  query?: { schema_name?: string; tag?: string };
  /**
   * Embedded-store stream extensions to ask for (`x_ext`; upstream ignores the parameter). Default:
   * all — `deleted` (the catalog drops deleted tools), `ids` (resume with Last-Event-ID) and `gap`.
   */
  extensions?: ReadonlyArray<'deleted' | 'ids' | 'gap'>;
  /** Every non-ping event (including unknown types such as `stream.gap`), with its SSE id when sent. */
  onEvent(event: StoreEvent, id?: string): void;
  /** After each successful connect; `reconnect: true` for all but the first (run a catch-up scan then).
   * `attempt`: connection attempts this connect took since the previous connection ended (1 = first try). */
  onConnected?(info: { reconnect: boolean; attempt: number }): void;
  backoff?: { initialMs: number; maxMs: number };
  /** Silence after which the connection counts as dead; default 15 s (3 × the 5 s ping). */
  stallMs?: number;
}

interface Outcome {
  connected: boolean;
  healthy: boolean;
  error?: unknown;
}

const MAX_FRAME_CHARS = 64 * 1024 * 1024;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Opens the stream and keeps it open until `signal` aborts; `closed` resolves then (never rejects). */
export function openEventStream(options: EventStreamOptions): { closed: Promise<void> } {
  const { client, signal, logger } = options;
  const stallMs = options.stallMs ?? 15_000;
  const backoff = options.backoff ?? { initialMs: 250, maxMs: 15_000 };
  const extensions = options.extensions ?? ['deleted', 'ids', 'gap'];
  const streamQuery = {
    ...(extensions.length > 0 ? { x_ext: extensions.join(',') } : {}),
    ...(options.query?.schema_name !== undefined ? { x_schema_name: options.query.schema_name } : {}),
    ...(options.query?.tag !== undefined ? { x_tag: options.query.tag } : {}),
  };
  const path = withQuery('/events/stream', streamQuery);
  let lastId: string | undefined;
  let connections = 0;

  const handle = (message: EventSourceMessage): void => {
    if (message.id !== undefined && message.id !== '') lastId = message.id;
    let parsed;
    try {
      parsed = parseStoreEvent(JSON.parse(message.data));
    } catch {
      logger.warn('event stream frame is not JSON', { chars: message.data.length });
      return;
    }
    if (!parsed.success) {
      logger.warn('event stream frame has an unexpected shape', { issue: parsed.message });
      return;
    }
    if (parsed.data.type === EVENT.Ping) return;
    try {
      options.onEvent(parsed.data, message.id);
    } catch (error) {
      logger.error('event handler threw', { type: parsed.data.type, error: coerceError(error) });
    }
  };

  const connected = (attempt: number): void => {
    const reconnect = connections > 0;
    connections++;
    logger.info('event stream connected', { reconnect, attempt, lastEventId: lastId });
    try {
      options.onConnected?.({ reconnect, attempt });
    } catch (error) {
      logger.error('onConnected handler threw', { error: coerceError(error) });
    }
  };

  // In-process: the embedded store's subscription delivers each committed event's JSON in commit
  // order (no stall timer: nothing can stall but the store itself, which ends the subscription on close).
  const connectLocal = async (local: LocalEndpoint, attempt: number): Promise<Outcome> => {
    let token: string | undefined;
    let subscription: { close(): void } | undefined;
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    const onAbort = (): void => ended();
    try {
      token = await options.client.token();
      try {
        subscription = await local.stream(searchParams(streamQuery), token, lastId, {
          frame: (data, id) =>
            handle(id === undefined ? { data, event: undefined, id: undefined } : { data, event: undefined, id }),
          end: () => ended(),
        });
      } catch (failure) {
        const reply = failure as { status?: unknown; error?: unknown };
        if (typeof reply.status !== 'number' || typeof reply.error !== 'object' || reply.error === null) throw failure;
        if (reply.status === 401 && token !== undefined) client.invalidateToken(token);
        throw errorFromBody('GET', '/events/stream', reply.status, reply.error as Record<string, unknown>);
      }
      connected(attempt);
      if (signal.aborted) return { connected: true, healthy: true };
      signal.addEventListener('abort', onAbort, { once: true });
      await end;
      return { connected: true, healthy: true };
    } catch (error) {
      return { connected: subscription !== undefined, healthy: false, error };
    } finally {
      signal.removeEventListener('abort', onAbort);
      subscription?.close();
    }
  };

  const connectOnce = async (attempt: number): Promise<Outcome> => {
    if (client.local) return connectLocal(client.local, attempt);
    const conn = new AbortController();
    const connSignal = AbortSignal.any([signal, conn.signal]);
    let stall: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(stall);
      stall = setTimeout(() => conn.abort(new Error(`no frame for ${stallMs} ms`)), stallMs);
    };
    let isConnected = false;
    let frames = 0;
    let connectedMs = 0;
    let token: string | undefined;
    arm();
    try {
      token = await options.client.token();
      const headers: Record<string, string> = { Accept: 'text/event-stream', 'Cache-Control': 'no-cache' };
      if (token !== undefined) headers.Authorization = `Bearer ${token}`;
      if (lastId !== undefined) headers['Last-Event-ID'] = lastId;
      const response = await fetch(client.baseUrl + path, { headers, signal: connSignal });
      if (!response.ok || !response.body) {
        const text = await response.text().catch(() => '');
        if (response.status === 401 && token !== undefined) client.invalidateToken(token);
        throw errorFromResponse('GET', '/events/stream', response.status, text);
      }
      isConnected = true;
      connectedMs = Date.now();
      arm();
      connected(attempt);
      const parser = createParser({
        onEvent: (message) => {
          arm();
          frames++;
          handle(message);
        },
        onComment: arm,
        maxBufferSize: MAX_FRAME_CHARS,
      });
      const decoder = new TextDecoder();
      for await (const chunk of response.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      return { connected: isConnected, healthy: frames > 0 || Date.now() - connectedMs >= stallMs };
    } catch (error) {
      const reason = conn.signal.aborted ? conn.signal.reason : error;
      return {
        connected: isConnected,
        healthy: isConnected && (frames > 0 || Date.now() - connectedMs >= stallMs),
        error: reason,
      };
    } finally {
      clearTimeout(stall);
      conn.abort();
    }
  };

  const run = async (): Promise<void> => {
    let failures = 0;
    let attempt = 0;
    while (!signal.aborted) {
      attempt++;
      const outcome = await connectOnce(attempt);
      if (signal.aborted) break;
      if (outcome.connected) attempt = 0;
      failures = outcome.healthy ? 0 : failures + 1;
      const delayMs = backoffMs({ ...backoff, jitter: true }, failures);
      if (outcome.error === undefined) logger.info('event stream ended by the server, reconnecting', { delayMs });
      else
        logger.warn('event stream lost, reconnecting', {
          delayMs,
          failures,
          error: coerceError(outcome.error).message,
        });
      await sleep(delayMs, signal);
    }
    logger.debug('event stream closed');
  };

  return {
    closed: run().catch((error: unknown) => logger.error('event stream reader failed', { error: coerceError(error) })),
  };
}
