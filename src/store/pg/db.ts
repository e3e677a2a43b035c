// PostgreSQL connection pool and versioned schema migrations of the store (`--db postgres://…`).
//
// Migrations are numbered; each runs in its own transaction and is recorded in
// `schema_migrations`. They run at start under a session advisory lock (MIGRATION_LOCK), so
// replicas starting together apply each migration exactly once and the others wait, then see it
// applied. A database migrated by a newer version (an unknown migration number) is refused.
//
// The table layout mirrors the SQLite store (../db.ts) so both answer alike: `write_seq` is the
// seq of the breadcrumb's latest event, tags live in (tag, write_seq) rows, history holds
// superseded versions only. Differences: full-text search is a generated `tsvector` column
// (title weight A, description + context weight B, 'simple' configuration) with a GIN index,
// and events get their stream seq after they commit, from `tools_runner_relay` (migration 4,
// see events.ts); `write_seq` is the event's id (sequence `event_ids`), not its stream seq.
//
// Sessions: every connection starts with statement, lock and idle-in-transaction timeouts and TCP
// keepalives on both ends (PgSession), so a replica that stalls or vanishes mid-transaction loses
// its session and its row locks instead of holding them for hours.

import pg from 'pg';
import { ErrorCode, RunnerError } from '../../errors.js';
import type { Logger } from '../../logger.js';

/** Session advisory lock taken while migrating (an arbitrary constant of this project). */
export const MIGRATION_LOCK = 7_305_250_001;
/** Transaction advisory lock of tools_runner_relay: one relay numbers events at a time. */
const RELAY_LOCK = 7_305_250_003;

interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The migrations, oldest first. Never edit a released one: append a new version. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'breadcrumbs, events, secrets and registries',
    sql: `
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE event_clock (id integer PRIMARY KEY CHECK (id = 1), last_ms bigint NOT NULL, last_seq bigint NOT NULL);
INSERT INTO event_clock (id, last_ms, last_seq) VALUES (1, 0, 0);
CREATE TABLE events (
  seq bigint PRIMARY KEY,
  owner_id text,
  schema_name text,
  tags text NOT NULL,
  data text NOT NULL
);
CREATE TABLE breadcrumbs (
  write_seq bigint PRIMARY KEY,
  id text NOT NULL UNIQUE,
  owner_id text NOT NULL,
  title text NOT NULL,
  description text,
  semantic_version text,
  context text NOT NULL,
  tags text NOT NULL,
  schema_name text,
  llm_hints text,
  visibility text NOT NULL,
  sensitivity text NOT NULL,
  version integer NOT NULL,
  checksum text NOT NULL,
  size_bytes integer NOT NULL,
  ttl text,
  expires_ms bigint,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  updated_ms bigint NOT NULL,
  created_by text,
  updated_by text,
  fts tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple'::regconfig, title), 'A') ||
    setweight(to_tsvector('simple'::regconfig, coalesce(description, '') || ' ' || context), 'B')
  ) STORED
);
CREATE INDEX breadcrumbs_schema ON breadcrumbs (schema_name, write_seq);
CREATE INDEX breadcrumbs_expires ON breadcrumbs (expires_ms) WHERE expires_ms IS NOT NULL;
CREATE INDEX breadcrumbs_fts ON breadcrumbs USING gin (fts);
CREATE TABLE breadcrumb_tags (tag text NOT NULL, write_seq bigint NOT NULL, PRIMARY KEY (tag, write_seq));
CREATE INDEX breadcrumb_tags_seq ON breadcrumb_tags (write_seq);
CREATE TABLE breadcrumb_history (
  breadcrumb_id text NOT NULL,
  version integer NOT NULL,
  context text NOT NULL,
  updated_at text NOT NULL,
  updated_by text,
  PRIMARY KEY (breadcrumb_id, version)
);
CREATE TABLE idempotency_keys (key text PRIMARY KEY, breadcrumb_id text NOT NULL, owner_id text NOT NULL, created_at text NOT NULL);
CREATE TABLE breadcrumb_embeddings (breadcrumb_id text PRIMARY KEY, dim integer NOT NULL, vec bytea NOT NULL);
CREATE TABLE secrets (
  id text PRIMARY KEY,
  owner_id text NOT NULL,
  name text NOT NULL,
  scope_type text NOT NULL,
  scope_id text,
  scope_key text NOT NULL,
  iv bytea NOT NULL,
  ciphertext bytea NOT NULL,
  auth_tag bytea NOT NULL,
  created_at text NOT NULL,
  created_by text,
  UNIQUE (owner_id, name, scope_type, scope_key)
);
CREATE TABLE secret_audit (id bigserial PRIMARY KEY, secret_id text NOT NULL, owner_id text NOT NULL, actor text, reason text, at text NOT NULL);
CREATE TABLE agents (owner_id text NOT NULL, id text NOT NULL, roles text NOT NULL, created_at text NOT NULL, PRIMARY KEY (owner_id, id));
CREATE TABLE tenants (id text PRIMARY KEY, name text NOT NULL, created_at text NOT NULL);
CREATE TABLE acls (
  id text PRIMARY KEY,
  owner_id text NOT NULL,
  breadcrumb_id text NOT NULL,
  grantee_agent_id text NOT NULL,
  actions text NOT NULL,
  created_at text NOT NULL,
  UNIQUE (owner_id, breadcrumb_id, grantee_agent_id)
);
CREATE TABLE selectors (id text PRIMARY KEY, owner_id text NOT NULL, agent_id text NOT NULL, selector text NOT NULL, created_at text NOT NULL);
`,
  },
  {
    version: 2,
    name: 'leases (the runner claims; leases.ts)',
    sql: `
CREATE TABLE leases (
  scope text NOT NULL,
  name text NOT NULL,
  attempt integer NOT NULL,
  holder text NOT NULL,
  token text NOT NULL,
  state text NOT NULL CHECK (state IN ('held', 'released', 'done')),
  label text NOT NULL,
  expires_ms bigint NOT NULL,
  updated_ms bigint NOT NULL,
  PRIMARY KEY (scope, name)
);
CREATE INDEX leases_free ON leases (scope, expires_ms) WHERE state <> 'done';
CREATE INDEX leases_name ON leases (name);
`,
  },
  {
    version: 3,
    name: 'retention: Idempotency-Keys by age, autovacuum sooner on the tables it deletes from',
    // Retention deletes a steady stream of rows: vacuum (and analyze) each table once 5% of it is
    // dead instead of the default 20%, so the freed space is reused sooner (docs/store.md).
    sql: `
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
ALTER TABLE breadcrumbs SET (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);
ALTER TABLE breadcrumb_tags SET (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);
ALTER TABLE breadcrumb_history SET (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);
ALTER TABLE breadcrumb_embeddings SET (autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE idempotency_keys SET (autovacuum_vacuum_scale_factor = 0.05);
ALTER TABLE events SET (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);
`,
  },
  {
    version: 4,
    name: 'events: ids from a sequence, stream seqs handed out after commit by tools_runner_relay',
    // A write inserts its event with an id and no seq, holding no shared lock; the relay (one
    // statement, serialised by an advisory lock, never across a client round trip) numbers
    // committed events in id order, moves event_clock.last_seq, prunes and notifies.
    sql: `
CREATE SEQUENCE event_ids;
SELECT setval('event_ids', (SELECT last_seq + 1 FROM event_clock WHERE id = 1), false);
ALTER TABLE events ADD COLUMN id bigint;
UPDATE events SET id = seq;
ALTER TABLE events DROP CONSTRAINT events_pkey;
ALTER TABLE events ALTER COLUMN id SET NOT NULL, ALTER COLUMN id SET DEFAULT nextval('event_ids'), ALTER COLUMN seq DROP NOT NULL;
ALTER TABLE events ADD PRIMARY KEY (id);
CREATE UNIQUE INDEX events_seq ON events (seq);
CREATE INDEX events_unassigned ON events (id) WHERE seq IS NULL;
CREATE FUNCTION tools_runner_relay(max_rows integer, keep bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  base bigint;
  moved bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM events WHERE seq IS NULL) THEN
    RETURN (SELECT last_seq FROM event_clock WHERE id = 1);
  END IF;
  PERFORM pg_advisory_xact_lock(${RELAY_LOCK});
  SELECT last_seq INTO base FROM event_clock WHERE id = 1 FOR UPDATE;
  WITH batch AS (SELECT id, row_number() OVER (ORDER BY id) AS n
      FROM (SELECT id FROM events WHERE seq IS NULL ORDER BY id LIMIT max_rows) b)
    UPDATE events e SET seq = base + batch.n FROM batch WHERE e.id = batch.id;
  GET DIAGNOSTICS moved = ROW_COUNT;
  IF moved > 0 THEN
    UPDATE event_clock SET last_seq = base + moved WHERE id = 1;
    IF (base + moved) / 128 > base / 128 THEN
      DELETE FROM events WHERE seq <= base + moved - keep;
    END IF;
    PERFORM pg_notify('tools_runner_events', '');
  END IF;
  RETURN base + moved;
END $$;
`,
  },
  {
    version: 5,
    name: 'tombstones of requests removed by retention (410 expired; ../tombstones.ts)',
    sql: `
CREATE TABLE removed_requests (id text PRIMARY KEY, owner_id text NOT NULL, reason text NOT NULL, removed_at text NOT NULL);
CREATE INDEX removed_requests_at ON removed_requests (removed_at);
`,
  },
  {
    version: 6,
    name: "quotas and agent retention: each writer's records, oldest first, with their sizes (src/store/quota.ts)",
    sql: `
CREATE INDEX breadcrumbs_writer ON breadcrumbs (created_by, write_seq, size_bytes);
CREATE INDEX breadcrumb_history_writer ON breadcrumb_history (updated_by);
`,
  },
];

