// `GET /events/stream`: Server-Sent Events of the embedded store.
//
// A connection is REPLAYING (sending stored events after its cursor, page by page, waiting for
// 'drain' between pages) until a page comes back short; from that same tick on it is LIVE (each
// published event is written directly). Both paths advance one cursor and skip seq <= cursor, so
// the seam between replay and live has no gap and no duplicate. A LIVE consumer whose unsent
// buffer grows past the cap is disconnected (it may resume with Last-Event-ID) instead of letting
// memory grow. A cursor older than retention (or newer than anything stored) first gets a
// `{"type":"stream.gap"}` frame so the client knows to rescan.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import type { Principal } from './auth.js';
import { sseFrame, type EventLog, type StoredEvent } from './event-log.js';
import { single } from './validate.js';

/** The set of open streams. */
export interface SseHub {
  open(req: IncomingMessage, res: ServerResponse, principal: Principal, query: URLSearchParams): void;
  /** Ends every stream (store shutdown). */
  closeAll(): void;
  count(): number;
}

const PAGE = 256;

/** Builds the SSE hub over `log`. */
export function createSseHub(options: { log: EventLog; pingIntervalMs: number; bufferCapBytes: number; logger: Logger }): SseHub {
  const { log, logger, bufferCapBytes } = options;
  const highWater = Math.max(64 * 1024, Math.floor(bufferCapBytes / 4));
  const streams = new Set<ServerResponse>();
  let pinger: NodeJS.Timeout | undefined;

  const ensurePinger = (): void => {
    if (pinger || streams.size === 0) return;
    pinger = setInterval(() => {
      const frame = sseFrame(JSON.stringify({ type: 'ping', ts: new Date().toISOString() }));
      for (const res of streams) send(res, frame);
    }, options.pingIntervalMs);
    pinger.unref();
  };

  // Writes a frame; drops the connection when its unsent buffer is past the cap.
  const send = (res: ServerResponse, frame: string): void => {
    if (res.destroyed) return;
    res.write(frame);
    if (res.writableLength > bufferCapBytes) {
      logger.warn('sse consumer too slow, disconnecting', { bufferedBytes: res.writableLength, capBytes: bufferCapBytes });
      res.destroy();
    }
  };

  return {
    open(req, res, principal, query) {
      const schema = single(query, 'schema_name');
      const tag = single(query, 'tag');
      const matches = (event: StoredEvent): boolean =>
        (!principal.scoped || event.ownerId === principal.ownerId) &&
        (schema === undefined || event.schemaName === schema) &&
        (tag === undefined || event.tags.includes(tag));
      const rawLast = req.headers['last-event-id'] ?? query.get('last_event_id') ?? undefined;
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

      const { oldest, latest } = log.bounds();
      let cursor = latest;
      let live = true;
      let closed = false;
      if (lastHeader !== undefined && lastHeader !== '') {
        const lastId = /^\d{1,15}$/.test(lastHeader.trim()) ? Number(lastHeader.trim()) : Number.NaN;
        const firstKept = oldest ?? latest + 1;
        if (!(lastId <= latest) || lastId < firstKept - 1) {
          send(res, sseFrame(JSON.stringify({ type: 'stream.gap', last_event_id: lastHeader, oldest_event_id: oldest ?? null, latest_event_id: latest })));
          cursor = Number.isNaN(lastId) || lastId > latest ? latest : firstKept - 1;
        } else {
          cursor = lastId;
        }
        live = cursor >= latest;
      }

      const deliver = (event: StoredEvent, frame: string): void => {
        if (event.seq <= cursor) return;
        cursor = event.seq;
        if (matches(event)) send(res, frame);
      };
      // Replay writes only while the socket keeps up (below highWater), then waits for 'drain':
      // stored events are re-read from the table, never buffered here, so replay needs no cap.
      const replay = (): void => {
        if (closed || res.destroyed) return;
        const page = log.readAfter(cursor, PAGE);
        const first = page[0];
        if (first && first.seq > cursor + 1) {
          res.write(sseFrame(JSON.stringify({ type: 'stream.gap', last_event_id: String(cursor), oldest_event_id: first.seq, latest_event_id: log.bounds().latest })));
        }
        for (const event of page) {
          cursor = event.seq;
          if (matches(event)) res.write(sseFrame(event.data, event.seq));
          if (res.writableLength > highWater) {
            res.once('drain', replay);
            return;
          }
        }
        if (page.length < PAGE) live = true;
        else setImmediate(replay);
      };

      const unsubscribe = log.subscribe((event, frame) => {
        if (live) deliver(event, frame);
      });
      streams.add(res);
      ensurePinger();
      res.once('close', () => {
        closed = true;
        unsubscribe();
        streams.delete(res);
        if (streams.size === 0 && pinger) {
          clearInterval(pinger);
          pinger = undefined;
        }
      });
      if (!live) replay();
    },
    closeAll() {
      for (const res of streams) res.end();
      if (pinger) clearInterval(pinger);
      pinger = undefined;
    },
    count: () => streams.size,
  };
}
