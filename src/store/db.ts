// Opens the store's SQLite database (WAL, synchronous=NORMAL) and creates its tables once.
//
// Ordering invariant: every write (create, update, delete, expiry) appends one row to `events`
// in the same transaction, and the breadcrumb's `write_seq` — its rowid — is that event's `seq`
// (so a row moves to the end on every update). Because the store keeps `updated_ms` monotonic,
// `ORDER BY write_seq DESC` is exactly "newest updated_at first, ties → newest write first"; the
// tags table is keyed (tag, write_seq), so a tag listing walks one index without sorting and joins
// by rowid. Event seqs are never reused: pruning only removes the oldest rows, never the newest.
// `breadcrumb_history` holds superseded versions only; the current one is the breadcrumb row.
// Fewer indexes = fewer pages per commit = less WAL to write and checkpoint (see bench/store.mjs).

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ErrorCode, RunnerError } from '../errors.js';
import { WRITER_AUTOCHECKPOINT_PAGES } from './checkpointer.js';
import { markEverythingIndexed } from './fts-index.js';
import { LEASES_SQL } from './leases.js';

export type Db = Database.Database;

const SCHEMA_VERSION = '4';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS breadcrumbs (
  write_seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  owner_id TEXT NOT NULL,
  title TEXT NOT NULL,
  description TEXT,
  semantic_version TEXT,
  context TEXT NOT NULL,
  tags TEXT NOT NULL,
  schema_name TEXT,
  llm_hints TEXT,
  visibility TEXT NOT NULL,
  sensitivity TEXT NOT NULL,
  version INTEGER NOT NULL,
  checksum TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  ttl TEXT,
  expires_ms INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_ms INTEGER NOT NULL,
  created_by TEXT,
  updated_by TEXT
);
CREATE INDEX IF NOT EXISTS breadcrumbs_schema ON breadcrumbs (schema_name);
CREATE INDEX IF NOT EXISTS breadcrumbs_expires ON breadcrumbs (expires_ms) WHERE expires_ms IS NOT NULL;
CREATE TABLE IF NOT EXISTS breadcrumb_tags (
  tag TEXT NOT NULL,
  write_seq INTEGER NOT NULL,
  PRIMARY KEY (tag, write_seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS breadcrumb_history (
  breadcrumb_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  context TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_by TEXT,
  PRIMARY KEY (breadcrumb_id, version)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS breadcrumbs_writer ON breadcrumbs (created_by, write_seq, size_bytes);
CREATE INDEX IF NOT EXISTS breadcrumb_history_writer ON breadcrumb_history (updated_by);
CREATE TABLE IF NOT EXISTS removed_requests (
  id TEXT PRIMARY KEY,
  owner_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  removed_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS removed_requests_at ON removed_requests (removed_at);
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key TEXT PRIMARY KEY,
  breadcrumb_id TEXT NOT NULL,
  owner_id TEXT NOT NULL,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY,
  owner_id TEXT,
  schema_name TEXT,
  tags TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS secrets (
  id TEXT PRIMARY KEY,
  owner_id TEXT NOT NULL,
  name TEXT NOT NULL,
  scope_type TEXT NOT NULL,
  scope_id TEXT,
  scope_key TEXT NOT NULL,
  iv BLOB NOT NULL,
  ciphertext BLOB NOT NULL,
  auth_tag BLOB NOT NULL,
  created_at TEXT NOT NULL,
  created_by TEXT,
  UNIQUE (owner_id, name, scope_type, scope_key)
);
CREATE TABLE IF NOT EXISTS breadcrumb_embeddings (
  breadcrumb_id TEXT PRIMARY KEY,
  dim INTEGER NOT NULL,
  vec BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agents (
  owner_id TEXT NOT NULL,
  id TEXT NOT NULL,
  roles TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (owner_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tenants (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS acls (
  id TEXT PRIMARY KEY,
  owner_id TEXT NOT NULL,
  breadcrumb_id TEXT NOT NULL,
  grantee_agent_id TEXT NOT NULL,
  actions TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (owner_id, breadcrumb_id, grantee_agent_id)
);
CREATE TABLE IF NOT EXISTS selectors (
  id TEXT PRIMARY KEY,
  owner_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  selector TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS secret_audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  secret_id TEXT NOT NULL,
  owner_id TEXT NOT NULL,
  actor TEXT,
  reason TEXT,
  at TEXT NOT NULL
);
`;

// The full-text index reads its text from the breadcrumbs table itself (FTS5 external content,
// keyed by write_seq): no second copy of titles and contexts. Its rows MUST be removed with the
// 'delete' command and the exact values indexed, which the write path has in the old row. Rows are
// indexed in batches after their writes, and before every search (fts-index.ts: which rows are
// indexed is the `fts_indexed_through` mark in meta, since schema version 4).
const FTS_SQL = `CREATE VIRTUAL TABLE IF NOT EXISTS breadcrumbs_fts USING fts5(title, description, context,
  content = 'breadcrumbs', content_rowid = 'write_seq', tokenize = 'unicode61 remove_diacritics 2')`;

/** Opens (creating when missing) `<dataDir>/store.db`, or an in-memory database for `:memory:`. */
export function openDatabase(dataDir: string): Db {
  let file = ':memory:';
  if (dataDir !== ':memory:') {
    try {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `cannot create data directory "${dataDir}": ${e.code ?? e.message}`,
        { cause: error },
      );
    }
    file = join(dataDir, 'store.db');
  }
  let db: Db;
  try {
    db = new Database(file);
    // Freed pages are given back to the file system by `PRAGMA incremental_vacuum` (retention.ts).
    // This must come before anything writes the file header (WAL mode does); an older file is
    // switched over once, below.
    db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = OFF');
    db.pragma('busy_timeout = 5000');
    if (file !== ':memory:') {
      // Checkpoints normally run on a worker (checkpointer.ts); this is the writer's safety net.
      db.pragma(`wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
      db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
    }
    db.exec(SCHEMA);
    db.exec(LEASES_SQL);
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `cannot open database "${file}": ${e.code ?? ''} ${e.message}`.trim(),
      { cause: error },
    );
  }
  const row = db.prepare('SELECT value FROM meta WHERE key = ?').get('schema_version') as { value: string } | undefined;
  const setVersion = db.prepare('UPDATE meta SET value = ? WHERE key = ?');
  if (row === undefined) {
    db.transaction(() => {
      db.exec(FTS_SQL);
      db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)').run('schema_version', SCHEMA_VERSION);
      markEverythingIndexed(db);
    })();
  } else if (row.value === '1' || row.value === '2') {
    // Version 1 had no search index, version 2 one holding its own copy of the text: (re)build it
    // once as an external-content index over the breadcrumbs table.
    db.transaction(() => {
      db.exec('DROP TABLE IF EXISTS breadcrumbs_fts');
      db.exec(FTS_SQL);
      db.exec(`INSERT INTO breadcrumbs_fts (breadcrumbs_fts) VALUES ('rebuild')`);
      markEverythingIndexed(db);
      setVersion.run(SCHEMA_VERSION, 'schema_version');
    })();
  } else if (row.value === '3') {
    // Version 3 indexed every row in its own write: all of them are indexed (fts-index.ts's mark).
    db.transaction(() => {
      markEverythingIndexed(db);
      setVersion.run(SCHEMA_VERSION, 'schema_version');
    })();
  } else if (row.value !== SCHEMA_VERSION) {
    db.close();
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `database "${file}" has schema version ${row.value}; this store understands version ${SCHEMA_VERSION}`,
    );
  }
  // A file made before incremental auto-vacuum: one full VACUUM switches it (and compacts it).
  if (!db.memory && db.pragma('auto_vacuum', { simple: true }) !== 2) {
    db.pragma('auto_vacuum = INCREMENTAL');
    db.exec('VACUUM');
  }
  return db;
}

/** A read-only connection to the same file, for long reads that must not hold the writer (listings). */
export function openReader(db: Db): Db | undefined {
  if (db.memory) return undefined;
  const reader = new Database(db.name, { readonly: true, fileMustExist: true });
  reader.pragma('busy_timeout = 5000');
  return reader;
}
