// The PostgreSQL event log: a durable `events` table shared by every replica, and per replica a
// pump that publishes committed events to its own SSE streams in seq order.
//
// Order without a shared lock: a write inserts its event with an id from the `event_ids` sequence
// and no seq, holding nothing another replica waits for (a replica paused or cut off inside a
// write stalls nobody). After the commit, `tools_runner_relay` (db.ts, migration 4: one statement,
// so its advisory lock and the event_clock row are held only while PostgreSQL runs it, never
// across a client round trip) numbers the committed, unnumbered events in id order with the next
// seqs and sends NOTIFY `tools_runner_events`. Seqs are thus dense, and committed in order: every
// reader sees a prefix. A write that started after another committed has a larger id, so causally
// ordered writes (the versions of one breadcrumb, a request and its answer) keep their order; only
// concurrent writes may be numbered in either order. Rolled-back events never get a seq.
//
// Delivery: each replica LISTENs on a dedicated connection and, on a notification, after its own
// commits, and every `pollMs` as a safety net (a dropped LISTEN connection, a missed NOTIFY, a
// writer that died before relaying), relays, then reads `seq > latest published` in order and
// publishes each event once. Streams resume from the table with Last-Event-ID exactly as on
// SQLite (sse.ts): at-least-once across reconnects. Write times come from the database's clock.

import type pg from 'pg';
import type { Logger } from '../../logger.js';
import {
  fromRow,
  sseFrame,
  type EventInput,
  type EventListener,
  type EventRow,
  type StoredEvent,
} from '../event-log.js';
import type { EventFeed } from '../sse.js';
import { BoundedSet } from '../../bounded.js';
import { DEFAULT_PG_SESSION, openClient, type PgSession } from './db.js';

/** The NOTIFY channel of committed events. */
export const EVENT_CHANNEL = 'tools_runner_events';

const PUMP_PAGE = 500;
const PUBLISH_WAIT_MS = 5000;
const PUBLISHED_IDS = 4096;

/** The event log of one replica. */
export interface PgEventLog extends EventFeed {
  /** The write time of a transaction: the database's clock (one clock for every replica). */
  now(client: pg.PoolClient): Promise<{ ms: number; iso: string }>;
  /** Inside a write transaction: inserts the event (no seq yet) and returns its id. */
  append(client: pg.PoolClient, input: EventInput): Promise<number>;
  /** Like `append` for several events at once, one round trip; returns the largest id. */
  appendMany(client: pg.PoolClient, inputs: EventInput[]): Promise<number>;
  /** After a local commit: publish what is new now. */
  kick(): void;
  /**
   * After a local commit of event `id`: resolves once this replica's streams have it (so a write
   * answers after its own replica published it, as on SQLite), or after PUBLISH_WAIT_MS when the
   * database cannot be read meanwhile (the event is committed; a pump delivers it later).
   */
  published(id: number): Promise<void>;
  /** Deletes events older than the retention (also done by the relay every 128 seqs). */
  prune(): Promise<void>;
  listenerCount(): number;
  close(): Promise<void>;
}

