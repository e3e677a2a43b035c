// The PostgreSQL side of retention (../retention.ts holds the rules): the queries the rules ask,
// removal through the write path (one transaction per chunk, events appended together), the
// Idempotency-Keys of removed records, and the database's size.
//
// Replicas: each sweep first takes a session advisory lock with pg_try_advisory_lock on a client
// of its own; a replica that finds it taken skips that sweep (another one is doing the work).
// Removal is by write_seq with FOR UPDATE SKIP LOCKED, so even without the lock two sweeps never
// remove one record twice, and a record written again since it was judged is kept.
// Space: PostgreSQL reuses the space of deleted rows once autovacuum has processed the table (no
// VACUUM FULL here, it would lock the tables); `reclaim` gives nothing back itself. Leases (the
// runner's claims, ./leases.ts) are read for a request's state, and orphaned ones are pruned by
// their own SKIP LOCKED delete on the database's clock.

import type pg from 'pg';
import type { MaybePromise } from '../backend.js';
import type { DbSizes, RetentionRow, RetentionStorage } from '../retention.js';
import type { PgWrites } from './writes.js';

/** Session advisory lock of the retention sweep (an arbitrary constant of this project). */
export const RETENTION_LOCK = 7_305_250_002;

/** The retention queries over `pool`. */
export function pgRetentionStorage(
  pool: pg.Pool,
  writes: PgWrites,
  pruneOrphanLeases: (limit: number) => MaybePromise<number>,
): RetentionStorage {
  return {
    async page(schema, afterSeq, limit) {
      return (
        await pool.query<RetentionRow>(
          'SELECT write_seq, id, owner_id, updated_ms, context, tags, ttl FROM breadcrumbs WHERE schema_name = $1 AND write_seq > $2 ORDER BY write_seq LIMIT $3',
          [schema, afterSeq, limit],
        )
      ).rows;
    },
    async writers(limit) {
      return (
        await pool.query<{ a: string }>(
          `WITH RECURSIVE w(a) AS (SELECT (SELECT min(created_by) FROM breadcrumbs) UNION ALL
          SELECT (SELECT min(created_by) FROM breadcrumbs WHERE created_by > w.a) FROM w WHERE w.a IS NOT NULL)
          SELECT a FROM w WHERE a IS NOT NULL LIMIT $1`,
          [limit],
        )
      ).rows.map((row) => row.a);
    },
    async pageOf(writer, afterSeq, limit) {
      return (
        await pool.query<RetentionRow>(
          'SELECT write_seq, id, owner_id, updated_ms, context, tags, ttl, schema_name FROM breadcrumbs WHERE created_by = $1 AND write_seq > $2 ORDER BY write_seq LIMIT $3',
          [writer, afterSeq, limit],
        )
      ).rows;
    },
    async record(id) {
      return (
        await pool.query<{ write_seq: number; owner_id: string }>(
          'SELECT write_seq, owner_id FROM breadcrumbs WHERE id = $1',
          [id],
        )
      ).rows[0];
    },
    async leaseState(name) {
      // A request's lease (the runner names a lease after its request); its state, if any scope has one.
      const rows = (await pool.query<{ state: string }>('SELECT state FROM leases WHERE name = $1', [name])).rows;
      return rows.find((row) => row.state !== 'done')?.state ?? rows[0]?.state;
    },
    async tagged(tag) {
      return (await pool.query('SELECT 1 FROM breadcrumb_tags WHERE tag = $1 LIMIT 1', [tag])).rowCount !== 0;
    },
    remove: (seqs, reason) => writes.removeRows(seqs, reason),
    pruneLeases: (limit) => pruneOrphanLeases(limit),
    async pruneKeys(beforeIso, limit) {
      const result = await pool.query(
        `DELETE FROM idempotency_keys WHERE key IN (SELECT k.key FROM idempotency_keys k WHERE k.created_at < $1
          AND NOT EXISTS (SELECT 1 FROM breadcrumbs b WHERE b.id = k.breadcrumb_id) LIMIT $2)`,
        [beforeIso, limit],
      );
      await pool.query(
        'DELETE FROM removed_requests WHERE id IN (SELECT id FROM removed_requests WHERE removed_at < $1 LIMIT $2)',
        [beforeIso, limit],
      );
      return result.rowCount ?? 0;
    },
    reclaim: () => 0,
    async sizes(): Promise<DbSizes> {
      const row = (await pool.query<{ bytes: number }>('SELECT pg_database_size(current_database()) AS bytes')).rows[0];
      return { dbBytes: row?.bytes ?? 0, freeBytes: 0, walBytes: 0 };
    },
    async exclusive(sweep) {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        const got = (await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock($1) AS got', [RETENTION_LOCK]))
          .rows[0]?.got;
        if (!got) return undefined;
        try {
          return await sweep();
        } finally {
          await client.query('SELECT pg_advisory_unlock($1)', [RETENTION_LOCK]).catch((error: Error) => {
            broken = error; // a connection that cannot unlock is discarded (its session, and the lock, end)
          });
        }
      } finally {
        client.release(broken);
      }
    },
  };
}
