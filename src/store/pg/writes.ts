// Breadcrumb writes on PostgreSQL, mirroring ../breadcrumb-writes.ts (same fields, events, errors):
// create (Idempotency-Key → 409), update (If-Match → 412), delete and expiry. Each is one
// transaction that inserts its event (events.ts: an id, no shared lock; the stream seq comes after
// the commit); a write answers once this replica's streams have its event (published), the other
// replicas' get it on the relay's notification. `write_seq` is the event's id.
//
// Concurrency: an update/delete first locks its row (SELECT … FOR UPDATE), so If-Match is a true
// compare-and-set across replicas; an Idempotency-Key is claimed by inserting its row first (a
// concurrent create with the same key waits on it and then answers 409); the expiry sweep takes
// rows FOR UPDATE SKIP LOCKED, so replicas sweeping together never delete one row twice. A write
// counted against a quota (../quota.ts) takes the agent's transaction lock before counting.

import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Actor, AfterWrite, BreadcrumbRow } from '../breadcrumb-writes.js';
import { embeddingText, encodeVector } from '../breadcrumb-writes.js';
import type { VectorStore } from '../embeddings.js';
import type { WritesPort } from '../backend.js';
import { HttpError, httpErrors } from '../http-util.js';
import {
  CHARGED_AGENT_TAG_PREFIX,
  chargedAgent,
  checkQuota,
  quotaAgent,
  updateCharges,
  type AgentQuota,
  type Usage,
} from '../quota.js';
import { leavesTombstone } from '../tombstones.js';
import type { CreateFields, PatchFields } from '../validate.js';
import { transaction } from './db.js';
import type { PgEventLog } from './events.js';

/** First key of the per-agent quota's transaction lock (the second is the agent's hash); an int4. */
const QUOTA_LOCK = 730_525_004;

function contextDigest(contextJson: string): { checksum: string; size: number } {
  return {
    checksum: 'sha256:' + createHash('sha256').update(contextJson).digest('hex'),
    size: Buffer.byteLength(contextJson),
  };
}

function uniqueTags(tags: string[]): string[] {
  return tags.length < 2 ? tags : [...new Set(tags)];
}

const COLUMNS =
  'write_seq, id, owner_id, title, description, semantic_version, context, tags, schema_name, llm_hints, visibility, sensitivity, version, checksum, size_bytes, ttl, expires_ms, created_at, updated_at, updated_ms, created_by, updated_by';
const SELECT_VISIBLE_FOR_UPDATE = `SELECT ${COLUMNS} FROM breadcrumbs WHERE id = $1 AND (expires_ms IS NULL OR expires_ms > $2) FOR UPDATE`;
const EXPIRED = 500;

/** Rows one retention transaction removes. */
const REMOVE_CHUNK = 200;

/** The PostgreSQL write side: the port, and retention's removal by seq. */
export type PgWrites = WritesPort &
  VectorStore & {
    /** Removes the records still at these seqs (skipping rows another transaction holds) with their satellites and events. */
    removeRows(seqs: number[], reason: string): Promise<number>;
  };

