// Breadcrumb reads: one record (context view or full), listings (by tag via the tags table, by
// schema, or all; newest write first), text search and version history. Expired records are
// invisible; with auth on, every read is limited to the actor's owner.

import type { Db } from './db.js';
import type { Actor, BreadcrumbRow } from './breadcrumb-writes.js';
import { httpErrors } from './http-util.js';

/** Largest `limit` a listing or search accepts. */
export const MAX_LIMIT = 1000;
/** `limit` of a listing or search that gives none. */
export const DEFAULT_LIMIT = 100;

/** Filters of a listing; `q` turns it into a text search. */
export interface ListFilter {
  tag?: string;
  schemaName?: string;
  q?: string;
  limit: number;
  offset: number;
  includeContext: boolean;
}

/** Breadcrumb reads, each returning the JSON shape of its route. */
export interface BreadcrumbReads {
  contextView(id: string, actor: Actor): Record<string, unknown>;
  full(id: string, actor: Actor): Record<string, unknown>;
  list(filter: ListFilter, actor: Actor): Array<Record<string, unknown>>;
  history(id: string, actor: Actor): Array<Record<string, unknown>>;
}

type ListRow = Pick<BreadcrumbRow, 'id' | 'title' | 'tags' | 'schema_name' | 'version' | 'updated_at'> & { context?: string };

function parseJson(text: string | null): unknown {
  return text === null ? null : (JSON.parse(text) as unknown);
}

function escapeLike(text: string): string {
  return '%' + text.replace(/[\\%_]/g, (c) => '\\' + c) + '%';
}

/** Builds the read side over `db`. */
export function createBreadcrumbReads(db: Db): BreadcrumbReads {
  const selectRow = db.prepare('SELECT * FROM breadcrumbs WHERE id = ? AND (expires_ms IS NULL OR expires_ms > ?)');
  const selectHistory = db.prepare('SELECT version, context, updated_at, updated_by FROM breadcrumb_history WHERE breadcrumb_id = ? ORDER BY version DESC');
  // One prepared statement per filter combination, built on first use and then reused.
  const listStatements = new Map<string, ReturnType<Db['prepare']>>();

  const listStatement = (filter: ListFilter, scoped: boolean): ReturnType<Db['prepare']> => {
    const key = `${filter.tag !== undefined}|${filter.schemaName !== undefined}|${filter.q !== undefined}|${scoped}|${filter.includeContext}`;
    let stmt = listStatements.get(key);
    if (stmt) return stmt;
    const cols = 'b.id, b.title, b.tags, b.schema_name, b.version, b.updated_at' + (filter.includeContext ? ', b.context' : '');
    const where = ['(b.expires_ms IS NULL OR b.expires_ms > @now)'];
    if (filter.schemaName !== undefined) where.push('b.schema_name = @schema');
    if (scoped) where.push('b.owner_id = @owner');
    if (filter.q !== undefined) {
      where.push("(b.title LIKE @q ESCAPE '\\' OR b.description LIKE @q ESCAPE '\\' OR b.context LIKE @q ESCAPE '\\')");
    }
    const sql = filter.tag !== undefined
      ? `SELECT ${cols} FROM breadcrumb_tags t JOIN breadcrumbs b ON b.write_seq = t.write_seq WHERE t.tag = @tag AND ${where.join(' AND ')} ORDER BY t.write_seq DESC LIMIT @limit OFFSET @offset`
      : `SELECT ${cols} FROM breadcrumbs b WHERE ${where.join(' AND ')} ORDER BY b.write_seq DESC LIMIT @limit OFFSET @offset`;
    stmt = db.prepare(sql);
    listStatements.set(key, stmt);
    return stmt;
  };

  const visibleRow = (id: string, actor: Actor): BreadcrumbRow => {
    const row = selectRow.get(id, Date.now()) as BreadcrumbRow | undefined;
    if (!row || (actor.scoped && row.owner_id !== actor.ownerId)) throw httpErrors.notFound(`breadcrumb "${id}" not found`);
    return row;
  };

  return {
    contextView(id, actor) {
      const row = visibleRow(id, actor);
      return {
        id: row.id, title: row.title, description: row.description, semantic_version: row.semantic_version,
        context: parseJson(row.context), tags: parseJson(row.tags), schema_name: row.schema_name,
        llm_hints: parseJson(row.llm_hints), version: row.version, updated_at: row.updated_at,
      };
    },
    full(id, actor) {
      const row = visibleRow(id, actor);
      return {
        id: row.id, owner_id: row.owner_id, title: row.title, description: row.description, semantic_version: row.semantic_version,
        context: parseJson(row.context), tags: parseJson(row.tags), schema_name: row.schema_name, llm_hints: parseJson(row.llm_hints),
        visibility: row.visibility, sensitivity: row.sensitivity, version: row.version, checksum: row.checksum, ttl: row.ttl,
        created_at: row.created_at, updated_at: row.updated_at, created_by: row.created_by, updated_by: row.updated_by,
        size_bytes: row.size_bytes,
      };
    },
    list(filter, actor) {
      const params: Record<string, unknown> = { now: Date.now(), limit: filter.limit, offset: filter.offset };
      if (filter.tag !== undefined) params.tag = filter.tag;
      if (filter.schemaName !== undefined) params.schema = filter.schemaName;
      if (actor.scoped) params.owner = actor.ownerId;
      if (filter.q !== undefined) params.q = escapeLike(filter.q);
      const rows = listStatement(filter, actor.scoped).all(params) as ListRow[];
      return rows.map((row) => {
        const item: Record<string, unknown> = {
          id: row.id, title: row.title, tags: parseJson(row.tags), schema_name: row.schema_name, version: row.version, updated_at: row.updated_at,
        };
        if (row.context !== undefined) item.context = parseJson(row.context);
        return item;
      });
    },
    history(id, actor) {
      const current = visibleRow(id, actor);
      const rows = selectHistory.all(id) as Array<{ version: number; context: string; updated_at: string; updated_by: string | null }>;
      return [current, ...rows].map((row) => ({ version: row.version, context: parseJson(row.context), updated_at: row.updated_at, updated_by: row.updated_by }));
    },
  };
}