/** Whether `url` names a PostgreSQL database (`postgres://` or `postgresql://`). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/** The URL without its password, for logs and errors. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable URL)';
  }
}

// bigint columns (seqs, milliseconds) as numbers: every value this store keeps fits in 2^53.
const INT8 = 20;
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

// How long a request waits for a pooled connection (a burst queues behind busy connections) or
// for a new connection to open, before it fails with 503.
const ACQUIRE_TIMEOUT_MS = 60_000;

/** The timeouts and keepalive of every store session (ms; 0 turns one off). */
export interface PgSession {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  keepaliveMs: number;
}

/** The defaults of PgSession (the same as the options' in src/config/options-service.ts). */
export const DEFAULT_PG_SESSION: PgSession = {
  statementTimeoutMs: 30_000,
  lockTimeoutMs: 5000,
  idleInTransactionTimeoutMs: 5000,
  keepaliveMs: 10_000,
};

// The client settings of `session`: PostgreSQL's timeouts as startup parameters (RESET returns to
// them) and keepalives on our socket and, through `options`, on the server's.
function sessionConfig(session: PgSession): pg.ClientConfig {
  const idleS = Math.max(1, Math.round(session.keepaliveMs / 1000));
  return {
    statement_timeout: session.statementTimeoutMs,
    lock_timeout: session.lockTimeoutMs,
    idle_in_transaction_session_timeout: session.idleInTransactionTimeoutMs,
    ...(session.keepaliveMs > 0
      ? {
          keepAlive: true,
          keepAliveInitialDelayMillis: session.keepaliveMs,
          options: `-c tcp_keepalives_idle=${idleS} -c tcp_keepalives_interval=${idleS} -c tcp_keepalives_count=3`,
        }
      : {}),
  };
}

/** Opens a pool on `url` (`max` connections); connection errors of idle clients are logged, not thrown. */
export function openPool(url: string, max: number, logger: Logger, session = DEFAULT_PG_SESSION): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types,
    connectionTimeoutMillis: ACQUIRE_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    ...sessionConfig(session),
  });
  pool.on('error', (error) => logger.warn('an idle PostgreSQL connection failed', { error: error.message }));
  // A connection lost while checked out fails its query (the caller sees that) and also emits
  // 'error' on the client, which must not become an uncaught exception.
  pool.on('connect', (client) =>
    client.on('error', (error) => logger.debug('a PostgreSQL connection failed', { error: error.message })),
  );
  return pool;
}

/** A client of `url` outside the pool (LISTEN), with the same type parsing and session settings. */
export function openClient(url: string, session = DEFAULT_PG_SESSION): pg.Client {
  return new pg.Client({ connectionString: url, types, connectionTimeoutMillis: 10_000, ...sessionConfig(session) });
}

/** Applies the missing migrations under MIGRATION_LOCK; throws config.invalid on a newer database. */
export async function migrate(pool: pg.Pool, logger: Logger): Promise<number> {
  const client = await pool.connect();
  try {
    // Waiting for another replica's migration, and a migration itself, may take longer than the session's timeouts.
    await client.query('SET statement_timeout = 0; SET lock_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      const applied = new Set(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
          (row) => row.version,
        ),
      );
      const known = new Set(MIGRATIONS.map((m) => m.version));
      const unknown = [...applied].filter((version) => !known.has(version));
      if (unknown.length > 0) {
        throw new RunnerError(
          ErrorCode.ConfigInvalid,
          `database has schema migration ${Math.max(...unknown)}, newer than this store knows (latest ${Math.max(...known)}): upgrade tools-runner`,
        );
      }
      for (const migration of MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
            migration.version,
            migration.name,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
        logger.info('applied store schema migration', { version: migration.version, name: migration.name });
      }
      return Math.max(...known);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await client.query('RESET statement_timeout; RESET lock_timeout').catch(() => {});
    client.release();
  }
}

/** Runs `fn` in a transaction on one pooled client (ROLLBACK on any failure; a broken client is discarded). */
export async function transaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/** True for PostgreSQL's unique_violation. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === '23505';
}

/** True for failures that mean "the database is unreachable right now" (connection lost or refused, server shutting down or starting, a session timeout). */
export function isUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string } | null;
  if (!e) return false;
  if (
    typeof e.code === 'string' &&
    (/^08/.test(e.code) ||
      // 57014 / 55P03 / 25P03: a statement, lock or idle-in-transaction timeout of the session (PgSession).
      [
        '57P01',
        '57P02',
        '57P03',
        '57014',
        '55P03',
        '25P03',
        'ECONNREFUSED',
        'ECONNRESET',
        'ETIMEDOUT',
        'EPIPE',
      ].includes(e.code))
  )
    return true;
  return (
    typeof e.message === 'string' && /Connection terminated|timeout exceeded when trying to connect/.test(e.message)
  );
}
