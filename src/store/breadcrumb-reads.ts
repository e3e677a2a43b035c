// Breadcrumb reads: one record (context view or full), listings (by tag via the tags table, by
// schema, or all; newest write first), search (see search.ts) and version history. Expired
// records are invisible; with auth on, every read is limited to the actor's owner.
//
// A listing is a cursor pulled one row at a time, so the route can stream it under backpressure.
// On a file database the cursor iterates on a read-only connection of its own (a consistent
// snapshot that never blocks writes); past MAX_READERS concurrent listings, and for `:memory:`,
// it reads keyset pages on the main connection between ticks instead (no snapshot: a row updated
// meanwhile moves to the top of the order and is not repeated or seen again in that listing).

import type { Db } from './db.js';
import { openReader } from './db.js';
import type { Actor, BreadcrumbRow } from './breadcrumb-writes.js';
import { decodeVector } from './embeddings.js';
import { httpErrors } from './http-util.js';
import { expired, type Tombstone } from './tombstones.js';

/** Filters of a listing; `limit` undefined means every matching row (like upstream). */
export interface ListFilter {
  tag?: string;
  schemaName?: string;
  limit?: number;
  offset: number;
  includeContext: boolean;
}

/** A listing in progress; `next()` returns undefined at the end. Always `close()` it. */
export interface ListCursor {
  next(): Record<string, unknown> | undefined;
  close(): void;
}

/** Breadcrumb reads, each returning the JSON shape of its route. */
export interface BreadcrumbReads {
  contextView(id: string, actor: Actor): Record<string, unknown>;
  full(id: string, actor: Actor): Record<string, unknown>;
  list(filter: ListFilter, actor: Actor): ListCursor;
  history(id: string, actor: Actor): Array<Record<string, unknown>>;
  /** The list item of the row at `writeSeq` (search results), or undefined when gone. */
  itemAt(writeSeq: number, includeContext: boolean): Record<string, unknown> | undefined;
  close(): void;
}

/** A list row as selected (JSON columns as text). */
export type ListRow = Pick<BreadcrumbRow, 'id' | 'title' | 'tags' | 'schema_name' | 'version' | 'updated_at'> & {
  seq: number;
  context?: string;
};

/** Concurrent listings that get their own snapshot connection. */
export const MAX_READERS = 8;
const KEYSET_PAGE = 32;

function parseJson(text: string | null): unknown {
  return text === null ? null : (JSON.parse(text) as unknown);
}

/** The JSON list item of a row: `{id, title, tags, schema_name, version, updated_at}` (+ `context`). */
export function toItem(row: ListRow): Record<string, unknown> {
  const item: Record<string, unknown> = {
    id: row.id,
    title: row.title,
    tags: parseJson(row.tags),
    schema_name: row.schema_name,
    version: row.version,
    updated_at: row.updated_at,
  };
  if (row.context !== undefined) item.context = parseJson(row.context);
  return item;
}

/** The SELECT columns of a list row. */
export function listColumns(includeContext: boolean): string {
  return (
    'b.write_seq AS seq, b.id, b.title, b.tags, b.schema_name, b.version, b.updated_at' +
    (includeContext ? ', b.context' : '')
  );
}

function listSql(filter: ListFilter, scoped: boolean, keyset: boolean): string {
  const where = ['(b.expires_ms IS NULL OR b.expires_ms > @now)'];
  if (filter.schemaName !== undefined) where.push('b.schema_name = @schema');
  if (scoped) where.push('b.owner_id = @owner');
  const seq = filter.tag !== undefined ? 't.write_seq' : 'b.write_seq';
  if (keyset) where.push(`${seq} < @before`);
  const from =
    filter.tag !== undefined ? 'breadcrumb_tags t JOIN breadcrumbs b ON b.write_seq = t.write_seq' : 'breadcrumbs b';
  if (filter.tag !== undefined) where.unshift('t.tag = @tag');
  return `SELECT ${listColumns(filter.includeContext)} FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${seq} DESC LIMIT @limit OFFSET @offset`;
}

/** The full view of a breadcrumb (`GET /breadcrumbs/:id/full`), the same on every backend. */
export function fullView(row: BreadcrumbRow, embedding: number[] | null): Record<string, unknown> {
  return {
    id: row.id,
    owner_id: row.owner_id,
    title: row.title,
    description: row.description,
    semantic_version: row.semantic_version,
    context: parseJson(row.context),
    tags: parseJson(row.tags),
    schema_name: row.schema_name,
    llm_hints: parseJson(row.llm_hints),
    visibility: row.visibility,
    sensitivity: row.sensitivity,
    version: row.version,
    checksum: row.checksum,
    ttl: row.ttl,
    // Upstream's TTL fields: this store knows one kind of TTL, an explicit expiry time; it counts no
    // reads (no usage-based TTL), so read_count is 0.
    ttl_type: row.ttl === null ? null : 'datetime',
    ttl_config: null,
    read_count: 0,
    ttl_source: row.ttl === null ? null : 'explicit',
    created_at: row.created_at,
    updated_at: row.updated_at,
    created_by: row.created_by,
    updated_by: row.updated_by,
    size_bytes: row.size_bytes,
    embedding,
  };
}

