// Every breadcrumb write of the store: create (with Idempotency-Key), update (with If-Match
// compare-and-set), delete, and expiry. Each is atomic (its own savepoint) and also appends its
// event; the event is published to live streams only after the transaction committed.
//
// Group commit: creates, updates and deletes that arrive in the same turn of the event loop are
// queued and committed together in ONE SQLite transaction on the next `setImmediate` — each in its
// own savepoint, so one write's failure (a 409, a 412, a 404) rolls back that write alone. After
// the commit their events are published in commit order and then their callers are answered; no
// caller is answered before its write is committed.
//
// The full-text index is not written here: a new or changed row is indexed shortly after its commit,
// with the others written meanwhile (fts-index.ts); a row leaving takes its index entry with it.

import { createHash, randomUUID } from 'node:crypto';
import type { Db } from './db.js';
import type { EventLog, StoredEvent } from './event-log.js';
import { createGroupCommit, type WriteStats } from './group-commit.js';
import type { SearchIndex } from './fts-index.js';
import { HttpError, httpErrors } from './http-util.js';
import { chargedAgent, sqliteQuotaCheck, updateCharges, type AgentQuota } from './quota.js';
import { leavesTombstone } from './tombstones.js';
import type { CreateFields, PatchFields } from './validate.js';

/** Who is acting: the owner records belong to, the agent (`sub`), and whether reads are owner-scoped. */
export interface Actor {
  ownerId: string;
  agentId: string | null;
  /** True when auth is on: the actor sees and changes only records of `ownerId`. */
  scoped: boolean;
}

/** The stored row of a breadcrumb (JSON columns as text). */
export interface BreadcrumbRow {
  id: string;
  owner_id: string;
  title: string;
  description: string | null;
  semantic_version: string | null;
  context: string;
  tags: string;
  schema_name: string | null;
  llm_hints: string | null;
  visibility: string;
  sensitivity: string;
  version: number;
  checksum: string;
  size_bytes: number;
  ttl: string | null;
  expires_ms: number | null;
  created_at: string;
  updated_at: string;
  updated_ms: number;
  created_by: string | null;
  updated_by: string | null;
  write_seq: number;
}

/** Breadcrumb writes; each call resolves once its write committed and its event was published. */
export interface BreadcrumbWrites {
  create(fields: CreateFields, actor: Actor, idempotencyKey?: string): Promise<{ id: string }>;
  update(id: string, patch: PatchFields, actor: Actor, ifMatch?: number): Promise<{ version: number }>;
  remove(id: string, actor: Actor): Promise<void>;
  /** Deletes expired breadcrumbs (emitting `breadcrumb.deleted` with reason `expired`); returns how many. */
  pruneExpired(): number;
  /** Deletes the given breadcrumbs (by write_seq) in one transaction, emitting `breadcrumb.deleted` with `reason`; returns how many. */
  removeRows(seqs: number[], reason: string): number;
  /** Write transactions committed, writes in them, and the time spent inside them (bench/store-group-commit.mjs). */
  stats(): WriteStats;
  /**
   * Runs another table's small write `run` in the group commit (its own savepoint in the next shared
   * transaction; with `ride`, one it waits up to RIDE_MAX_MS for another write to make); resolves with
   * its value once committed. For a lease's finish.
   */
  defer<T>(run: () => T, ride?: boolean): Promise<T>;
  /** Commits the writes waiting for a shared transaction now (the store's close). */
  flush(): void;
}

export type { WriteStats } from './group-commit.js';

/** Options of the write path. */
export interface WriteOptions {
  /** Commit writes that arrive together in one transaction (default true; false: one transaction per write). */
  groupCommit?: boolean;
  /** Per-agent limits on what the store keeps (quota.ts); unset: none. */
  quota?: AgentQuota;
}

function contextDigest(contextJson: string): { checksum: string; size: number } {
  return {
    checksum: 'sha256:' + createHash('sha256').update(contextJson).digest('hex'),
    size: Buffer.byteLength(contextJson),
  };
}

function uniqueTags(tags: string[]): string[] {
  return tags.length < 2 ? tags : [...new Set(tags)];
}

/** Text a breadcrumb is embedded from, like upstream: its title, a space, its compact context JSON. */
export function embeddingText(title: string, contextJson: string): string {
  return `${title} ${contextJson}`;
}

/** Called after a create or update committed, so an embedder can (re)compute the record's vector. */
export type AfterWrite = (id: string, version: number, text: string) => void;

