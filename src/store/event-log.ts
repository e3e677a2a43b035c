// The store's event log: the `events` table (written inside each change's transaction) and the
// in-process fan-out to connected SSE streams (called right after the commit).
//
// Writers call `append()` inside their transaction and `publish()` after it committed. Both run
// synchronously on the one Node thread, so listeners see events exactly in commit order, and a
// reader that reads the table and subscribes in the same tick can never miss or repeat one.

import type { Db } from './db.js';

/** One committed event as kept in the table (`data` is the JSON sent as the SSE `data:`). */
export interface StoredEvent {
  seq: number;
  /** The payload's `type` (`breadcrumb.updated`, or our `breadcrumb.deleted`). */
  type: string;
  ownerId: string | null;
  schemaName: string | null;
  tags: string[];
  data: string;
}

/** Fields every event carries for filtering, plus its JSON payload. */
export interface EventInput {
  /** First key, so the stored JSON starts with it (fromRow reads it back from there). */
  type: string;
  owner_id: string;
  schema_name: string | null;
  tags: string[];
  [key: string]: unknown;
}

/** Called for each committed event with its ready-made SSE frames: with our `id:` line, and upstream's plain one. */
export type EventListener = (event: StoredEvent, frameWithId: string, plainFrame: string) => void;

/** The events table and live fan-out. */
export interface EventLog {
  /** Inserts the event; MUST be called inside the write's transaction. Returns its seq. */
  append(input: EventInput): StoredEvent;
  /** Delivers a committed event to every listener; MUST be called right after the commit. */
  publish(event: StoredEvent): void;
  /** Up to `limit` events with seq > `afterSeq`, oldest first, stopping once `maxBytes` of payload are read (at least one event). */
  readAfter(afterSeq: number, limit: number, maxBytes?: number): StoredEvent[];
  /** The latest committed seq (no query). */
  latestSeq(): number;
  /** Oldest retained seq (undefined when the table is empty) and the latest committed seq. */
  bounds(): { oldest: number | undefined; latest: number };
  subscribe(listener: EventListener): () => void;
  listenerCount(): number;
}

/** Formats an SSE frame: `id:` line (our extension) when a seq is given, then `data:`. */
export function sseFrame(data: string, seq?: number): string {
  return seq === undefined ? `data: ${data}\n\n` : `id: ${seq}\ndata: ${data}\n\n`;
}

const PRUNE_EVERY = 128;

/** A row of the event table (the same columns on SQLite and PostgreSQL). */
export interface EventRow {
  seq: number;
  owner_id: string | null;
  schema_name: string | null;
  tags: string;
  data: string;
}

const TYPE_PREFIX = /^\{"type":"([^"]+)"/;

/** The stored event of a row; its type is read from the front of its JSON. */
export function fromRow(row: EventRow): StoredEvent {
  return {
    seq: row.seq,
    type: TYPE_PREFIX.exec(row.data)?.[1] ?? '',
    ownerId: row.owner_id,
    schemaName: row.schema_name,
    tags: JSON.parse(row.tags) as string[],
    data: row.data,
  };
}

/** Builds the event log over `db`, keeping at least `retention` events for resume. */
export function createEventLog(db: Db, retention: number): EventLog {
  const insert = db.prepare('INSERT INTO events (owner_id, schema_name, tags, data) VALUES (?, ?, ?, ?)');
  const prune = db.prepare('DELETE FROM events WHERE seq <= ?');
  const after = db.prepare(
    'SELECT seq, owner_id, schema_name, tags, data FROM events WHERE seq > ? ORDER BY seq LIMIT ?',
  );
  const sizes = db.prepare('SELECT seq, length(data) AS n FROM events WHERE seq > ? ORDER BY seq LIMIT ?');
  const range = db.prepare(
    'SELECT seq, owner_id, schema_name, tags, data FROM events WHERE seq > ? AND seq <= ? ORDER BY seq',
  );
  const oldestStmt = db.prepare('SELECT MIN(seq) AS seq FROM events').pluck();
  const latestStmt = db.prepare('SELECT MAX(seq) FROM events').pluck();
  const listeners = new Set<EventListener>();
  let latest = (latestStmt.get() as number | null) ?? 0;
  prune.run(latest - retention);

  return {
    append(input) {
      const tags = JSON.stringify(input.tags);
      const data = JSON.stringify(input);
      const seq = Number(insert.run(input.owner_id, input.schema_name, tags, data).lastInsertRowid);
      if (seq % PRUNE_EVERY === 0) prune.run(seq - retention);
      return {
        seq,
        type: String(input.type),
        ownerId: input.owner_id,
        schemaName: input.schema_name,
        tags: input.tags,
        data,
      };
    },
    publish(event) {
      if (event.seq > latest) latest = event.seq;
      if (listeners.size === 0) return;
      const frame = sseFrame(event.data, event.seq);
      const plain = sseFrame(event.data);
      for (const listener of listeners) listener(event, frame, plain);
    },
    readAfter(afterSeq, limit, maxBytes) {
      if (maxBytes === undefined) return (after.all(afterSeq, limit) as EventRow[]).map(fromRow);
      // Sizes first (no payloads), so a page of huge events never loads more than maxBytes of them.
      let last: number | undefined;
      let total = 0;
      for (const row of sizes.all(afterSeq, limit) as Array<{ seq: number; n: number }>) {
        if (last !== undefined && total + row.n > maxBytes) break;
        total += row.n;
        last = row.seq;
      }
      return last === undefined ? [] : (range.all(afterSeq, last) as EventRow[]).map(fromRow);
    },
    latestSeq: () => latest,
    bounds() {
      const oldest = oldestStmt.get() as number | null | undefined;
      return { oldest: oldest ?? undefined, latest };
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    listenerCount: () => listeners.size,
  };
}