/** Starts the log: reads the latest seq, LISTENs (reconnecting with backoff) and polls every `pollMs`. */
export async function createPgEventLog(options: {
  pool: pg.Pool;
  url: string;
  retention: number;
  logger: Logger;
  pollMs?: number;
  session?: PgSession;
}): Promise<PgEventLog> {
  const { pool, url, retention, logger } = options;
  const session = options.session ?? DEFAULT_PG_SESSION;
  const listeners = new Set<EventListener>();
  let latest =
    (await pool.query<{ seq: number }>('SELECT last_seq AS seq FROM event_clock WHERE id = 1')).rows[0]?.seq ?? 0;
  let closed = false;
  let pumping: Promise<void> | undefined;
  let again = false;

  // Writes waiting for their event (by id), and the ids published lately (a write may ask after).
  const waiters = new Map<number, () => void>();
  const publishedIds = new BoundedSet<number>(PUBLISHED_IDS);

  const publish = (event: StoredEvent, id: number): void => {
    latest = event.seq;
    publishedIds.add(id);
    waiters.get(id)?.();
    if (listeners.size === 0) return;
    const frame = sseFrame(event.data, event.seq);
    const plain = sseFrame(event.data);
    for (const listener of listeners) listener(event, frame, plain);
  };

  const prune = async (): Promise<void> => {
    await pool.query('DELETE FROM events WHERE seq <= $1', [latest - retention]);
  };

  // The relay is one simple-protocol statement (one message): the server runs and commits it whole.
  const relaySql = `SELECT tools_runner_relay(${PUMP_PAGE}, ${Math.floor(retention)}) AS last`;
  const drain = async (): Promise<void> => {
    do {
      again = false;
      for (;;) {
        await pool.query(relaySql);
        const rows = (
          await pool.query<EventRow & { id: number }>(
            'SELECT seq, id, owner_id, schema_name, tags, data FROM events WHERE seq > $1 ORDER BY seq LIMIT $2',
            [latest, PUMP_PAGE],
          )
        ).rows;
        for (const row of rows) if (row.seq > latest) publish(fromRow(row), row.id);
        if (rows.length < PUMP_PAGE || closed) break;
      }
    } while (again && !closed);
  };

  // One pump at a time; a kick while it runs makes it read once more.
  const kick = (): void => {
    if (closed) return;
    if (pumping) {
      again = true;
      return;
    }
    pumping = drain()
      .catch((error: Error) =>
        logger.warn('reading new events from PostgreSQL failed; retrying on the next notification or poll', {
          error: error.message,
        }),
      )
      .finally(() => {
        pumping = undefined;
        if (again) kick();
      });
  };

  // The LISTEN connection; on loss, reconnect with backoff and catch up.
  let listener: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let backoff = 250;
  const connect = async (): Promise<void> => {
    const client = openClient(url, session);
    client.on('notification', () => kick());
    client.on('error', (error) => {
      logger.warn('the PostgreSQL event listener connection failed; reconnecting', { error: error.message });
      lost(client);
    });
    client.on('end', () => lost(client));
    await client.connect();
    await client.query(`LISTEN ${EVENT_CHANNEL}`);
    if (closed) {
      await client.end().catch(() => {});
      return;
    }
    listener = client;
    backoff = 250;
    if (reconnecting) await rewound();
    reconnecting = true;
    kick();
  };
  // After a reconnect (a database restart or failover): a database that lost committed events
  // (restored from a backup, promoted a lagging standby) hands out their seqs again. Publishing
  // resumes from its real end, so new events are not mistaken for ones already sent.
  let reconnecting = false;
  const rewound = async (): Promise<void> => {
    const newest =
      (await pool.query<{ seq: number }>('SELECT last_seq AS seq FROM event_clock WHERE id = 1')).rows[0]?.seq ?? 0;
    if (newest < latest) {
      logger.warn(
        'the event log is behind what this replica published (database restored or failed over with data loss): resuming from its end; streams may miss the lost events',
        { published: latest, databaseLatest: newest },
      );
      latest = newest;
    }
  };
  const lost = (client: pg.Client): void => {
    if (listener !== client && listener !== undefined) return;
    listener = undefined;
    client.end().catch(() => {});
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().catch((error: Error) => {
        logger.warn('reconnecting the PostgreSQL event listener failed', { error: error.message, retryMs: backoff });
        backoff = Math.min(backoff * 2, 5000);
        lost(client);
      });
    }, backoff);
    retryTimer.unref();
  };
  await connect();
  const poll = setInterval(kick, options.pollMs ?? 1000);
  poll.unref();
  await prune();

  return {
    async now(client) {
      const ms = (
        await client.query<{ ms: number }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms')
      ).rows[0]?.ms as number;
      return { ms, iso: new Date(ms).toISOString() };
    },
    append: async (client, input) => appendEvents(client, [input]),
    appendMany: appendEvents,
    kick,
    published(id) {
      if (publishedIds.has(id) || closed) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          waiters.delete(id);
          resolve();
        };
        const timer = setTimeout(done, PUBLISH_WAIT_MS);
        waiters.set(id, done);
        kick();
      });
    },
    prune,
    async readAfter(afterSeq, limit, maxBytes) {
      if (maxBytes === undefined) {
        return (
          await pool.query<EventRow>(
            'SELECT seq, owner_id, schema_name, tags, data FROM events WHERE seq > $1 ORDER BY seq LIMIT $2',
            [afterSeq, limit],
          )
        ).rows.map(fromRow);
      }
      // Sizes first (no payloads), so a page of huge events never loads more than maxBytes of them.
      const sizes = (
        await pool.query<{ seq: number; n: number }>(
          'SELECT seq, octet_length(data) AS n FROM events WHERE seq > $1 ORDER BY seq LIMIT $2',
          [afterSeq, limit],
        )
      ).rows;
      let last: number | undefined;
      let total = 0;
      for (const row of sizes) {
        if (last !== undefined && total + row.n > maxBytes) break;
        total += row.n;
        last = row.seq;
      }
      if (last === undefined) return [];
      return (
        await pool.query<EventRow>(
          'SELECT seq, owner_id, schema_name, tags, data FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq',
          [afterSeq, last],
        )
      ).rows.map(fromRow);
    },
    latestSeq: () => latest,
    async bounds() {
      // The table's latest, not only the published one: a client resuming here with an id it got
      // from another replica is ahead of this replica's pump, not past the end of the log.
      const row = (
        await pool.query<{ oldest: number | null; newest: number | null }>(
          'SELECT min(seq) AS oldest, max(seq) AS newest FROM events',
        )
      ).rows[0];
      return { oldest: row?.oldest ?? undefined, latest: Math.max(latest, row?.newest ?? 0) };
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    listenerCount: () => listeners.size,
    async close() {
      closed = true;
      for (const done of [...waiters.values()]) done();
      clearInterval(poll);
      if (retryTimer) clearTimeout(retryTimer);
      await pumping;
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => {});
    },
  };
}

/** Inserts `inputs` (inside a write transaction) with ids from the sequence and no seq; returns the largest id. */
async function appendEvents(client: pg.PoolClient, inputs: EventInput[]): Promise<number> {
  if (inputs.length === 0) return 0;
  const rows = (
    await client.query<{ id: number }>(
      `INSERT INTO events (owner_id, schema_name, tags, data)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) RETURNING id`,
      [
        inputs.map((i) => i.owner_id),
        inputs.map((i) => i.schema_name),
        inputs.map((i) => JSON.stringify(i.tags)),
        inputs.map((i) => JSON.stringify(i)),
      ],
    )
  ).rows;
  return Math.max(...rows.map((row) => row.id));
}
