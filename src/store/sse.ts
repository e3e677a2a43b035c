// `GET /events/stream`: Server-Sent Events of the embedded store.
//
// By default a stream is exactly upstream's: `data:` frames only, `breadcrumb.updated` events and
// `ping` — no `id:` lines, no resume, no other event types, and upstream's own query parameters
// (`schema_name`, `tag`, `agent_id`, `filters`) are ignored as upstream ignores them. Our
// extensions are opt-in with `x_ext` (comma-separated; docs/compat.md):
//   deleted  `breadcrumb.deleted` events (delete and TTL expiry)
//   ids      `id:` lines and resume from `Last-Event-ID` (or `?last_event_id=`)
//   gap      a `{"type":"stream.gap"}` frame when a resume point is older than retention
// and our filters are `x_schema_name` / `x_tag`.
//
// A resuming connection is REPLAYING (stored events after its cursor, a bounded page at a time,
// continuing within the page after each 'drain' — never re-reading it) until it has caught up
// with the latest committed seq; from that same tick on it is LIVE (each published event is
// written directly). Both paths advance one cursor and skip seq <= cursor, so the seam has no
// gap and no duplicate. A LIVE consumer whose unsent buffer grows past the cap is disconnected.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import type { Principal } from './auth.js';
import type { MaybePromise } from './backend.js';
import { sseFrame, type EventLog, type StoredEvent } from './event-log.js';
import { httpErrors } from './http-util.js';
import { single } from './validate.js';

/** The set of open streams. */
export interface SseHub {
  /** Validates the query (throws 400 before any byte is sent), then streams until the client leaves. */
  open(req: IncomingMessage, res: ServerResponse, principal: Principal, query: URLSearchParams): void;
  /**
   * Subscribes `sink` to committed events as a stream opened with `query` (x_ext, x_schema_name,
   * x_tag) and Last-Event-ID `lastEventId` would see them; returns the unsubscribe function.
   */
  subscribe(
    principal: Principal,
    query: URLSearchParams,
    lastEventId: string | undefined,
    sink: StreamSink,
  ): () => void;
  /** Counts an in-process subscription as a stream until the returned function is called; `end` runs at store shutdown. */
  track(end: () => void): () => void;
  /** Ends every stream (store shutdown). */
  closeAll(): void;
  count(): number;
}

/** Where a subscription delivers: matched events (live ones with their ready-made frames), gap notices, and backpressure. */
export interface StreamSink {
  event(event: StoredEvent, frameWithId?: string, plainFrame?: string): void;
  /** The JSON data of a `stream.gap` notice. */
  gap(data: string): void;
  /** Bytes (or events) delivered but not yet consumed. */
  buffered(): number;
  /** Calls `resume` once the sink has room again (after `buffered()` passed the replay high-water mark). */
  onDrain(resume: () => void): void;
  destroyed(): boolean;
  /** The stored events could not be read (a database error): the subscription is over. */
  fail?(): void;
}

/** Stream extensions a client may ask for with `x_ext`. */
export const STREAM_EXTENSIONS = ['deleted', 'ids', 'gap'] as const;
export type StreamExtension = (typeof STREAM_EXTENSIONS)[number];

/**
 * What the hub reads events from: SQLite's event log (synchronous) or PostgreSQL's (pg/events.ts:
 * the stored page and bounds come through a promise; live events are published in seq order).
 */
export type EventFeed = Pick<EventLog, 'latestSeq' | 'subscribe'> & {
  readAfter(afterSeq: number, limit: number, maxBytes?: number): MaybePromise<StoredEvent[]>;
  bounds(): MaybePromise<{ oldest: number | undefined; latest: number }>;
};

const PAGE = 256;
const PAGE_BYTES = 1024 * 1024;

/** Parses `x_ext`; an unknown name is a 400 naming it. */
export function parseExtensions(query: URLSearchParams): Set<StreamExtension> {
  const raw = single(query, 'x_ext');
  const out = new Set<StreamExtension>();
  for (const part of (raw ?? '').split(',')) {
    const name = part.trim();
    if (name === '') continue;
    if (!(STREAM_EXTENSIONS as readonly string[]).includes(name)) {
      throw httpErrors.invalidQuery(
        `x_ext names an unknown stream extension ${JSON.stringify(name)} (known: ${STREAM_EXTENSIONS.join(', ')})`,
      );
    }
    out.add(name as StreamExtension);
  }
  return out;
}