/** Encodes an embedding as the stored blob (little-endian float32). */
export function encodeVector(values: number[]): Buffer {
  return Buffer.from(Float32Array.from(values).buffer);
}

/** The row of a new breadcrumb (version 1), written at `now` by `actor` with the event `seq`. */
function newRow(
  id: string,
  fields: CreateFields,
  actor: Actor,
  context: string,
  now: { ms: number; iso: string },
  seq: number,
): BreadcrumbRow {
  const digest = contextDigest(context);
  return {
    id,
    owner_id: actor.ownerId,
    title: fields.title,
    description: fields.description,
    semantic_version: fields.semantic_version,
    context,
    tags: JSON.stringify(fields.tags),
    schema_name: fields.schema_name,
    llm_hints: fields.llm_hints === null ? null : JSON.stringify(fields.llm_hints),
    visibility: fields.visibility,
    sensitivity: fields.sensitivity,
    version: 1,
    checksum: digest.checksum,
    size_bytes: digest.size,
    ttl: fields.ttl,
    expires_ms: fields.expiresMs,
    created_at: now.iso,
    updated_at: now.iso,
    updated_ms: now.ms,
    created_by: actor.agentId,
    updated_by: actor.agentId,
    write_seq: seq,
  };
}

/** Builds the write side over `db`, appending to and publishing through `log`. */
export function createBreadcrumbWrites(
  db: Db,
  log: EventLog,
  index: SearchIndex,
  afterWrite?: AfterWrite,
  options: WriteOptions = {},
): BreadcrumbWrites {
  const insert = db.prepare(`INSERT INTO breadcrumbs (id, owner_id, title, description, semantic_version, context, tags,
    schema_name, llm_hints, visibility, sensitivity, version, checksum, size_bytes, ttl, expires_ms, created_at, updated_at,
    updated_ms, created_by, updated_by, write_seq) VALUES (@id, @owner_id, @title, @description, @semantic_version, @context,
    @tags, @schema_name, @llm_hints, @visibility, @sensitivity, @version, @checksum, @size_bytes, @ttl, @expires_ms, @created_at,
    @updated_at, @updated_ms, @created_by, @updated_by, @write_seq)`);
  const update =
    db.prepare(`UPDATE breadcrumbs SET write_seq = @write_seq, title = @title, description = @description, semantic_version = @semantic_version,
    context = @context, tags = @tags, schema_name = @schema_name, llm_hints = @llm_hints, visibility = @visibility,
    sensitivity = @sensitivity, version = @version, checksum = @checksum, size_bytes = @size_bytes, ttl = @ttl,
    expires_ms = @expires_ms, updated_at = @updated_at, updated_ms = @updated_ms, updated_by = @updated_by
    WHERE write_seq = @old_seq AND version = @version - 1`);
  const selectRow = db.prepare('SELECT * FROM breadcrumbs WHERE id = ? AND (expires_ms IS NULL OR expires_ms > ?)');
  // The superseded version goes to history; the current one lives only in the breadcrumb row.
  const insertTag = db.prepare('INSERT INTO breadcrumb_tags (tag, write_seq) VALUES (?, ?)');
  const deleteTag = db.prepare('DELETE FROM breadcrumb_tags WHERE tag = ? AND write_seq = ?');
  const insertHistory = db.prepare(
    'INSERT INTO breadcrumb_history (breadcrumb_id, version, context, updated_at, updated_by) VALUES (?, ?, ?, ?, ?)',
  );
  const deleteHistory = db.prepare('DELETE FROM breadcrumb_history WHERE breadcrumb_id = ?');
  const deleteRow = db.prepare('DELETE FROM breadcrumbs WHERE write_seq = ?');
  const insertTombstone = db.prepare(
    'INSERT OR REPLACE INTO removed_requests (id, owner_id, reason, removed_at) VALUES (?, ?, ?, ?)',
  );
  const upsertVector = db.prepare(
    'INSERT INTO breadcrumb_embeddings (breadcrumb_id, dim, vec) VALUES (?, ?, ?) ON CONFLICT (breadcrumb_id) DO UPDATE SET dim = excluded.dim, vec = excluded.vec',
  );
  const deleteVector = db.prepare('DELETE FROM breadcrumb_embeddings WHERE breadcrumb_id = ?');
  const selectKey = db.prepare('SELECT breadcrumb_id, owner_id FROM idempotency_keys WHERE key = ?');
  const insertKey = db.prepare(
    'INSERT INTO idempotency_keys (key, breadcrumb_id, owner_id, created_at) VALUES (?, ?, ?, ?)',
  );
  const selectExpired = db.prepare(
    'SELECT * FROM breadcrumbs WHERE expires_ms IS NOT NULL AND expires_ms <= ? LIMIT 500',
  );
  const charge = sqliteQuotaCheck(db, options.quota);
  const maxUpdated = db.prepare('SELECT updated_ms FROM breadcrumbs ORDER BY write_seq DESC LIMIT 1').pluck();

  // updated_at never goes backwards, so write order and updated_at order agree (see db.ts).
  let lastMs = (maxUpdated.get() as number | null) ?? 0;
  const tick = (): { ms: number; iso: string } => {
    lastMs = Math.max(Date.now(), lastMs);
    return { ms: lastMs, iso: new Date(lastMs).toISOString() };
  };

  const visibleRow = (id: string, actor: Actor): BreadcrumbRow => {
    const row = selectRow.get(id, Date.now()) as BreadcrumbRow | undefined;
    if (!row || (actor.scoped && row.owner_id !== actor.ownerId))
      throw httpErrors.notFound(`breadcrumb "${id}" not found`);
    return row;
  };

  const deleteTags = (row: BreadcrumbRow, tags: string[]): void => {
    for (const tag of uniqueTags(tags)) deleteTag.run(tag, row.write_seq);
  };

  const removeRow = (row: BreadcrumbRow, reason: string | undefined): StoredEvent => {
    const tags = JSON.parse(row.tags) as string[];
    deleteTags(row, tags);
    deleteHistory.run(row.id);
    index.forget(row);
    deleteVector.run(row.id);
    deleteRow.run(row.write_seq);
    if (leavesTombstone(row.schema_name, reason))
      insertTombstone.run(row.id, row.owner_id, reason, new Date().toISOString());
    return log.append({
      type: 'breadcrumb.deleted',
      breadcrumb_id: row.id,
      owner_id: row.owner_id,
      version: row.version,
      tags,
      schema_name: row.schema_name,
      deleted_at: new Date().toISOString(),
      ...(reason ? { reason } : {}),
    });
  };

  const createTx = db.transaction((fields: CreateFields, actor: Actor, key: string | undefined) => {
    if (key !== undefined) {
      const existing = selectKey.get(key) as { breadcrumb_id: string; owner_id: string } | undefined;
      if (existing) return { conflict: existing, id: existing.breadcrumb_id, event: undefined, text: undefined };
    }
    const context = JSON.stringify(fields.context);
    charge(chargedAgent(options.quota, actor.agentId, fields.tags), { records: 1, bytes: Buffer.byteLength(context) });
    const now = tick();
    const id = randomUUID();
    const event = log.append({
      type: 'breadcrumb.updated',
      breadcrumb_id: id,
      owner_id: actor.ownerId,
      version: 1,
      tags: fields.tags,
      schema_name: fields.schema_name,
      updated_at: now.iso,
      context: fields.context,
    });
    insert.run(newRow(id, fields, actor, context, now, event.seq));
    for (const tag of uniqueTags(fields.tags)) insertTag.run(tag, event.seq);
    if (fields.embedding) upsertVector.run(id, fields.embedding.length, encodeVector(fields.embedding));
    if (key !== undefined) insertKey.run(key, id, actor.ownerId, now.iso);
    return {
      conflict: undefined,
      id,
      event,
      text: fields.embedding ? undefined : embeddingText(fields.title, context),
    };
  });

  const updateTx = db.transaction((id: string, patch: PatchFields, actor: Actor, ifMatch: number | undefined) => {
    const row = visibleRow(id, actor);
    if (ifMatch !== undefined && row.version !== ifMatch) {
      throw new HttpError(
        412,
        'version_mismatch',
        `version_mismatch: breadcrumb "${id}" is at version ${row.version}, not ${ifMatch}`,
        { version: row.version },
      );
    }
    const context = patch.context !== undefined ? JSON.stringify(patch.context) : row.context;
    const digest = contextDigest(context);
    for (const [agent, adding] of updateCharges(options.quota, row, actor.agentId, digest.size - row.size_bytes))
      charge(agent, adding);
    const now = tick();
    const version = row.version + 1;
    const oldTags = JSON.parse(row.tags) as string[];
    const tags = patch.tags ?? oldTags;
    const schemaName = patch.schema_name !== undefined ? patch.schema_name : row.schema_name;
    const event = log.append({
      type: 'breadcrumb.updated',
      breadcrumb_id: id,
      owner_id: row.owner_id,
      version,
      tags,
      schema_name: schemaName,
      updated_at: now.iso,
      context: patch.context ?? (JSON.parse(row.context) as Record<string, unknown>),
    });
    const pick = <K extends keyof BreadcrumbRow>(key: K, value: BreadcrumbRow[K] | undefined): BreadcrumbRow[K] =>
      value !== undefined ? value : row[key];
    update.run({
      old_seq: row.write_seq,
      title: pick('title', patch.title),
      description: pick('description', patch.description),
      semantic_version: pick('semantic_version', patch.semantic_version),
      context,
      tags: JSON.stringify(tags),
      schema_name: schemaName,
      llm_hints:
        patch.llm_hints !== undefined
          ? patch.llm_hints === null
            ? null
            : JSON.stringify(patch.llm_hints)
          : row.llm_hints,
      visibility: pick('visibility', patch.visibility),
      sensitivity: pick('sensitivity', patch.sensitivity),
      version,
      checksum: digest.checksum,
      size_bytes: digest.size,
      ttl: pick('ttl', patch.ttl),
      expires_ms: pick('expires_ms', patch.expiresMs),
      updated_at: now.iso,
      updated_ms: now.ms,
      updated_by: actor.agentId,
      write_seq: event.seq,
    });
    deleteTags(row, oldTags);
    for (const tag of uniqueTags(tags)) insertTag.run(tag, event.seq);
    const title = pick('title', patch.title);
    // the full-text index is keyed by write_seq: the old row leaves it, the new one is indexed later
    index.forget(row);
    insertHistory.run(id, row.version, row.context, row.updated_at, row.updated_by);
    // An explicit embedding wins; otherwise a changed title/context is re-embedded after the commit.
    let text: string | undefined;
    if (patch.embedding === null) deleteVector.run(id);
    else if (patch.embedding) upsertVector.run(id, patch.embedding.length, encodeVector(patch.embedding));
    else if (patch.title !== undefined || patch.context !== undefined) text = embeddingText(title, context);
    return { version, event, text };
  });

  const removeTx = db.transaction((id: string, actor: Actor) => removeRow(visibleRow(id, actor), undefined));

  const expireTx = db.transaction((nowMs: number) =>
    (selectExpired.all(nowMs) as BreadcrumbRow[]).map((row) => removeRow(row, 'expired')),
  );
  const selectBySeq = db.prepare('SELECT * FROM breadcrumbs WHERE write_seq = ?');
  const removeSeqsTx = db.transaction((seqs: number[], reason: string) => {
    const events: StoredEvent[] = [];
    for (const seq of seqs) {
      const row = selectBySeq.get(seq) as BreadcrumbRow | undefined;
      if (row) events.push(removeRow(row, reason));
    }
    return events;
  });

  const { submit, flush, counters } = createGroupCommit(db, options.groupCommit ?? true);

  return {
    create(fields, actor, idempotencyKey) {
      return submit(
        () => createTx(fields, actor, idempotencyKey),
        (result) => {
          if (result.conflict !== undefined) {
            const sameOwner = result.conflict.owner_id === actor.ownerId;
            throw new HttpError(
              409,
              'conflict',
              `duplicate idempotency key: Idempotency-Key ${JSON.stringify(idempotencyKey)} was already used`,
              sameOwner ? { id: result.conflict.breadcrumb_id } : undefined,
            );
          }
          if (result.event) {
            index.schedule();
            log.publish(result.event);
          }
          if (result.text !== undefined) afterWrite?.(result.id, 1, result.text);
          return { id: result.id };
        },
      );
    },
    update(id, patch, actor, ifMatch) {
      return submit(
        () => updateTx(id, patch, actor, ifMatch),
        (result) => {
          index.schedule();
          log.publish(result.event);
          if (result.text !== undefined) afterWrite?.(id, result.version, result.text);
          return { version: result.version };
        },
      );
    },
    remove(id, actor) {
      return submit(
        () => removeTx(id, actor),
        (event) => {
          log.publish(event);
        },
      );
    },
    pruneExpired() {
      let total = 0;
      for (;;) {
        const events = expireTx(Date.now());
        for (const event of events) log.publish(event);
        total += events.length;
        if (events.length < 500) return total;
      }
    },
    removeRows(seqs, reason) {
      const events = removeSeqsTx(seqs, reason);
      for (const event of events) log.publish(event);
      return events.length;
    },
    stats: () => ({ ...counters }),
    defer: (run, ride = false) => submit(run, (value) => value, ride),
    flush,
  };
}
