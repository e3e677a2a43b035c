// The full-text search index (db.ts `breadcrumbs_fts`), kept up to date in batches: a breadcrumb
// write does not index its row in its own transaction; the rows written since the last batch are
// indexed together FTS_DELAY_MS later, and always before a search reads the index (search.ts), so a
// search sees every write that was answered before it.
//
// Why: FTS5 ends every transaction that touched the index by flushing what it holds into a new
// segment, and merges segments as they pile up. Indexed inline, each request and each answer paid a
// segment of its own at a low call rate, and every group commit paid one at a high rate.
//
// Which rows are indexed is one number, the mark: every breadcrumb row whose write_seq is at or below
// it is in the index, and no row above it is. Each write gives its row a write_seq above every
// earlier one (db.ts), so a new or changed row starts out above the mark. The mark is stored in
// `meta` in the same transaction as the batch it covers, so after a crash it still describes the
// index exactly, and the rows above it are indexed after the next start. A row that leaves (update,
// delete, expiry, retention) is taken out of the index only when it is at or below the mark: FTS5's
// external-content 'delete' must name exactly a row it indexed, or the index is corrupted.

import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Db } from './db.js';

/** The `meta` key of the mark. */
export const FTS_MARK_KEY = 'fts_indexed_through';
/** How long after a write its row waits to be indexed with the others written meanwhile. */
export const FTS_DELAY_MS = 250;
/** Most rows indexed in one transaction; a longer backlog is indexed in several, the event loop running between them. */
export const FTS_BATCH_ROWS = 512;
/**
 * Most text (title, description, context) indexed in one transaction, at least one row: FTS5 tokenises
 * some tens of MB a second, so a batch of large records written together holds the event loop for
 * milliseconds, not for the whole backlog.
 */
export const FTS_BATCH_BYTES = 256 * 1024;

/** A row's indexed values, as stored. */
export interface IndexedRow {
  write_seq: number;
  title: string;
  description: string | null;
  context: string;
}

export interface SearchIndex {
  /** Inside a write's transaction: `row` (its stored values) is leaving; it leaves the index if it is in it. */
  forget(row: IndexedRow): void;
  /** After a write that added or changed rows: they are indexed within the delay (FTS_DELAY_MS by default). */
  schedule(): void;
  /** Indexes every row not indexed yet, now (before a search, and at close). */
  catchUp(): void;
  /** Indexes what is left and stops the timer; the database stays open. */
  close(): void;
}

/** The mark a database must get when every row it holds is indexed (a new one, or one indexed inline before). */
export function markEverythingIndexed(db: Db): void {
  const last = db.prepare('SELECT COALESCE(max(write_seq), 0) FROM breadcrumbs').pluck().get() as number;
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(
    FTS_MARK_KEY,
    String(last),
  );
}

export function createSearchIndex(db: Db, logger: Logger, delayMs = FTS_DELAY_MS): SearchIndex {
  const markText = db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(FTS_MARK_KEY) as string | undefined;
  const stored = Number(markText);
  if (markText === undefined || !Number.isSafeInteger(stored) || stored < 0) {
    // db.ts writes the mark with the schema; a file without one was not opened by openDatabase
    throw new Error(`the store database has no valid search index mark (${FTS_MARK_KEY} = ${String(markText)})`);
  }
  let through = stored;
  // whether rows may be waiting: set by every write, cleared when a batch finds none (a search then costs nothing here)
  let pending = true;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const nextRows =
    db.prepare(`SELECT write_seq AS seq, length(title) + COALESCE(length(description), 0) + length(context) AS size
    FROM breadcrumbs WHERE write_seq > ? ORDER BY write_seq LIMIT ?`);
  // the last row of the next batch: FTS_BATCH_ROWS rows, or fewer once they hold FTS_BATCH_BYTES
  const lastOfBatch = (from: number, limit: number): number | undefined => {
    let last: number | undefined;
    let bytes = 0;
    for (const row of nextRows.iterate(from, limit) as IterableIterator<{ seq: number; size: number }>) {
      if (last !== undefined && bytes + row.size > FTS_BATCH_BYTES) break;
      last = row.seq;
      bytes += row.size;
    }
    return last;
  };
  const indexRange = db.prepare(`INSERT INTO breadcrumbs_fts (rowid, title, description, context)
    SELECT write_seq, title, description, context FROM breadcrumbs WHERE write_seq > ? AND write_seq <= ?`);
  const setMark = db.prepare('UPDATE meta SET value = ? WHERE key = ?');
  const removeRow = db.prepare(
    `INSERT INTO breadcrumbs_fts (breadcrumbs_fts, rowid, title, description, context) VALUES ('delete', ?, ?, ?, ?)`,
  );

  // One batch: the next rows above the mark (lastOfBatch's bounds), and the mark moved past them.
  const batchTx = db.transaction((from: number): number | undefined => {
    const to = lastOfBatch(from, FTS_BATCH_ROWS);
    if (to === undefined) return undefined;
    indexRange.run(from, to);
    setMark.run(String(to), FTS_MARK_KEY);
    return to;
  });

  /**
   * Indexes one batch; true when there may be more. Never inside another transaction (its mark would
   * not be final): then nothing is done now, and `pending` keeps the rows for the next write or search.
   */
  const indexBatch = (): boolean => {
    if (!pending || db.inTransaction) return false;
    const to = batchTx(through);
    if (to === undefined) {
      pending = false;
      return false;
    }
    through = to;
    return true;
  };

  const run = (): void => {
    timer = undefined;
    // a store whose start failed closes its database without closing the index
    if (closed || !db.open) return;
    let more: boolean;
    try {
      more = indexBatch();
    } catch (error) {
      logger.warn('indexing breadcrumbs for search failed; trying again', {
        error: coerceError(error).message,
        retryInMs: delayMs,
      });
      schedule();
      return;
    }
    // the rest of a long backlog after other work had its turn; the last pass finds nothing and stops
    if (more) {
      timer = setTimeout(run, 0);
      timer.unref();
    }
  };

  function schedule(): void {
    pending = true;
    if (timer !== undefined || closed) return;
    timer = setTimeout(run, delayMs);
    // rows left at exit are indexed at close, or after the next start
    timer.unref();
  }

  const catchUp = (): void => {
    while (indexBatch());
  };

  // rows a crash left above the mark, if any: the first batch finds them (or finds none and clears `pending`)
  schedule();

  return {
    forget(row) {
      if (row.write_seq <= through) removeRow.run(row.write_seq, row.title, row.description, row.context);
    },
    schedule,
    catchUp,
    close() {
      clearTimeout(timer);
      timer = undefined;
      closed = true;
      try {
        catchUp();
      } catch (error) {
        logger.warn('indexing breadcrumbs for search at close failed; they are indexed at the next start', {
          error: coerceError(error).message,
        });
      }
    },
  };
}
