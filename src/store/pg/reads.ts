// Breadcrumb reads and search on PostgreSQL, mirroring ../breadcrumb-reads.ts and ../search.ts:
// the same JSON shapes, expiry and owner scoping. A listing reads keyset pages (write_seq below
// the last one sent) as the route asks for rows — no snapshot: a row updated meanwhile moves to
// the top of the order and is not repeated or seen again in that listing (like SQLite's keyset
// mode). Text search uses the generated tsvector (prefix terms OR-ed, ranked by ts_rank with the
// title weighing double, newest first on ties); vector search ranks stored embeddings by cosine.

import type pg from 'pg';
import { coerceError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { ItemCursor, ReadsPort, SearchPort } from '../backend.js';
import { fullView, listColumns, toItem, type ListFilter, type ListRow } from '../breadcrumb-reads.js';
import type { Actor, BreadcrumbRow } from '../breadcrumb-writes.js';
import { cosine, decodeVector, type Embedder } from '../embeddings.js';
import { httpErrors } from '../http-util.js';
import type { SearchQuery } from '../search.js';
import { expired, type Tombstone } from '../tombstones.js';

const PAGE = 64;
const MAX_TERMS = 64;

function parseJson(text: string | null): unknown {
  return text === null ? null : (JSON.parse(text) as unknown);
}

/** The tsquery of free text: its words as quoted prefix terms, OR-ed (no caller syntax reaches PostgreSQL). */
export function tsQuery(text: string): string | undefined {
  const words = text.match(/[\p{L}\p{N}]+/gu);
  if (!words) return undefined;
  return [...new Set(words.map((w) => w.toLowerCase()))]
    .slice(0, MAX_TERMS)
    .map((w) => `'${w}':*`)
    .join(' | ');
}

/** Reads and search over `pool`. */
export function createPgReads(
  pool: pg.Pool,
  options: { embedder: Embedder | undefined; logger: Logger },
): ReadsPort & SearchPort {
  const visibleRow = async (id: string, actor: Actor): Promise<BreadcrumbRow | undefined> => {
    const row = (
      await pool.query<BreadcrumbRow>(
        'SELECT * FROM breadcrumbs WHERE id = $1 AND (expires_ms IS NULL OR expires_ms > $2)',
        [id, Date.now()],
      )
    ).rows[0];
    return !row || (actor.scoped && row.owner_id !== actor.ownerId) ? undefined : row;
  };
  const mustSee = async (id: string, actor: Actor): Promise<BreadcrumbRow> => {
    const row = await visibleRow(id, actor);
    if (row) return row;
    const tomb = (
      await pool.query<Tombstone>('SELECT owner_id, reason, removed_at FROM removed_requests WHERE id = $1', [id])
    ).rows[0];
    throw expired(id, tomb, actor) ?? httpErrors.notFound(`breadcrumb "${id}" not found`);
  };

  // WHERE clause and parameters shared by listings and search ($1 is `now`).
  const filters = (
    tag: string | undefined,
    schemaName: string | undefined,
    actor: Actor,
    tagJoined: boolean,
  ): { where: string[]; params: unknown[] } => {
    const params: unknown[] = [Date.now()];
    const where = ['(b.expires_ms IS NULL OR b.expires_ms > $1)'];
    if (tag !== undefined) {
      params.push(tag);
      where.push(
        tagJoined
          ? `t.tag = $${params.length}`
          : `EXISTS (SELECT 1 FROM breadcrumb_tags t WHERE t.tag = $${params.length} AND t.write_seq = b.write_seq)`,
      );
    }
    if (schemaName !== undefined) {
      params.push(schemaName);
      where.push(`b.schema_name = $${params.length}`);
    }
    if (actor.scoped) {
      params.push(actor.ownerId);
      where.push(`b.owner_id = $${params.length}`);
    }
    return { where, params };
  };

  const list = (filter: ListFilter, actor: Actor): ItemCursor => {
    const tagged = filter.tag !== undefined;
    const { where, params } = filters(filter.tag, filter.schemaName, actor, true);
    const seq = tagged ? 't.write_seq' : 'b.write_seq';
    const from = tagged ? 'breadcrumb_tags t JOIN breadcrumbs b ON b.write_seq = t.write_seq' : 'breadcrumbs b';
    const sql = `SELECT ${listColumns(filter.includeContext)} FROM ${from} WHERE ${where.join(' AND ')} AND ${seq} < $${params.length + 1}
      ORDER BY ${seq} DESC LIMIT $${params.length + 2} OFFSET $${params.length + 3}`;
    let before = Number.MAX_SAFE_INTEGER;
    let offset = filter.offset;
    let remaining = filter.limit ?? Number.POSITIVE_INFINITY;
    let page: ListRow[] = [];
    let index = 0;
    let done = false;
    const take = (): Record<string, unknown> => {
      remaining--;
      return toItem(page[index++] as ListRow);
    };
    return {
      next() {
        if (index < page.length) return take();
        if (done || remaining <= 0) return undefined;
        const size = Math.min(PAGE, remaining);
        return pool.query<ListRow>(sql, [...params, before, size, offset]).then(({ rows }) => {
          page = rows;
          index = 0;
          offset = 0;
          if (rows.length < size) done = true;
          if (rows.length === 0) return undefined;
          before = (rows[rows.length - 1] as ListRow).seq;
          return take();
        });
      },
      close() {
        page = [];
        done = true;
      },
    };
  };

  const itemAt = async (writeSeq: number, includeContext: boolean): Promise<Record<string, unknown> | undefined> => {
    const row = (
      await pool.query<ListRow>(
        `SELECT ${listColumns(includeContext)} FROM breadcrumbs b WHERE b.write_seq = $1 AND (b.expires_ms IS NULL OR b.expires_ms > $2)`,
        [writeSeq, Date.now()],
      )
    ).rows[0];
    return row ? toItem(row) : undefined;
  };

  const cursorOver = (seqs: number[], includeContext: boolean): ItemCursor => {
    let index = 0;
    const next = async (): Promise<Record<string, unknown> | undefined> => {
      while (index < seqs.length) {
        const item = await itemAt(seqs[index++] as number, includeContext);
        if (item) return item;
      }
      return undefined;
    };
    return { next, close: () => void (index = seqs.length) };
  };

  const byText = async (text: string, query: SearchQuery, actor: Actor): Promise<number[]> => {
    const match = tsQuery(text);
    if (match === undefined) return [];
    const { where, params } = filters(query.tag, query.schemaName, actor, false);
    params.push(match, query.nn);
    const q = `to_tsquery('simple', $${params.length - 1})`;
    const sql = `SELECT b.write_seq FROM breadcrumbs b WHERE b.fts @@ ${q} AND ${where.join(' AND ')}
      ORDER BY ts_rank('{0.1, 0.2, 0.5, 1.0}', b.fts, ${q}) DESC, b.write_seq DESC LIMIT $${params.length}`;
    return (await pool.query<{ write_seq: number }>(sql, params)).rows.map((row) => row.write_seq);
  };

  const byVector = async (qvec: number[], query: SearchQuery, actor: Actor): Promise<number[]> => {
    const { where, params } = filters(query.tag, query.schemaName, actor, false);
    const sql = `SELECT b.write_seq AS seq, e.vec AS vec FROM breadcrumbs b LEFT JOIN breadcrumb_embeddings e ON e.breadcrumb_id = b.id
      WHERE ${where.join(' AND ')} ORDER BY b.write_seq DESC`;
    const scored = (await pool.query<{ seq: number; vec: Buffer | null }>(sql, params)).rows.map((row) => ({
      seq: row.seq,
      score:
        row.vec && row.vec.byteLength === qvec.length * 4
          ? cosine(qvec, decodeVector(row.vec))
          : Number.NEGATIVE_INFINITY,
    }));
    scored.sort((a, b) => b.score - a.score || 0);
    return scored.slice(0, query.nn).map((entry) => entry.seq);
  };

  const ranked = async (query: SearchQuery, actor: Actor): Promise<number[]> => {
    if (query.qvec !== undefined) return byVector(query.qvec, query, actor);
    if (query.q === undefined) return [];
    if (options.embedder) {
      try {
        return await byVector(await options.embedder.embed(query.q, AbortSignal.timeout(30_000)), query, actor);
      } catch (error) {
        options.logger.warn('embedding the search text failed; ranking it with full-text search', {
          embedder: options.embedder.describe,
          error: coerceError(error).message,
        });
      }
    }
    return byText(query.q, query, actor);
  };

  return {
    async contextView(id, actor) {
      const row = await mustSee(id, actor);
      return {
        id: row.id,
        title: row.title,
        description: row.description,
        semantic_version: row.semantic_version,
        context: parseJson(row.context),
        tags: parseJson(row.tags),
        schema_name: row.schema_name,
        llm_hints: parseJson(row.llm_hints),
        version: row.version,
        updated_at: row.updated_at,
      };
    },
    async full(id, actor) {
      const row = await mustSee(id, actor);
      const hit = (
        await pool.query<{ vec: Buffer }>('SELECT vec FROM breadcrumb_embeddings WHERE breadcrumb_id = $1', [id])
      ).rows[0];
      return fullView(row, hit ? Array.from(decodeVector(hit.vec)) : null);
    },
    list,
    async history(id, actor) {
      const current = await visibleRow(id, actor);
      if (!current) return [];
      const rows = (
        await pool.query<{ version: number; context: string; updated_at: string; updated_by: string | null }>(
          'SELECT version, context, updated_at, updated_by FROM breadcrumb_history WHERE breadcrumb_id = $1 ORDER BY version DESC',
          [id],
        )
      ).rows;
      return [current, ...rows].map((row) => ({
        version: row.version,
        context: parseJson(row.context),
        updated_at: row.updated_at,
        updated_by: row.updated_by,
      }));
    },
    search: async (query, actor) => cursorOver(await ranked(query, actor), query.includeContext),
  };
}
