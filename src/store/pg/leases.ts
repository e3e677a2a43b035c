// The lease table on PostgreSQL: the same operations, replies and errors as ../leases.ts (read its
// header for the states), shared by every replica of the store on one database.
//
// Every change is one compare-and-set statement, so replicas racing on one lease never both win:
// acquire is `INSERT … ON CONFLICT DO UPDATE … WHERE free` (PostgreSQL locks the conflicting row
// and re-checks the WHERE on its newest version, so of two takeovers of one expired lease the
// second sees the first's live lease and changes nothing); renew, release and finish are
// `UPDATE … WHERE token/state`. Only when acquire changed nothing does a second statement read the
// row to say why (held, done, or our own live lease); if the lease turned free or vanished between
// the two statements, acquire tries again.
//
// Time is the database's clock (statement_timestamp() in milliseconds), never the replica's: all
// replicas then agree on when a lease expires, however their own clocks drift. The SQLite table
// uses its store's clock, which is the only clock there. Orphan removal locks its rows with
// FOR UPDATE SKIP LOCKED, so replicas sweeping together neither wait on each other nor delete a
// lease that another statement just took over.

import type pg from 'pg';
import type { LeasesPort } from '../backend.js';
import { HttpError } from '../http-util.js';
import { leaseBody, leaseView, type AcquireReply, type LeaseRow } from '../leases.js';

const { text, ttl, limit, rideFlag } = leaseBody;

/** The database's clock in epoch milliseconds, one value per statement. */
const NOW_MS = 'floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint';

const ACQUIRE = `INSERT INTO leases AS l (scope, name, attempt, holder, token, state, label, expires_ms, updated_ms)
  VALUES ($1, $2, 1, $3, $4, 'held', $5, ${NOW_MS} + $6, ${NOW_MS})
  ON CONFLICT (scope, name) DO UPDATE SET attempt = l.attempt + 1, holder = EXCLUDED.holder, token = EXCLUDED.token,
    state = 'held', label = EXCLUDED.label, expires_ms = EXCLUDED.expires_ms, updated_ms = EXCLUDED.updated_ms
  WHERE l.state = 'released' OR (l.state = 'held' AND l.expires_ms <= EXCLUDED.updated_ms)
  RETURNING l.attempt, l.expires_ms`;
const CURRENT = `SELECT state, holder, token, attempt, expires_ms, ${NOW_MS} AS now_ms FROM leases WHERE scope = $1 AND name = $2`;
const RENEW = `UPDATE leases SET expires_ms = ${NOW_MS} + $4, updated_ms = ${NOW_MS}
  WHERE scope = $1 AND name = $2 AND token = $3 AND state = 'held'`;
const RELEASE = `UPDATE leases SET state = 'released', expires_ms = ${NOW_MS}, updated_ms = ${NOW_MS}
  WHERE scope = $1 AND name = $2 AND token = $3 AND state = 'held'`;
const FINISH_ANY = `UPDATE leases SET state = 'done', updated_ms = ${NOW_MS} WHERE scope = $1 AND name = $2 AND state <> 'done'`;
const FINISH_MINE = `UPDATE leases SET state = 'done', updated_ms = ${NOW_MS}
  WHERE scope = $1 AND name = $2 AND token = $3 AND state <> 'done'`;
const EXPIRED = `SELECT * FROM leases WHERE scope = $1 AND state <> 'done' AND expires_ms <= ${NOW_MS}
  ORDER BY expires_ms LIMIT $2`;
const LIST = 'SELECT * FROM leases WHERE scope = $1 ORDER BY updated_ms DESC LIMIT $2';
const PRUNE_ORPHANS = `DELETE FROM leases WHERE (scope, name) IN (
  SELECT c.scope, c.name FROM leases c
  WHERE (c.state <> 'held' OR c.expires_ms <= coalesce($1::bigint, ${NOW_MS}))
    AND NOT EXISTS (SELECT 1 FROM breadcrumbs b WHERE b.id = c.name)
  LIMIT $2 FOR UPDATE SKIP LOCKED)`;

