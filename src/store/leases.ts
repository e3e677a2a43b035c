// Leases: the store's claim primitive for this project's runner (docs/store.md "Leases").
//
// A lease is one row of `leases`, keyed (scope, name), changed only by compare-and-set — no
// breadcrumb, no history, no event, no FTS row. This file is the SQLite table (one transaction per
// operation, the store's clock); pg/leases.ts is the same table on PostgreSQL (one statement per
// operation, the database's clock). Its states:
//   held      a holder (identified by the secret `token` it chose) owns it until `expires_ms`;
//             renewing moves `expires_ms` forward, and only the current token may renew or release;
//   released  given back without an outcome (drain, park): free at once, as is a held lease past
//             `expires_ms`; the next acquire takes it over as `attempt + 1` with a new token;
//   done      the subject is finished (its answer exists): never acquired again.
// An acquire with the token that holds the lease returns it again (a retried call whose reply was
// lost), so acquiring is idempotent per token.
//
// Who may call: every lease route needs the store's lease key (header `X-Lease-Key`, compared in
// constant time) on top of the usual bearer token. Agents never hold that key, so they cannot read,
// take, renew, release or finish a lease — even though they may write any breadcrumb.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { Db } from './db.js';
import { HttpError, httpErrors } from './http-util.js';

/** The `leases` table (created by db.ts's schema). */
export const LEASES_SQL = `
CREATE TABLE IF NOT EXISTS leases (
  scope TEXT NOT NULL,
  name TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  holder TEXT NOT NULL,
  token TEXT NOT NULL,
  state TEXT NOT NULL,
  label TEXT NOT NULL,
  expires_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (scope, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS leases_free ON leases (scope, expires_ms) WHERE state != 'done';
CREATE INDEX IF NOT EXISTS leases_name ON leases (name);
`;

/** A lease as the routes answer it (never its token). */
export interface LeaseView {
  name: string;
  attempt: number;
  holder: string;
  state: 'held' | 'released' | 'done';
  label: string;
  expires_ms: number;
}

/** Reply of acquire: the lease is ours (`takeover` when an earlier attempt existed), or why not. */
export type AcquireReply =
  | { acquired: true; attempt: number; expires_ms: number; takeover: boolean }
  | { acquired: false; state: 'held' | 'done'; holder: string; attempt: number; expires_ms: number };

/** The operations of `POST /x/leases/<op>`. */
export const LEASE_OPS = ['acquire', 'renew', 'release', 'finish', 'expired', 'list'] as const;
export type LeaseOp = (typeof LEASE_OPS)[number];

/** The lease operations (bodies validated here; each throws HttpError naming the bad value). */
export interface Leases {
  acquire(body: Record<string, unknown>): AcquireReply;
  renew(body: Record<string, unknown>): { ok: boolean; state: string };
  release(body: Record<string, unknown>): { ok: boolean };
  /**
   * Committed with the next group of breadcrumb writes when the store groups its commits (see
   * createLeases); with `ride: true` in the body it waits for another write's commit (up to RIDE_MAX_MS).
   */
  finish(body: Record<string, unknown>): { ok: boolean } | Promise<{ ok: boolean }>;
  /** Leases of a scope that are free to take over (released, or held past expiry), oldest first. */
  expired(body: Record<string, unknown>): { leases: LeaseView[] };
  /** Every lease of a scope (operators, tests), most recently changed first. */
  list(body: Record<string, unknown>): { leases: LeaseView[] };
  /** Deletes leases that are not live (released, done, or past expiry at `at`) whose subject breadcrumb (`name`) is gone; returns how many. */
  pruneOrphans(limit: number, at?: number): number;
  count(): number;
  /** Lease writes that were a transaction of their own since the store started (a deferred finish counts with the breadcrumb writes). */
  writes(): number;
}

const MAX_TEXT = 512;
const MAX_TTL_MS = 24 * 3600_000;
const MAX_LIST = 1000;

// The offending value itself, shortened (a 512-character token is not echoed whole).
const describe = (value: unknown): string =>
  value === undefined ? 'undefined' : (JSON.stringify(value) ?? String(value)).slice(0, 80);

function text(body: Record<string, unknown>, key: string, optional = false): string {
  const value = body[key];
  if (value === undefined && optional) return '';
  if (typeof value !== 'string' || value === '' || value.length > MAX_TEXT) {
    throw httpErrors.invalidBody(
      `${key} must be a non-empty string of at most ${MAX_TEXT} characters, got ${describe(value)}`,
    );
  }
  return value;
}

