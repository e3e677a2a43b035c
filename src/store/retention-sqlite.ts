// The SQLite side of retention (retention.ts holds the rules): the queries the rules ask, removal
// through the write path (so each removal emits its event), leases and Idempotency-Keys of removed
// records, and the freed pages given back with incremental vacuum (auto_vacuum = INCREMENTAL, db.ts).

import { statSync } from 'node:fs';
import type { BreadcrumbWrites } from './breadcrumb-writes.js';
import type { Db } from './db.js';
import type { Leases } from './leases.js';
import type { RetentionRow, RetentionStorage } from './retention.js';

/** Most free pages one sweep gives back. */
const VACUUM_PAGES = 4096;

/** The retention queries over the SQLite store `db`. */
export function sqliteRetentionStorage(db: Db, writes: BreadcrumbWrites, leases: Leases): RetentionStorage {
  const page = db.prepare(
    'SELECT write_seq, id, owner_id, updated_ms, context, tags, ttl FROM breadcrumbs WHERE schema_name = ? AND write_seq > ? ORDER BY write_seq LIMIT ?',
  );
  const writers = db
    .prepare(
      `WITH RECURSIVE w(a) AS (SELECT (SELECT min(created_by) FROM breadcrumbs) UNION ALL
      SELECT (SELECT min(created_by) FROM breadcrumbs WHERE created_by > w.a) FROM w WHERE w.a IS NOT NULL)
      SELECT a FROM w WHERE a IS NOT NULL LIMIT ?`,
    )
    .pluck();
  const pageOf = db.prepare(
    'SELECT write_seq, id, owner_id, updated_ms, context, tags, ttl, schema_name FROM breadcrumbs WHERE created_by = ? AND write_seq > ? ORDER BY write_seq LIMIT ?',
  );
  const byId = db.prepare('SELECT write_seq, owner_id FROM breadcrumbs WHERE id = ?');
  const leaseState = db.prepare('SELECT state FROM leases WHERE name = ?').pluck();
  const hasTag = db.prepare('SELECT 1 FROM breadcrumb_tags WHERE tag = ? LIMIT 1').pluck();
  const pruneKeys =
    db.prepare(`DELETE FROM idempotency_keys WHERE key IN (SELECT k.key FROM idempotency_keys k WHERE k.created_at < ?
    AND NOT EXISTS (SELECT 1 FROM breadcrumbs b WHERE b.id = k.breadcrumb_id) LIMIT ?)`);
  // Tombstones (./tombstones.ts) last as long as the Idempotency-Keys of removed records.
  const pruneTombstones = db.prepare(
    'DELETE FROM removed_requests WHERE id IN (SELECT id FROM removed_requests WHERE removed_at < ? LIMIT ?)',
  );
  const pageCount = db.prepare('PRAGMA page_count').pluck();
  const freeCount = db.prepare('PRAGMA freelist_count').pluck();
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  return {
    page: (schema, afterSeq, limit) => page.all(schema, afterSeq, limit) as RetentionRow[],
    writers: (limit) => writers.all(limit) as string[],
    pageOf: (writer, afterSeq, limit) => pageOf.all(writer, afterSeq, limit) as RetentionRow[],
    record: (id) => byId.get(id) as { write_seq: number; owner_id: string } | undefined,
    leaseState: (name) => leaseState.get(name) as string | undefined,
    tagged: (tag) => hasTag.get(tag) !== undefined,
    remove: (seqs, reason) => writes.removeRows(seqs, reason),
    pruneLeases: (limit, now) => leases.pruneOrphans(limit, now),
    pruneKeys(beforeIso, limit) {
      pruneTombstones.run(beforeIso, limit);
      return pruneKeys.run(beforeIso, limit).changes;
    },
    reclaim() {
      const free = freeCount.get() as number;
      if (free <= 0 || db.memory) return 0;
      db.pragma(`incremental_vacuum(${Math.min(free, VACUUM_PAGES)})`);
      return Math.min(free, VACUUM_PAGES);
    },
    sizes() {
      let walBytes = 0;
      if (!db.memory) {
        try {
          walBytes = statSync(`${db.name}-wal`).size;
        } catch {
          walBytes = 0;
        }
      }
      return {
        dbBytes: (pageCount.get() as number) * pageSize,
        freeBytes: (freeCount.get() as number) * pageSize,
        walBytes,
      };
    },
  };
}
