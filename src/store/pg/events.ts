// The PostgreSQL event log: a durable `events` table shared by every replica, and per replica a
// pump that publishes committed events to its own SSE streams in seq order.
//
// Order: a write first locks the one `event_clock` row (UPDATE … RETURNING, held until the
// transaction ends); each append then takes the next seq from that same row. So seqs are handed
// out in commit order without holes (a rolled-back write rolls its seqs back too), and the
// committed seqs any reader sees are always a prefix (later seqs cannot commit while an earlier
// one is in flight). The row also carries the last `updated_at` milliseconds, so timestamps never
// go backwards across replicas either. The cost: appends (not reads) are serialised, one commit
// at a time.
//
// Delivery: the writing transaction sends NOTIFY `tools_runner_events` with its lock (delivered
// only on commit). Each replica LISTENs on a dedicated connection and, on a notification, after its own
// commits, and every `pollMs` as a safety net (a dropped LISTEN connection, a missed NOTIFY),
// reads `seq > latest published` in order and publishes each event once. Streams resume from the
// table with Last-Event-ID exactly as on SQLite (sse.ts): at-least-once across reconnects.

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
import { openClient } from './db.js';

/** The NOTIFY channel of committed events. */
export const EVENT_CHANNEL = 'tools_runner_events';

const PUMP_PAGE = 500;
const PUBLISH_WAIT_MS = 5000;
const PRUNE_EVERY = 128;

/** The event log of one replica. */
export interface PgEventLog extends EventFeed {
  /**
   * Inside a write transaction: takes the append lock, queues the NOTIFY other replicas wake on
   * (PostgreSQL sends it at commit, and never for a rolled-back transaction) and returns the write
   * time (monotonic across replicas) — one round trip.
   */
  lock(client: pg.PoolClient, nowMs: number): Promise<{ ms: number; iso: string }>;
  /** Inside the same transaction, after `lock`: inserts the event with the next seq. */
  append(client: pg.PoolClient, input: EventInput): Promise<StoredEvent>;
  /** Like `append` for several events at once (consecutive seqs, in the given order), one round trip. */
  appendMany(client: pg.PoolClient, inputs: EventInput[]): Promise<StoredEvent[]>;
  /** After a local commit: publish what is new now. */
  kick(): void;
  /**
   * After a local commit of event `seq`: resolves once this replica's streams have it (so a write
   * answers after its own replica published it, as on SQLite), or after PUBLISH_WAIT_MS when the
   * database cannot be read meanwhile (the event is committed; the pump delivers it later).
   */
  published(seq: number): Promise<void>;
  /** Deletes events older than the retention (also done inside every PRUNE_EVERY-th append). */
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
}): Promise<PgEventLog> {
  const { pool, url, retention, logger } = options;
  const listeners = new Set<EventListener>();
  let latest =
    (await pool.query<{ seq: number }>('SELECT last_seq AS seq FROM event_clock WHERE id = 1')).rows[0]?.seq ?? 0;
  let closed = false;
  let pumping: Promise<void> | undefined;
  let again = false;

  const waiters: Array<{ seq: number; resolve: () => void }> = [];
  const settle = (): void => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const waiter = waiters[i] as { seq: number; resolve: () => void };
      if (waiter.seq <= latest) {
        waiters.splice(i, 1);
        waiter.resolve();
      }
    }
  };

  const publish = (event: StoredEvent): void => {
    latest = event.seq;
    if (listeners.size === 0) return;
    const frame = sseFrame(event.data, event.seq);
    const plain = sseFrame(event.data);
    for (const listener of listeners) listener(event, frame, plain);
  };

  const prune = async (): Promise<void> => {
    await pool.query('DELETE FROM events WHERE seq <= $1', [latest - retention]);
  };

  const drain = async (): Promise<void> => {
    do {
      again = false;
      for (;;) {
        const rows = (
          await pool.query<EventRow>(
            'SELECT seq, owner_id, schema_name, tags, data FROM events WHERE seq > $1 ORDER BY seq LIMIT $2',
            [latest, PUMP_PAGE],
          )
        ).rows;
        for (const row of rows) if (row.seq > latest) publish(fromRow(row));
        if (waiters.length > 0) settle();
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
    const client = openClient(url);
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
    async lock(client, nowMs) {
      const row = (
        await client.query<{ last_ms: number }>(
          `UPDATE event_clock SET last_ms = GREATEST(last_ms, $1) WHERE id = 1 RETURNING last_ms, pg_notify('${EVENT_CHANNEL}', '')`,
          [nowMs],
        )
      ).rows[0];
      const ms = row?.last_ms ?? nowMs;
      return { ms, iso: new Date(ms).toISOString() };
    },
    async append(client, input) {
      const tags = JSON.stringify(input.tags);
      const data = JSON.stringify(input);
      const seq = (
        await client.query<{ seq: number }>(
          `WITH s AS (UPDATE event_clock SET last_seq = last_seq + 1 WHERE id = 1 RETURNING last_seq)
         INSERT INTO events (seq, owner_id, schema_name, tags, data) SELECT last_seq, $1, $2, $3, $4 FROM s RETURNING seq`,
          [input.owner_id, input.schema_name, tags, data],
        )
      ).rows[0]?.seq as number;
      // Pruned inside the write, as on SQLite: the table never shrinks under a reader between two writes.
      if (seq % PRUNE_EVERY === 0) await client.query('DELETE FROM events WHERE seq <= $1', [seq - retention]);
      return {
        seq,
        type: String(input.type),
        ownerId: input.owner_id,
        schemaName: input.schema_name,
        tags: input.tags,
        data,
      };
    },
    appendMany: (client, inputs) => appendEvents(client, inputs, retention),
    kick,
    published(seq) {
      if (seq <= latest || closed) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          const index = waiters.indexOf(waiter);
          if (index !== -1) waiters.splice(index, 1);
          resolve();
        }, PUBLISH_WAIT_MS);
        const waiter = {
          seq,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        waiters.push(waiter);
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
      for (const waiter of waiters.splice(0)) waiter.resolve();
      clearInterval(poll);
      if (retryTimer) clearTimeout(retryTimer);
      await pumping;
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => {});
    },
  };
}

