// The console's view of every tool: runnable, deprecated, or rejected (with each reason and
// line:column, shadowed and untrusted records included), with version, source and call figures.
//
// The catalog decides what runs; this module adds what the catalog does not keep: each
// tool.code.v1 record's tags and context (who wrote it, its contract's deprecation). It caches
// those by breadcrumb version, so a page load after the first costs one id/version listing;
// concurrent refreshes share one listing, and a listing younger than `maxAgeMs` is reused.

import type { StoreClient } from '../breadcrumbs/index.js';
import { SCHEMA } from '../breadcrumbs/messages.js';
import type { Catalog } from '../catalog/catalog.js';
import { OPERATOR } from '../catalog/deployment.js';
import type { Issue } from '../screen/index.js';
import type { ConsoleStats } from './stats.js';

/** How a tool got here. */
export type ToolSource = 'bootstrap' | 'agent' | 'manifest' | 'rap';
/** What the runner does with it. */
export type ToolState = 'runnable' | 'deprecated' | 'rejected';

/** One row of the catalog page. */
export interface ToolRow {
  name: string;
  state: ToolState;
  kind: 'code' | 'host';
  version: string | null;
  description: string;
  source: ToolSource;
  /** The writing agent (`created-by:agent:<id>` tag), when known. */
  agent?: string;
  breadcrumbId?: string;
  breadcrumbVersion?: number;
  errors: Issue[];
  deprecatedAt?: string;
  calls: number;
  errorRate: number | null;
}

/** A cached tool.code.v1 record. */
export interface ToolRecord {
  id: string;
  version: number;
  tags: string[];
  context: Record<string, unknown>;
  updatedAt: string;
}

export interface ToolIndexOptions {
  client: StoreClient;
  workspace: string;
  catalog: Catalog;
  stats: ConsoleStats;
  maxAgeMs?: number;
}

export interface ToolIndex {
  rows(): Promise<ToolRow[]>;
  /** Cached records (refreshed as rows() does). */
  records(): Promise<Map<string, ToolRecord>>;
}

const BULK_THRESHOLD = 20;

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function deprecatedAt(context: Record<string, unknown>, now: number): string | undefined {
  const contract = context['contract'];
  if (typeof contract !== 'object' || contract === null) return undefined;
  const deprecation = (contract as Record<string, unknown>)['deprecation'];
  if (typeof deprecation !== 'object' || deprecation === null) return undefined;
  const at = str((deprecation as Record<string, unknown>)['deprecated_at']);
  return at !== undefined && Date.parse(at) <= now ? at : undefined;
}

/** Creates the index. */
export function createToolIndex(options: ToolIndexOptions): ToolIndex {
  const { client, workspace, catalog, stats } = options;
  const maxAgeMs = options.maxAgeMs ?? 500;
  const cache = new Map<string, ToolRecord>();
  let refreshedAt = 0;
  let inflight: Promise<void> | undefined;

  const refresh = async (): Promise<void> => {
    const listed = await client.listAll({ schema_name: SCHEMA.ToolCode, tag: workspace });
    const seen = new Set(listed.map((item) => item.id));
    for (const id of cache.keys()) if (!seen.has(id)) cache.delete(id);
    const stale = listed.filter((item) => cache.get(item.id)?.version !== item.version);
    if (stale.length > BULK_THRESHOLD) {
      const full = await client.listAll({ schema_name: SCHEMA.ToolCode, tag: workspace, include_context: true });
      for (const item of full)
        cache.set(item.id, {
          id: item.id,
          version: item.version,
          tags: item.tags,
          context: item.context ?? {},
          updatedAt: item.updated_at,
        });
    } else {
      await Promise.all(
        stale.map(async (item) => {
          const full = await client.getBreadcrumbFull(item.id).catch(() => undefined);
          if (full)
            cache.set(item.id, {
              id: full.id,
              version: full.version,
              tags: full.tags,
              context: full.context,
              updatedAt: full.updated_at,
            });
        }),
      );
    }
    refreshedAt = Date.now();
  };

  const records = async (): Promise<Map<string, ToolRecord>> => {
    if (Date.now() - refreshedAt > maxAgeMs) {
      inflight ??= refresh().finally(() => (inflight = undefined));
      await inflight;
    }
    return cache;
  };

  const rows = async (): Promise<ToolRow[]> => {
    const recs = await records();
    const now = Date.now();
    const totals = stats.totals();
    const figures = (name: string): { calls: number; errorRate: number | null } => {
      const t = totals.get(name);
      return t && t.calls > 0 ? { calls: t.calls, errorRate: t.errors / t.calls } : { calls: 0, errorRate: null };
    };
    const out: ToolRow[] = [];
    for (const entry of catalog.entries()) {
      const route = catalog.resolve(entry.name);
      if (!route) continue;
      if (route.kind === 'host') {
        const host = route.tool;
        out.push({
          name: host.name,
          state: 'runnable',
          kind: 'host',
          version: host.manifestDigest.slice(0, 12),
          description: host.description,
          source: (host.transport.kind as string) === 'rap' ? 'rap' : 'manifest',
          errors: [],
          ...figures(host.name),
        });
        continue;
      }
      const rec = route.breadcrumbId ? recs.get(route.breadcrumbId) : undefined;
      const deprecated = rec ? deprecatedAt(rec.context, now) : undefined;
      const bootstrap = route.owner === OPERATOR;
      out.push({
        name: entry.name,
        state: deprecated ? 'deprecated' : 'runnable',
        kind: 'code',
        version: route.tool.version,
        description: route.tool.description,
        source: bootstrap ? 'bootstrap' : 'agent',
        ...(bootstrap ? {} : { agent: route.owner.replace(/^agent:/, '') }),
        ...(route.breadcrumbId ? { breadcrumbId: route.breadcrumbId } : {}),
        ...(rec ? { breadcrumbVersion: rec.version } : {}),
        errors: [],
        ...(deprecated ? { deprecatedAt: deprecated } : {}),
        ...figures(entry.name),
      });
    }
    for (const bad of catalog.rejected()) {
      const rec = recs.get(bad.id);
      const name = bad.name ?? (rec ? str(rec.context['name']) : undefined) ?? `(unnamed ${bad.id})`;
      const agent = rec?.tags.find((tag) => tag.startsWith('created-by:agent:'))?.slice('created-by:agent:'.length);
      out.push({
        name,
        state: 'rejected',
        kind: 'code',
        version: (rec ? str(rec.context['version']) : undefined) ?? null,
        description: (rec ? str(rec.context['description']) : undefined) ?? '',
        source: 'agent',
        ...(agent ? { agent } : {}),
        breadcrumbId: bad.id,
        ...(rec ? { breadcrumbVersion: rec.version } : {}),
        errors: bad.errors,
        ...figures(name),
      });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name) || a.state.localeCompare(b.state));
  };

  return { rows, records };
}
