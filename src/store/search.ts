// `GET /breadcrumbs/search`: upstream's nearest-neighbour search, answered without a bundled model.
//
// `qvec` ranks by cosine similarity against the embeddings stored on breadcrumbs (given on write,
// or computed by the operator's embedder); records without a (same-length) embedding rank after
// all embedded ones, newest first — upstream's `ORDER BY embedding <#> q` puts NULLs last too.
// `q` is embedded by the configured embedder when there is one; without one (or when it fails)
// `q` is ranked by SQLite FTS5 relevance (bm25; title weighs double). `nn` (default 5, at least 1)
// is the number of results either way. Neither `q` nor `qvec`: an empty list, like upstream.

import type { Logger } from '../logger.js';
import { coerceError } from '../errors.js';
import type { Actor } from './breadcrumb-writes.js';
import type { BreadcrumbReads, ListCursor } from './breadcrumb-reads.js';
import type { Db } from './db.js';
import { cosine, decodeVector, type Embedder } from './embeddings.js';
import type { SearchIndex } from './fts-index.js';

/** A validated search query. */
export interface SearchQuery {
  q?: string;
  qvec?: number[];
  nn: number;
  tag?: string;
  schemaName?: string;
  includeContext: boolean;
}

/** The search service. */
export interface BreadcrumbSearch {
  /** The ranked results as a cursor: only their row ids are held; each row is read when it is sent. */
  search(query: SearchQuery, actor: Actor): Promise<ListCursor>;
}

/** Default `nn`, as upstream. */
export const DEFAULT_NN = 5;
const MAX_TERMS = 64;

/**
 * The FTS5 MATCH expression of free text: its words as quoted prefix terms, OR-ed — so no query
 * syntax of the caller ever reaches FTS5, and `weather` also finds `weatherby`.
 */
export function ftsMatch(text: string): string | undefined {
  const words = text.match(/[\p{L}\p{N}]+/gu);
  if (!words) return undefined;
  return [...new Set(words)]
    .slice(0, MAX_TERMS)
    .map((w) => `"${w}"*`)
    .join(' OR ');
}

function filters(query: SearchQuery, actor: Actor): { where: string; params: Record<string, unknown> } {
  const where = ['(b.expires_ms IS NULL OR b.expires_ms > @now)'];
  const params: Record<string, unknown> = { now: Date.now() };
  if (query.schemaName !== undefined) {
    where.push('b.schema_name = @schema');
    params.schema = query.schemaName;
  }
  if (query.tag !== undefined) {
    where.push('EXISTS (SELECT 1 FROM breadcrumb_tags t WHERE t.tag = @tag AND t.write_seq = b.write_seq)');
    params.tag = query.tag;
  }
  if (actor.scoped) {
    where.push('b.owner_id = @owner');
    params.owner = actor.ownerId;
  }
  return { where: where.join(' AND '), params };
}

/** Builds the search over `db`; `embedder` (optional) embeds `q`; `index` is brought up to date before each full-text query. */
export function createBreadcrumbSearch(options: {
  db: Db;
  reads: BreadcrumbReads;
  index: SearchIndex;
  embedder: Embedder | undefined;
  logger: Logger;
}): BreadcrumbSearch {
  const { db, reads, index, embedder, logger } = options;
  const cache = new Map<string, ReturnType<Db['prepare']>>();
  const prepare = (sql: string): ReturnType<Db['prepare']> => {
    let stmt = cache.get(sql);
    if (!stmt) {
      stmt = db.prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt;
  };

  // Reads each winner when the route asks for it, so nn = "everything" never builds one huge reply.
  const cursorOver = (seqs: number[], includeContext: boolean): ListCursor => {
    let index = 0;
    return {
      next() {
        while (index < seqs.length) {
          const item = reads.itemAt(seqs[index++] as number, includeContext);
          if (item) return item;
        }
        return undefined;
      },
      close() {
        index = seqs.length;
      },
    };
  };

  const byText = (text: string, query: SearchQuery, actor: Actor): number[] => {
    const match = ftsMatch(text);
    if (match === undefined) return [];
    // every write answered before this search is in the index; if indexing fails, what is indexed is searched
    try {
      index.catchUp();
    } catch (error) {
      logger.warn('indexing breadcrumbs before a search failed; searching the rows indexed so far', {
        error: coerceError(error).message,
      });
    }
    const { where, params } = filters(query, actor);
    const sql = `SELECT b.write_seq FROM breadcrumbs_fts f JOIN breadcrumbs b ON b.write_seq = f.rowid
      WHERE breadcrumbs_fts MATCH @match AND ${where} ORDER BY bm25(breadcrumbs_fts, 2.0, 1.0, 1.0), b.write_seq DESC LIMIT @nn`;
    return prepare(sql)
      .pluck()
      .all({ ...params, match, nn: query.nn }) as number[];
  };

  // One pass over (seq, vector) only — contexts are read for the `nn` winners alone.
  const byVector = (qvec: number[], query: SearchQuery, actor: Actor): number[] => {
    const { where, params } = filters(query, actor);
    const sql = `SELECT b.write_seq AS seq, e.vec AS vec FROM breadcrumbs b LEFT JOIN breadcrumb_embeddings e ON e.breadcrumb_id = b.id
      WHERE ${where} ORDER BY b.write_seq DESC`;
    const scored: Array<{ seq: number; score: number }> = [];
    for (const row of prepare(sql).iterate(params) as IterableIterator<{ seq: number; vec: Buffer | null }>) {
      let score = Number.NEGATIVE_INFINITY;
      if (row.vec && row.vec.byteLength === qvec.length * 4) score = cosine(qvec, decodeVector(row.vec));
      scored.push({ seq: row.seq, score });
    }
    scored.sort((a, b) => b.score - a.score || 0);
    return scored.slice(0, query.nn).map((entry) => entry.seq);
  };

  const ranked = async (query: SearchQuery, actor: Actor): Promise<number[]> => {
    if (query.qvec !== undefined) return byVector(query.qvec, query, actor);
    if (query.q === undefined) return [];
    if (embedder) {
      try {
        const vector = await embedder.embed(query.q, AbortSignal.timeout(30_000));
        return byVector(vector, query, actor);
      } catch (error) {
        logger.warn('embedding the search text failed; ranking it with full-text search', {
          embedder: embedder.describe,
          error: coerceError(error).message,
        });
      }
    }
    return byText(query.q, query, actor);
  };

  return {
    search: async (query, actor) => cursorOver(await ranked(query, actor), query.includeContext),
  };
}