/** Appends `inputs` with consecutive seqs in one statement (inside a write transaction, after `lock`). */
async function appendEvents(client: pg.PoolClient, inputs: EventInput[], retention: number): Promise<StoredEvent[]> {
  if (inputs.length === 0) return [];
  const datas = inputs.map((input) => JSON.stringify(input));
  const tags = inputs.map((input) => JSON.stringify(input.tags));
  const first = (
    await client.query<{ first: number }>(
      `WITH s AS (UPDATE event_clock SET last_seq = last_seq + $1 WHERE id = 1 RETURNING last_seq),
       i AS (INSERT INTO events (seq, owner_id, schema_name, tags, data)
         SELECT s.last_seq - $1 + u.n, u.owner_id, u.schema_name, u.tags, u.data
         FROM s, unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(owner_id, schema_name, tags, data, n))
       SELECT last_seq - $1 + 1 AS first FROM s`,
      [inputs.length, inputs.map((i) => i.owner_id), inputs.map((i) => i.schema_name), tags, datas],
    )
  ).rows[0]?.first as number;
  const lastSeq = first + inputs.length - 1;
  if (Math.floor(lastSeq / PRUNE_EVERY) > Math.floor((first - 1) / PRUNE_EVERY))
    await client.query('DELETE FROM events WHERE seq <= $1', [lastSeq - retention]);
  return inputs.map((input, index) => ({
    seq: first + index,
    type: String(input.type),
    ownerId: input.owner_id,
    schemaName: input.schema_name,
    tags: input.tags,
    data: datas[index] as string,
  }));
}
