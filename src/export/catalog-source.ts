// Reads the workspace's published runnable catalog (its `tool.catalog.v1`, kept current by the
// runner's catalog publisher). Only a catalog sealed with the runner secret counts (any writer could
// create a look-alike); every replica, the publisher and the readers pick the same one: the first by
// id. Exports and the MCP endpoint read it from here.

import type { RequestOptions, StoreClient } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, ToolCatalogContext, type CatalogEntry } from '../breadcrumbs/messages.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { isSealedCatalog } from '../catalog/publisher.js';

/** A tool the runner found in the store but does not run, with why (the catalog's `rejectedTools`). */
export interface RejectedCatalogTool {
  name: string | null;
  id: string;
  reason: string;
}

/** What the store holds for the workspace's catalog, as seen with one runner secret. */
export interface CatalogRead {
  /** The sealed catalog (undefined when none verifies with these keys). */
  catalog: (ToolCatalogContext & { rejectedTools: RejectedCatalogTool[] }) | undefined;
  /** Catalog records present whose seal does not verify: most likely a runner with another runner secret. */
  unverified: number;
}

/** Reads the workspace's catalog records: the sealed one, and how many carry a seal these keys do not verify. */
export async function readCatalog(
  client: StoreClient,
  workspace: string,
  keys: RequestKeys,
  opts?: RequestOptions,
): Promise<CatalogRead> {
  const items = (
    await client.listBreadcrumbs(
      { schema_name: SCHEMA.ToolCatalog, tag: workspace, include_context: true, limit: 50 },
      opts,
    )
  ).filter((i) => i.tags.includes(TAG.Catalog));
  const sealed = items.filter((i) => isSealedCatalog(keys, i.context)).sort((a, b) => a.id.localeCompare(b.id));
  const parsed = ToolCatalogContext.safeParse(sealed[0]?.context);
  const unverified = items.length - sealed.length;
  if (!parsed.success) return { catalog: undefined, unverified };
  const raw = (sealed[0]?.context ?? {})['rejectedTools'];
  const rejectedTools = Array.isArray(raw)
    ? raw.filter(
        (r): r is RejectedCatalogTool =>
          typeof r === 'object' && r !== null && typeof (r as { id?: unknown }).id === 'string',
      )
    : [];
  return { catalog: { ...parsed.data, rejectedTools }, unverified };
}

/** Why no sealed catalog was found, in one clause (for a warning or an error line). */
export function missingCatalogReason(read: CatalogRead, workspace: string): string {
  return read.unverified > 0
    ? `the store holds ${read.unverified} tool.catalog.v1 for ${workspace} whose seal does not verify with this runner secret: the runner most likely uses a different runner secret (pass the runner's --runner-secret, or its --data-dir for its runner.key)`
    : `no runner has published a tool.catalog.v1 for ${workspace} in this store (is "tools-runner start" serving it?)`;
}

/** The published catalog's tools, or undefined when the workspace has no sealed catalog (no runner has run). */
export async function readPublishedCatalog(
  client: StoreClient,
  workspace: string,
  keys: RequestKeys,
  opts?: RequestOptions,
): Promise<CatalogEntry[] | undefined> {
  return (await readCatalog(client, workspace, keys, opts)).catalog?.tools;
}