// How often acquire re-runs when the lease changed between its two statements (each retry means
// another replica just changed this lease; a handful in a row does not happen in practice).
const ACQUIRE_TRIES = 8;

/** Builds the lease operations over `pool` (the table exists: migration 2 of db.ts). */
export function createPgLeases(pool: pg.Pool): LeasesPort {
  const acquire = async (body: Record<string, unknown>): Promise<AcquireReply> => {
    const scope = text(body, 'scope');
    const name = text(body, 'name');
    const holder = text(body, 'holder');
    const token = text(body, 'token');
    const label = text(body, 'label', true);
    const ttlMs = ttl(body);
    for (let tries = 0; tries < ACQUIRE_TRIES; tries++) {
      const won = (
        await pool.query<{ attempt: number; expires_ms: number }>(ACQUIRE, [scope, name, holder, token, label, ttlMs])
      ).rows[0];
      if (won !== undefined)
        return { acquired: true, attempt: won.attempt, expires_ms: won.expires_ms, takeover: won.attempt > 1 };
      const row = (await pool.query<LeaseRow & { now_ms: number }>(CURRENT, [scope, name])).rows[0];
      if (row === undefined) continue; // removed in between (orphan sweep): insert it afresh
      if (row.state === 'done')
        return { acquired: false, state: 'done', holder: row.holder, attempt: row.attempt, expires_ms: row.expires_ms };
      if (row.state === 'held' && row.expires_ms > row.now_ms) {
        // The same token again (a retried call whose reply was lost): the same lease, while it is live.
        if (row.token === token)
          return { acquired: true, attempt: row.attempt, expires_ms: row.expires_ms, takeover: row.attempt > 1 };
        return { acquired: false, state: 'held', holder: row.holder, attempt: row.attempt, expires_ms: row.expires_ms };
      }
      // Free again already (released or expired since the insert looked): compete for it once more.
    }
    throw new HttpError(
      503,
      'unavailable',
      `lease ${JSON.stringify(name)} changed under ${ACQUIRE_TRIES} acquire attempts in a row; retry shortly`,
    );
  };

  let writes = 0;
  return {
    acquire: async (body) => {
      writes++;
      return await acquire(body);
    },
    async renew(body) {
      writes++;
      const scope = text(body, 'scope');
      const name = text(body, 'name');
      const changed = await pool.query(RENEW, [scope, name, text(body, 'token'), ttl(body)]);
      if (changed.rowCount === 1) return { ok: true, state: 'held' };
      const row = (await pool.query<LeaseRow & { now_ms: number }>(CURRENT, [scope, name])).rows[0];
      return { ok: false, state: row === undefined ? 'missing' : row.state === 'held' ? 'taken' : row.state };
    },
    async release(body) {
      writes++;
      const args = [text(body, 'scope'), text(body, 'name'), text(body, 'token')];
      return { ok: (await pool.query(RELEASE, args)).rowCount === 1 };
    },
    async finish(body) {
      writes++;
      const scope = text(body, 'scope');
      const name = text(body, 'name');
      const token = text(body, 'token', true);
      rideFlag(body); // checked as on SQLite; each statement here is its own commit
      const done =
        token === ''
          ? await pool.query(FINISH_ANY, [scope, name])
          : await pool.query(FINISH_MINE, [scope, name, token]);
      return { ok: done.rowCount === 1 };
    },
    async expired(body) {
      const args = [text(body, 'scope'), limit(body)];
      return { leases: (await pool.query<LeaseRow>(EXPIRED, args)).rows.map(leaseView) };
    },
    async list(body) {
      const args = [text(body, 'scope'), limit(body)];
      return { leases: (await pool.query<LeaseRow>(LIST, args)).rows.map(leaseView) };
    },
    async pruneOrphans(max, at) {
      return (await pool.query(PRUNE_ORPHANS, [at ?? null, max])).rowCount ?? 0;
    },
    async count() {
      return (await pool.query<{ n: number }>('SELECT count(*) AS n FROM leases')).rows[0]?.n ?? 0;
    },
    writes: () => writes,
  };
}