function ttl(body: Record<string, unknown>): number {
  const value = body.ttl_ms;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TTL_MS) {
    throw httpErrors.invalidBody(`ttl_ms must be an integer from 1 to ${MAX_TTL_MS}, got ${describe(value)}`);
  }
  return value;
}

function limit(body: Record<string, unknown>): number {
  const value = body.limit === undefined ? MAX_LIST : body.limit;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIST) {
    throw httpErrors.invalidBody(`limit must be an integer from 1 to ${MAX_LIST}, got ${describe(value)}`);
  }
  return value;
}

/**
 * `ride` of a finish: true when its caller does not wait for the reply (the runner after an answer),
 * so the finish may wait up to RIDE_MAX_MS to share the next write's commit (group-commit.ts).
 */
function rideFlag(body: Record<string, unknown>): boolean {
  const value = body.ride;
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw httpErrors.invalidBody(`ride must be a boolean, got ${describe(value)}`);
  return value;
}

/** The validators of a lease body, shared with the PostgreSQL lease table (pg/leases.ts). */
export const leaseBody = { text, ttl, limit, rideFlag };

/** A row of the lease table, on either backend. */
export interface LeaseRow {
  scope: string;
  name: string;
  attempt: number;
  holder: string;
  token: string;
  state: 'held' | 'released' | 'done';
  label: string;
  expires_ms: number;
}

/** Checks the `X-Lease-Key` header against the store's lease key; throws 403 (or 404 when leases are off). */
export function createLeaseGate(leaseKey: string | undefined): {
  enabled: boolean;
  check(header: string | string[] | undefined): void;
} {
  const digest = (value: string): Buffer => createHash('sha256').update(value).digest();
  const expected = leaseKey === undefined ? undefined : digest(leaseKey);
  return {
    enabled: expected !== undefined,
    check(header) {
      if (expected === undefined)
        throw new HttpError(404, 'route_not_found', 'leases are not enabled on this store (no lease key configured)');
      const value = Array.isArray(header) ? header[0] : header;
      if (value === undefined || value === '')
        throw httpErrors.forbidden('lease routes require the X-Lease-Key header');
      if (!timingSafeEqual(digest(value), expected))
        throw httpErrors.forbidden('X-Lease-Key does not match the store lease key');
    },
  };
}

/** A row as the routes answer it (never its token). */
export const leaseView = (row: LeaseRow): LeaseView => ({
  name: row.name,
  attempt: row.attempt,
  holder: row.holder,
  state: row.state,
  label: row.label,
  expires_ms: row.expires_ms,
});

/**
 * Builds the lease operations over `db` (the table exists: db.ts creates it). With `defer` (the
 * breadcrumb writes' group commit), `finish` joins the next shared transaction instead of paying a
 * commit of its own: the runner finishes a lease after its answer is written and waits for nobody on
 * it, so a call's two lease transactions become one and a savepoint. A finish whose body says
 * `ride: true` (the runner's, which nobody awaits) rides (group-commit.ts): at a low call rate, where
 * the answer's commit is already over when the finish comes, it waits for the next request's commit
 * instead of making one. Acquire, renew and release stay synchronous, each its own transaction: a
 * claim never waits for the end of an event-loop turn.
 */
