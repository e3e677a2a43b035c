// Reads the workspace's published runnable catalog (its `tool.catalog.v1`, kept current by the
// runner's catalog publisher). Every replica and the publisher pick the same record: the first by id
// of those tagged `tool:catalog` in the workspace. Exports and the MCP endpoint read it from here.

import type { RequestOptions, StoreClient } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, ToolCatalogContext, type CatalogEntry } from '../breadcrumbs/messages.js';

/** The published catalog's tools, or undefined when the workspace has none (no runner has run). */
export async function readPublishedCatalog(client: StoreClient, workspace: string, opts?: RequestOptions): Promise<CatalogEntry[] | undefined> {
  const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, tag: workspace, include_context: true, limit: 20 }, opts);
  const item = items.filter((i) => i.tags.includes(TAG.Catalog)).sort((a, b) => a.id.localeCompare(b.id))[0];
  const parsed = ToolCatalogContext.safeParse(item?.context);
  return parsed.success ? parsed.data.tools : undefined;
}