/** Builds the read side over `db`. */
export function createBreadcrumbReads(db: Db): BreadcrumbReads {
  const selectRow = db.prepare('SELECT * FROM breadcrumbs WHERE id = ? AND (expires_ms IS NULL OR expires_ms > ?)');
  const selectVector = db.prepare('SELECT vec FROM breadcrumb_embeddings WHERE breadcrumb_id = ?');
  const selectHistory = db.prepare(
    'SELECT version, context, updated_at, updated_by FROM breadcrumb_history WHERE breadcrumb_id = ? ORDER BY version DESC',
  );
  const selectAt = [false, true].map((ctx) =>
    db.prepare<[number, number]>(
      `SELECT ${listColumns(ctx)} FROM breadcrumbs b WHERE b.write_seq = ? AND (b.expires_ms IS NULL OR b.expires_ms > ?)`,
    ),
  );
  const statements = new Map<string, ReturnType<Db['prepare']>>();
  const idle: Db[] = [];
  const readerIds = new WeakMap<Db, number>();
  let nextReaderId = 0;
  let readers = 0;

  const prepared = (
    conn: Db,
    connKey: string,
    filter: ListFilter,
    scoped: boolean,
    keyset: boolean,
  ): ReturnType<Db['prepare']> => {
    const key = `${connKey}|${filter.tag !== undefined}|${filter.schemaName !== undefined}|${scoped}|${filter.includeContext}|${keyset}`;
    let stmt = statements.get(key);
    if (!stmt) {
      stmt = conn.prepare(listSql(filter, scoped, keyset));
      statements.set(key, stmt);
    }
    return stmt;
  };

  const params = (filter: ListFilter, actor: Actor): Record<string, unknown> => {
    const out: Record<string, unknown> = { now: Date.now(), limit: filter.limit ?? -1, offset: filter.offset };
    if (filter.tag !== undefined) out.tag = filter.tag;
    if (filter.schemaName !== undefined) out.schema = filter.schemaName;
    if (actor.scoped) out.owner = actor.ownerId;
    return out;
  };

  // Snapshot cursor on a read-only connection of its own.
  const snapshotCursor = (filter: ListFilter, actor: Actor): ListCursor | undefined => {
    if (readers >= MAX_READERS) return undefined;
    const conn = idle.pop() ?? openReader(db);
    if (!conn) return undefined;
    readers++;
    if (!readerIds.has(conn)) readerIds.set(conn, nextReaderId++);
    const connKey = `r${readerIds.get(conn) as number}`;
    const iterator = prepared(conn, connKey, filter, actor.scoped, false).iterate(
      params(filter, actor),
    ) as IterableIterator<ListRow>;
    let open = true;
    return {
      next() {
        if (!open) return undefined;
        const step = iterator.next();
        return step.done ? undefined : toItem(step.value);
      },
      close() {
        if (!open) return;
        open = false;
        iterator.return?.();
        readers--;
        if (idle.length < 2) idle.push(conn);
        else {
          for (const [key] of statements) if (key.startsWith(`${connKey}|`)) statements.delete(key);
          conn.close();
        }
      },
    };
  };

  // Keyset pages on the main connection, read between ticks.
  const keysetCursor = (filter: ListFilter, actor: Actor): ListCursor => {
    const base = params(filter, actor);
    let before = Number.MAX_SAFE_INTEGER;
    let offset = filter.offset;
    let remaining = filter.limit ?? Number.POSITIVE_INFINITY;
    let page: ListRow[] = [];
    let index = 0;
    let done = false;
    return {
      next() {
        if (index >= page.length) {
          if (done || remaining <= 0) return undefined;
          const size = Math.min(KEYSET_PAGE, remaining);
          page = prepared(db, 'main', filter, actor.scoped, true).all({
            ...base,
            before,
            offset,
            limit: size,
          }) as ListRow[];
          index = 0;
          offset = 0;
          if (page.length < size) done = true;
          if (page.length === 0) return undefined;
          before = (page[page.length - 1] as ListRow).seq;
        }
        remaining--;
        return toItem(page[index++] as ListRow);
      },
      close() {
        page = [];
        done = true;
      },
    };
  };

  const selectTombstone = db.prepare('SELECT owner_id, reason, removed_at FROM removed_requests WHERE id = ?');
  const visibleRow = (id: string, actor: Actor): BreadcrumbRow | undefined => {
    const row = selectRow.get(id, Date.now()) as BreadcrumbRow | undefined;
    return !row || (actor.scoped && row.owner_id !== actor.ownerId) ? undefined : row;
  };
  const mustSee = (id: string, actor: Actor): BreadcrumbRow => {
    const row = visibleRow(id, actor);
    if (!row)
      throw (
        expired(id, selectTombstone.get(id) as Tombstone | undefined, actor) ??
        httpErrors.notFound(`breadcrumb "${id}" not found`)
      );
    return row;
  };

  const storedEmbedding = (id: string): number[] | null => {
    const hit = selectVector.get(id) as { vec: Buffer } | undefined;
    return hit ? Array.from(decodeVector(hit.vec)) : null;
  };

  return {
    contextView(id, actor) {
      const row = mustSee(id, actor);
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
    full(id, actor) {
      return fullView(mustSee(id, actor), storedEmbedding(id));
    },
    list(filter, actor) {
      return snapshotCursor(filter, actor) ?? keysetCursor(filter, actor);
    },
    history(id, actor) {
      // Like upstream, an unknown (or invisible) id has an empty history, not a 404.
      const current = visibleRow(id, actor);
      if (!current) return [];
      const rows = selectHistory.all(id) as Array<{
        version: number;
        context: string;
        updated_at: string;
        updated_by: string | null;
      }>;
      return [current, ...rows].map((row) => ({
        version: row.version,
        context: parseJson(row.context),
        updated_at: row.updated_at,
        updated_by: row.updated_by,
      }));
    },
    itemAt(writeSeq, includeContext) {
      const row = selectAt[includeContext ? 1 : 0]?.get(writeSeq, Date.now()) as ListRow | undefined;
      return row ? toItem(row) : undefined;
    },
    close() {
      for (const conn of idle.splice(0)) conn.close();
      statements.clear();
    },
  };
}