/** Builds the SSE hub over `log`. */
export function createSseHub(options: {
  log: EventFeed;
  pingIntervalMs: number;
  bufferCapBytes: number;
  logger: Logger;
}): SseHub {
  const { log, logger, bufferCapBytes } = options;
  // Replay writes at most this much ahead of a reader per turn, so many replaying readers share
  // the event loop in small slices (and hold little memory each).
  const highWater = Math.min(256 * 1024, Math.max(64 * 1024, Math.floor(bufferCapBytes / 4)));
  const streams = new Set<ServerResponse>();
  let pinger: NodeJS.Timeout | undefined;
  const locals = new Set<() => void>();

  const ensurePinger = (): void => {
    if (pinger || streams.size === 0) return;
    pinger = setInterval(() => {
      // Upstream's ping: RFC 3339 to the second, `Z` suffix.
      const frame = sseFrame(JSON.stringify({ type: 'ping', ts: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') }));
      for (const res of streams) send(res, frame);
    }, options.pingIntervalMs);
    pinger.unref();
  };

  // Writes a frame; drops the connection when its unsent buffer is past the cap.
  const send = (res: ServerResponse, frame: string): void => {
    if (res.destroyed) return;
    res.write(frame);
    if (res.writableLength > bufferCapBytes) {
      logger.warn('sse consumer too slow, disconnecting', {
        bufferedBytes: res.writableLength,
        capBytes: bufferCapBytes,
      });
      res.destroy();
    }
  };

  // The subscription core, shared by SSE and the in-process transport (local.ts): filters, resume
  // from a last id with gap notices, paged replay with backpressure, then live delivery.
  const subscribe = (
    principal: Principal,
    query: URLSearchParams,
    lastHeader: string | undefined,
    sink: StreamSink,
  ): (() => void) => {
    const ext = parseExtensions(query);
    const schema = single(query, 'x_schema_name');
    const tag = single(query, 'x_tag');
    const matches = (event: StoredEvent): boolean =>
      (event.type !== 'breadcrumb.deleted' || ext.has('deleted')) &&
      (!principal.scoped || event.ownerId === principal.ownerId) &&
      (schema === undefined || event.schemaName === schema) &&
      (tag === undefined || event.tags.includes(tag));
    const gapData = (last: string, oldest: number | null, latest: number): string =>
      JSON.stringify({ type: 'stream.gap', last_event_id: last, oldest_event_id: oldest, latest_event_id: latest });
    let cursor = log.latestSeq();
    let live = true;
    let closed = false;
    // Where a resume starts, from the retained bounds (a gap notice when the point is gone).
    const resumeFrom = (bounds: { oldest: number | undefined; latest: number }, lastHeader: string): void => {
      const { oldest, latest } = bounds;
      const lastId = /^\d{1,15}$/.test(lastHeader.trim()) ? Number(lastHeader.trim()) : Number.NaN;
      const firstKept = oldest ?? latest + 1;
      if (!(lastId <= latest) || lastId < firstKept - 1) {
        if (ext.has('gap')) sink.gap(gapData(lastHeader, oldest ?? null, latest));
        cursor = Number.isNaN(lastId) || lastId > latest ? latest : firstKept - 1;
      } else {
        cursor = lastId;
      }
    };
    // A promised bounds (PostgreSQL) holds the stream in replay until it is known.
    let pendingBounds: Promise<{ oldest: number | undefined; latest: number }> | undefined;
    if (ext.has('ids') && lastHeader !== undefined && lastHeader !== '') {
      const bounds = log.bounds();
      if (bounds instanceof Promise) {
        pendingBounds = bounds;
        live = false;
      } else {
        resumeFrom(bounds, lastHeader);
        live = cursor >= bounds.latest;
      }
    }

    // Replay writes while the sink keeps up (below highWater), then waits for its drain and
    // continues in the same page; a page holds at most PAGE events and about PAGE_BYTES.
    let page: StoredEvent[] = [];
    let index = 0;
    const failed = (error: unknown): void => {
      logger.warn('event replay failed; ending the stream', {
        error: error instanceof Error ? error.message : String(error),
      });
      closed = true;
      sink.fail?.();
    };
    const replay = (): void => {
      if (closed || sink.destroyed()) return;
      if (index >= page.length) {
        if (cursor >= log.latestSeq()) {
          live = true;
          page = [];
          return;
        }
        const read = log.readAfter(cursor, PAGE, PAGE_BYTES);
        if (read instanceof Promise) {
          read.then((events) => {
            if (closed) return;
            // Events past the cursor arrived live while the page was read: keep only the rest.
            page = events.filter((event) => event.seq > cursor);
            index = 0;
            if (page.length === 0 && events.length > 0) return replay();
            continueWith();
          }, failed);
          return;
        }
        page = read;
        index = 0;
        continueWith();
        return;
      }
      writePage();
    };
    const continueWith = (): void => {
      const first = page[0];
      if (!first) {
        live = true;
        return;
      }
      if (first.seq > cursor + 1 && ext.has('gap')) sink.gap(gapData(String(cursor), first.seq, log.latestSeq()));
      writePage();
    };
    const writePage = (): void => {
      while (index < page.length) {
        const event = page[index++] as StoredEvent;
        cursor = event.seq;
        if (matches(event)) sink.event(event);
        if (sink.buffered() > highWater) {
          sink.onDrain(replay);
          return;
        }
      }
      setImmediate(replay);
    };

    const unsubscribe = log.subscribe((event, frameWithId, plain) => {
      if (!live || event.seq <= cursor) return;
      cursor = event.seq;
      if (matches(event)) sink.event(event, frameWithId, plain);
    });
    if (pendingBounds !== undefined) {
      const header = lastHeader as string;
      pendingBounds.then((bounds) => {
        if (closed) return;
        resumeFrom(bounds, header);
        replay();
      }, failed);
    } else if (!live) replay();
    return () => {
      closed = true;
      page = [];
      unsubscribe();
    };
  };

  return {
    subscribe,
    open(req, res, principal, query) {
      // Every 400 before the first byte: the subscription parses these again, they cannot fail then.
      const ext = parseExtensions(query);
      single(query, 'x_schema_name');
      single(query, 'x_tag');
      const withIds = ext.has('ids');
      const rawLast = withIds ? (req.headers['last-event-id'] ?? query.get('last_event_id') ?? undefined) : undefined;
      const lastHeader = Array.isArray(rawLast) ? rawLast[0] : rawLast;

      req.socket.setNoDelay(true);
      req.socket.setTimeout(0);
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      res.flushHeaders();

      const stop = subscribe(principal, query, lastHeader, {
        // Replayed frames are written as they come (bounded by highWater); live ones go through the cap.
        event: (event, frameWithId, plain) => {
          const frame =
            frameWithId !== undefined
              ? withIds
                ? frameWithId
                : (plain as string)
              : withIds
                ? sseFrame(event.data, event.seq)
                : sseFrame(event.data);
          if (frameWithId === undefined) res.write(frame);
          else send(res, frame);
        },
        gap: (data) => send(res, sseFrame(data)),
        buffered: () => res.writableLength,
        onDrain: (resume) => res.once('drain', resume),
        destroyed: () => res.destroyed,
        fail: () => res.destroy(),
      });
      streams.add(res);
      ensurePinger();
      res.once('close', () => {
        stop();
        streams.delete(res);
        if (streams.size === 0 && pinger) {
          clearInterval(pinger);
          pinger = undefined;
        }
      });
    },
    track(end) {
      locals.add(end);
      return () => locals.delete(end);
    },
    closeAll() {
      for (const res of streams) res.end();
      for (const end of [...locals]) end();
      if (pinger) clearInterval(pinger);
      pinger = undefined;
    },
    count: () => streams.size + locals.size,
  };
}