/** Builds the write side over `pool`, appending through `log`. */
export function createPgWrites(pool: pg.Pool, log: PgEventLog, afterWrite?: AfterWrite, quota?: AgentQuota): PgWrites {
  /** Refuses (403 quota.exceeded) a write that would take `agent` past its quota (undefined: not counted); serialised per agent. */
  const charge = async (client: pg.PoolClient, agent: string | null | undefined, adding: Usage): Promise<void> => {
    if (agent === undefined || quota === undefined) return;
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [QUOTA_LOCK, quotaAgent(agent)]);
    const usage = (
      await client.query<{ records: string; bytes: string }>(
        `SELECT (o.records + m.records) AS records, (o.bytes + m.bytes) AS bytes
         FROM (SELECT count(*) + (SELECT count(*) FROM breadcrumb_history WHERE ${
           agent === null ? 'updated_by IS NULL' : 'updated_by = $1'
         }) AS records, coalesce(sum(size_bytes), 0) AS bytes FROM breadcrumbs
               WHERE ${agent === null ? 'created_by IS NULL AND $1::text IS NULL' : 'created_by = $1'}) o,
              (SELECT count(*) AS records, coalesce(sum(b.size_bytes), 0) AS bytes FROM breadcrumb_tags t
               JOIN breadcrumbs b ON b.write_seq = t.write_seq WHERE t.tag = $2 AND b.created_by = ANY($3::text[])) m`,
        [agent, agent === null ? null : CHARGED_AGENT_TAG_PREFIX + agent, quota.exempt],
      )
    ).rows[0];
    checkQuota(quota, agent, { records: Number(usage?.records), bytes: Number(usage?.bytes) }, adding);
  };
  const visibleForUpdate = async (client: pg.PoolClient, id: string, actor: Actor): Promise<BreadcrumbRow> => {
    const row = (await client.query<BreadcrumbRow>(SELECT_VISIBLE_FOR_UPDATE, [id, Date.now()])).rows[0];
    if (!row || (actor.scoped && row.owner_id !== actor.ownerId))
      throw httpErrors.notFound(`breadcrumb "${id}" not found`);
    return row;
  };

  // Deletes the (locked) row and its satellites in one statement; returns its event's id.
  const removeRow = async (client: pg.PoolClient, row: BreadcrumbRow, reason: string | undefined): Promise<number> => {
    const tags = JSON.parse(row.tags) as string[];
    const event = await log.append(client, {
      type: 'breadcrumb.deleted',
      breadcrumb_id: row.id,
      owner_id: row.owner_id,
      version: row.version,
      tags,
      schema_name: row.schema_name,
      deleted_at: new Date().toISOString(),
      ...(reason ? { reason } : {}),
    });
    await client.query(
      `WITH t AS (DELETE FROM breadcrumb_tags WHERE write_seq = $2), h AS (DELETE FROM breadcrumb_history WHERE breadcrumb_id = $1),
        e AS (DELETE FROM breadcrumb_embeddings WHERE breadcrumb_id = $1) DELETE FROM breadcrumbs WHERE write_seq = $2`,
      [row.id, row.write_seq],
    );
    return event;
  };

  const conflict = async (key: string, actor: Actor): Promise<never> => {
    const existing = (
      await pool.query<{ breadcrumb_id: string; owner_id: string }>(
        'SELECT breadcrumb_id, owner_id FROM idempotency_keys WHERE key = $1',
        [key],
      )
    ).rows[0];
    const sameOwner = existing?.owner_id === actor.ownerId;
    throw new HttpError(
      409,
      'conflict',
      `duplicate idempotency key: Idempotency-Key ${JSON.stringify(key)} was already used`,
      sameOwner && existing ? { id: existing.breadcrumb_id } : undefined,
    );
  };

  return {
    async create(fields: CreateFields, actor: Actor, key?: string) {
      const id = randomUUID();
      const context = JSON.stringify(fields.context);
      const digest = contextDigest(context);
      let duplicate = false;
      let written = 0;
      await transaction(pool, async (client) => {
        if (key !== undefined) {
          const claimed = await client.query(
            'INSERT INTO idempotency_keys (key, breadcrumb_id, owner_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING',
            [key, id, actor.ownerId, new Date().toISOString()],
          );
          if (claimed.rowCount === 0) {
            duplicate = true;
            return;
          }
        }
        await charge(client, chargedAgent(quota, actor.agentId, fields.tags), { records: 1, bytes: digest.size });
        const now = await log.now(client);
        const seq = await log.append(client, {
          type: 'breadcrumb.updated',
          breadcrumb_id: id,
          owner_id: actor.ownerId,
          version: 1,
          tags: fields.tags,
          schema_name: fields.schema_name,
          updated_at: now.iso,
          context: fields.context,
        });
        await client.query(
          `WITH b AS (INSERT INTO breadcrumbs (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1, $13, $14, $15, $16, $17, $17, $18, $19, $19))
           INSERT INTO breadcrumb_tags (tag, write_seq) SELECT unnest($20::text[]), $1`,
          [
            seq,
            id,
            actor.ownerId,
            fields.title,
            fields.description,
            fields.semantic_version,
            context,
            JSON.stringify(fields.tags),
            fields.schema_name,
            fields.llm_hints === null ? null : JSON.stringify(fields.llm_hints),
            fields.visibility,
            fields.sensitivity,
            digest.checksum,
            digest.size,
            fields.ttl,
            fields.expiresMs,
            now.iso,
            now.ms,
            actor.agentId,
            uniqueTags(fields.tags),
          ],
        );
        if (fields.embedding) {
          await client.query('INSERT INTO breadcrumb_embeddings (breadcrumb_id, dim, vec) VALUES ($1, $2, $3)', [
            id,
            fields.embedding.length,
            encodeVector(fields.embedding),
          ]);
        }
        written = seq;
      });
      if (duplicate) return conflict(key as string, actor);
      await log.published(written);
      if (!fields.embedding) afterWrite?.(id, 1, embeddingText(fields.title, context));
      return { id };
    },

    async update(id: string, patch: PatchFields, actor: Actor, ifMatch?: number) {
      const { version, seq, text } = await transaction(pool, async (client) => {
        const row = await visibleForUpdate(client, id, actor);
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
        for (const [agent, adding] of updateCharges(quota, row, actor.agentId, digest.size - row.size_bytes))
          await charge(client, agent, adding);
        // The database's clock, never before the record's last write.
        const now = await log.now(client);
        if (now.ms < row.updated_ms) Object.assign(now, { ms: row.updated_ms, iso: row.updated_at });
        const next = row.version + 1;
        const tags = patch.tags ?? (JSON.parse(row.tags) as string[]);
        const schemaName = patch.schema_name !== undefined ? patch.schema_name : row.schema_name;
        const seq = await log.append(client, {
          type: 'breadcrumb.updated',
          breadcrumb_id: id,
          owner_id: row.owner_id,
          version: next,
          tags,
          schema_name: schemaName,
          updated_at: now.iso,
          context: patch.context ?? (JSON.parse(row.context) as Record<string, unknown>),
        });
        const pick = <K extends keyof BreadcrumbRow>(key: K, value: BreadcrumbRow[K] | undefined): BreadcrumbRow[K] =>
          value !== undefined ? value : row[key];
        await client.query(
          `WITH u AS (UPDATE breadcrumbs SET write_seq = $1, title = $2, description = $3, semantic_version = $4, context = $5, tags = $6,
              schema_name = $7, llm_hints = $8, visibility = $9, sensitivity = $10, version = $11, checksum = $12, size_bytes = $13, ttl = $14,
              expires_ms = $15, updated_at = $16, updated_ms = $17, updated_by = $18 WHERE write_seq = $19),
            d AS (DELETE FROM breadcrumb_tags WHERE write_seq = $19),
            h AS (INSERT INTO breadcrumb_history (breadcrumb_id, version, context, updated_at, updated_by) VALUES ($20, $21, $22, $23, $24))
           INSERT INTO breadcrumb_tags (tag, write_seq) SELECT unnest($25::text[]), $1`,
          [
            seq,
            pick('title', patch.title),
            pick('description', patch.description),
            pick('semantic_version', patch.semantic_version),
            context,
            JSON.stringify(tags),
            schemaName,
            patch.llm_hints !== undefined
              ? patch.llm_hints === null
                ? null
                : JSON.stringify(patch.llm_hints)
              : row.llm_hints,
            pick('visibility', patch.visibility),
            pick('sensitivity', patch.sensitivity),
            next,
            digest.checksum,
            digest.size,
            pick('ttl', patch.ttl),
            pick('expires_ms', patch.expiresMs),
            now.iso,
            now.ms,
            actor.agentId,
            row.write_seq,
            id,
            row.version,
            row.context,
            row.updated_at,
            row.updated_by,
            uniqueTags(tags),
          ],
        );
        // An explicit embedding wins; otherwise a changed title/context is re-embedded after the commit.
        let text: string | undefined;
        if (patch.embedding === null)
          await client.query('DELETE FROM breadcrumb_embeddings WHERE breadcrumb_id = $1', [id]);
        else if (patch.embedding) await upsertVector(client, id, patch.embedding);
        else if (patch.title !== undefined || patch.context !== undefined)
          text = embeddingText(pick('title', patch.title), context);
        return { version: next, seq, text };
      });
      await log.published(seq);
      if (text !== undefined) afterWrite?.(id, version, text);
      return { version };
    },

    async remove(id: string, actor: Actor) {
      const seq = await transaction(pool, async (client) => {
        const row = await visibleForUpdate(client, id, actor);
        return removeRow(client, row, undefined);
      });
      await log.published(seq);
    },

    storeIfAt: (id, version, vector) => storeVectorIfAt(pool, id, version, vector),
    removeRows: (seqs, reason) => removeRowsAt(pool, log, seqs, reason),

    async pruneExpired() {
      let total = 0;
      for (;;) {
        const removed: { count: number; last: number } = await transaction(pool, async (client) => {
          const rows = (
            await client.query<BreadcrumbRow>(
              `SELECT ${COLUMNS} FROM breadcrumbs WHERE expires_ms IS NOT NULL AND expires_ms <= $1 ORDER BY expires_ms LIMIT ${EXPIRED} FOR UPDATE SKIP LOCKED`,
              [Date.now()],
            )
          ).rows;
          if (rows.length === 0) return { count: 0, last: 0 };
          let last = 0;
          for (const row of rows) last = await removeRow(client, row, 'expired');
          return { count: rows.length, last };
        });
        if (removed.count > 0) await log.published(removed.last);
        total += removed.count;
        if (removed.count < EXPIRED) return total;
      }
    },
  };
}