export function createLeases(
  db: Db,
  now: () => number = Date.now,
  defer?: <T>(run: () => T, ride: boolean) => Promise<T>,
): Leases {
  const select = db.prepare('SELECT * FROM leases WHERE scope = ? AND name = ?');
  const insert =
    db.prepare(`INSERT INTO leases (scope, name, attempt, holder, token, state, label, expires_ms, updated_ms)
    VALUES (@scope, @name, 1, @holder, @token, 'held', @label, @expires, @now) ON CONFLICT (scope, name) DO NOTHING`);
  // The compare-and-set of a takeover: only a lease still at `attempt` and still free moves on.
  const takeover =
    db.prepare(`UPDATE leases SET attempt = attempt + 1, holder = @holder, token = @token, state = 'held',
    label = @label, expires_ms = @expires, updated_ms = @now
    WHERE scope = @scope AND name = @name AND attempt = @attempt AND (state = 'released' OR (state = 'held' AND expires_ms <= @now))`);
  const renew = db.prepare(`UPDATE leases SET expires_ms = @expires, updated_ms = @now
    WHERE scope = @scope AND name = @name AND token = @token AND state = 'held'`);
  const release = db.prepare(`UPDATE leases SET state = 'released', expires_ms = @now, updated_ms = @now
    WHERE scope = @scope AND name = @name AND token = @token AND state = 'held'`);
  const finishAny = db.prepare(
    `UPDATE leases SET state = 'done', updated_ms = @now WHERE scope = @scope AND name = @name AND state != 'done'`,
  );
  const finishMine = db.prepare(
    `UPDATE leases SET state = 'done', updated_ms = @now WHERE scope = @scope AND name = @name AND token = @token AND state != 'done'`,
  );
  const expired = db.prepare(
    `SELECT * FROM leases WHERE scope = ? AND state != 'done' AND expires_ms <= ? ORDER BY expires_ms LIMIT ?`,
  );
  const orphanKeys = db.prepare(`SELECT scope, name FROM leases l WHERE (l.state != 'held' OR l.expires_ms <= ?)
    AND NOT EXISTS (SELECT 1 FROM breadcrumbs b WHERE b.id = l.name) LIMIT ?`);
  const listAll = db.prepare('SELECT * FROM leases WHERE scope = ? ORDER BY updated_ms DESC LIMIT ?');
  const remove = db.prepare('DELETE FROM leases WHERE scope = ? AND name = ?');
  const countStmt = db.prepare('SELECT COUNT(*) FROM leases').pluck();

  const acquireTx = db.transaction((body: Record<string, unknown>): AcquireReply => {
    const scope = text(body, 'scope');
    const name = text(body, 'name');
    const args = {
      scope,
      name,
      holder: text(body, 'holder'),
      token: text(body, 'token'),
      label: text(body, 'label', true),
      now: now(),
      expires: 0,
    };
    args.expires = args.now + ttl(body);
    if (insert.run(args).changes === 1)
      return { acquired: true, attempt: 1, expires_ms: args.expires, takeover: false };
    const row = select.get(scope, name) as LeaseRow;
    if (row.state === 'done')
      return { acquired: false, state: 'done', holder: row.holder, attempt: row.attempt, expires_ms: row.expires_ms };
    // The same token again (a retried call whose reply was lost): the same lease, while it is live.
    if (row.state === 'held' && row.token === args.token && row.expires_ms > args.now)
      return { acquired: true, attempt: row.attempt, expires_ms: row.expires_ms, takeover: row.attempt > 1 };
    if (row.state === 'held' && row.expires_ms > args.now)
      return { acquired: false, state: 'held', holder: row.holder, attempt: row.attempt, expires_ms: row.expires_ms };
    takeover.run({ ...args, attempt: row.attempt });
    return { acquired: true, attempt: row.attempt + 1, expires_ms: args.expires, takeover: true };
  });

  let writes = 0;
  return {
    acquire: (body) => {
      writes++;
      return acquireTx(body);
    },
    renew(body) {
      writes++;
      const scope = text(body, 'scope');
      const name = text(body, 'name');
      const at = now();
      const changed =
        renew.run({ scope, name, token: text(body, 'token'), now: at, expires: at + ttl(body) }).changes === 1;
      if (changed) return { ok: true, state: 'held' };
      const row = select.get(scope, name) as LeaseRow | undefined;
      return { ok: false, state: row === undefined ? 'missing' : row.state === 'held' ? 'taken' : row.state };
    },
    release(body) {
      writes++;
      return {
        ok:
          release.run({ scope: text(body, 'scope'), name: text(body, 'name'), token: text(body, 'token'), now: now() })
            .changes === 1,
      };
    },
    finish(body) {
      // The body is checked at once (a bad one is a 400 now, never a failed batch write).
      const scope = text(body, 'scope');
      const name = text(body, 'name');
      const token = text(body, 'token', true);
      const ride = rideFlag(body);
      const run = (): { ok: boolean } => {
        const changes =
          token === ''
            ? finishAny.run({ scope, name, now: now() }).changes
            : finishMine.run({ scope, name, token, now: now() }).changes;
        return { ok: changes === 1 };
      };
      if (defer) return defer(run, ride); // counted with the breadcrumb writes of its shared transaction
      writes++;
      return run();
    },
    expired: (body) => ({
      leases: (expired.all(text(body, 'scope'), now(), limit(body)) as LeaseRow[]).map(leaseView),
    }),
    list: (body) => ({ leases: (listAll.all(text(body, 'scope'), limit(body)) as LeaseRow[]).map(leaseView) }),
    pruneOrphans(limit, at = now()) {
      const rows = orphanKeys.all(at, limit) as Array<{ scope: string; name: string }>;
      db.transaction(() => {
        for (const row of rows) remove.run(row.scope, row.name);
      })();
      return rows.length;
    },
    count: () => countStmt.get() as number,
    writes: () => writes,
  };
}
