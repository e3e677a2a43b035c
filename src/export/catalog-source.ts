// Reads the workspace's published runnable catalog (its `tool.catalog.v1`, kept current by the
// runner's catalog publisher). Only a catalog sealed with the runner secret counts (any writer could
// create a look-alike); every replica, the publisher and the readers pick the same one: the first by
// id. Exports and the MCP endpoint read it from here.

import type { RequestOptions, StoreClient } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, ToolCatalogContext, type CatalogEntry } from '../breadcrumbs/messages.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { isSealedCatalog } from '../catalog/publisher.js';

/** The published catalog's tools, or undefined when the workspace has no sealed catalog (no runner has run). */
export async function readPublishedCatalog(client: StoreClient, workspace: string, keys: RequestKeys, opts?: RequestOptions): Promise<CatalogEntry[] | undefined> {
  const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, tag: workspace, include_context: true, limit: 50 }, opts);
  const item = items.filter((i) => i.tags.includes(TAG.Catalog) && isSealedCatalog(keys, i.context)).sort((a, b) => a.id.localeCompare(b.id))[0];
  const parsed = ToolCatalogContext.safeParse(item?.context);
  return parsed.success ? parsed.data.tools : undefined;
}