function upsertVector(client: pg.PoolClient, id: string, vector: number[]): Promise<unknown> {
  return client.query(
    'INSERT INTO breadcrumb_embeddings (breadcrumb_id, dim, vec) VALUES ($1, $2, $3) ON CONFLICT (breadcrumb_id) DO UPDATE SET dim = excluded.dim, vec = excluded.vec',
    [id, vector.length, encodeVector(vector)],
  );
}

/** Stores the embedder's vector only while the record is still at the embedded version (a newer write re-queued it or set its own). */
async function storeVectorIfAt(pool: pg.Pool, id: string, version: number, vector: number[]): Promise<void> {
  // The row lock orders this against a concurrent update or delete of the record.
  await transaction(pool, async (client) => {
    const at = (
      await client.query<{ version: number }>('SELECT version FROM breadcrumbs WHERE id = $1 FOR SHARE', [id])
    ).rows[0];
    if (at?.version === version) await upsertVector(client, id, vector);
  });
}

/** Retention's removal: the records still at these seqs, with their satellites and events, a chunk per transaction. */
async function removeRowsAt(pool: pg.Pool, log: PgEventLog, seqs: number[], reason: string): Promise<number> {
  let total = 0;
  for (let i = 0; i < seqs.length; i += REMOVE_CHUNK) {
    const chunk = seqs.slice(i, i + REMOVE_CHUNK);
    const done: { count: number; last: number } = await transaction(pool, async (client) => {
      // Rows another transaction holds (an update, another replica's sweep) are skipped, not waited for.
      const rows = (
        await client.query<BreadcrumbRow>(
          `SELECT ${COLUMNS} FROM breadcrumbs WHERE write_seq = ANY($1::bigint[]) ORDER BY write_seq FOR UPDATE SKIP LOCKED`,
          [chunk],
        )
      ).rows;
      if (rows.length === 0) return { count: 0, last: 0 };
      const now = await log.now(client);
      const last = await log.appendMany(
        client,
        rows.map((row) => ({
          type: 'breadcrumb.deleted',
          breadcrumb_id: row.id,
          owner_id: row.owner_id,
          version: row.version,
          tags: JSON.parse(row.tags) as string[],
          schema_name: row.schema_name,
          deleted_at: now.iso,
          reason,
        })),
      );
      await client.query(
        `WITH t AS (DELETE FROM breadcrumb_tags WHERE write_seq = ANY($2::bigint[])),
          h AS (DELETE FROM breadcrumb_history WHERE breadcrumb_id = ANY($1::text[])),
          e AS (DELETE FROM breadcrumb_embeddings WHERE breadcrumb_id = ANY($1::text[]))
         DELETE FROM breadcrumbs WHERE write_seq = ANY($2::bigint[])`,
        [rows.map((row) => row.id), rows.map((row) => row.write_seq)],
      );
      const tombs = rows.filter((row) => leavesTombstone(row.schema_name, reason));
      if (tombs.length > 0)
        await client.query(
          `INSERT INTO removed_requests (id, owner_id, reason, removed_at) SELECT unnest($1::text[]), unnest($2::text[]), $3, $4
           ON CONFLICT (id) DO UPDATE SET reason = excluded.reason, removed_at = excluded.removed_at`,
          [tombs.map((row) => row.id), tombs.map((row) => row.owner_id), reason, now.iso],
        );
      return { count: rows.length, last };
    });
    if (done.count > 0) await log.published(done.last);
    total += done.count;
  }
  return total;
}
