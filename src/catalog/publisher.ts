// Keeps the workspace's one `tool.catalog.v1` breadcrumb equal to what is actually runnable.
//
// Changes are debounced; a write happens only when the tool list differs from what the store holds
// (so replicas with the same view do not ping-pong). The breadcrumb is created once per workspace
// (Idempotency-Key `catalog:<workspace>`) and updated with If-Match; a lost race re-reads and retries.
// Besides the runnable `tools`, the context lists `rejectedTools`: every tool.code.v1 present but not
// runnable, with the reason (invalid, changed outside the runner, reserved name, another owner's name).
//
// Any writer could create a look-alike catalog, so the context carries `mac`: a MAC under the runner
// secret over the canonical JSON of the rest. The publisher and every reader (exports, MCP) use the
// first catalog, by id, whose MAC verifies; forged or edited ones are ignored (and re-published over).

import type { StoreClient } from '../breadcrumbs/index.js';
import { isConflict, isNotFound, isVersionMismatch } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, type CatalogEntry } from '../breadcrumbs/messages.js';
import { sameText, type RequestKeys } from '../breadcrumbs/request-keys.js';
import { inputHash } from '../contract/canonical.js';
import type { Logger } from '../logger.js';
import type { RejectedTool } from './catalog.js';

const CATALOG_MAC = 'tool.catalog.v1';

/** The catalog context with its MAC. */
export function sealCatalog(keys: RequestKeys, context: Record<string, unknown>): Record<string, unknown> {
  const { mac: _ignored, ...rest } = context;
  return { ...rest, mac: keys.stateMac(CATALOG_MAC, inputHash(rest)) };
}

/** Whether a catalog context carries the runner's MAC over exactly its content. */
export function isSealedCatalog(keys: RequestKeys, context: Record<string, unknown> | undefined): boolean {
  if (!context) return false;
  const { mac, ...rest } = context;
  try {
    return sameText(keys.stateMac(CATALOG_MAC, inputHash(rest)), mac);
  } catch {
    return false;
  }
}

export interface CatalogPublisherOptions {
  client: StoreClient;
  workspace: string;
  keys: RequestKeys;
  logger: Logger;
  entries(): CatalogEntry[];
  /** Tools present in the store but not runnable (counted in totalTools, listed with the reason). */
  rejected(): RejectedTool[];
  debounceMs?: number;
}

export interface CatalogPublisher {
  /** Schedules a (debounced) publication. */
  schedule(): void;
  /** Publishes now if the content changed; resolves when written. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Creates the catalog publisher. */
export function createCatalogPublisher(options: CatalogPublisherOptions): CatalogPublisher {
  const { client, workspace, keys, logger } = options;
  const debounceMs = options.debounceMs ?? 200;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let closed = false;

  const find = async (): Promise<
    { id: string; version: number; tools: unknown; rejectedTools: unknown } | undefined
  > => {
    const items = await client.listBreadcrumbs({
      schema_name: SCHEMA.ToolCatalog,
      tag: workspace,
      include_context: true,
      limit: 20,
    });
    // Only a sealed catalog is ours; among several (a race, an older runner), every replica picks
    // the same one: the first by id.
    const mine = items
      .filter((item) => item.tags.includes(TAG.Catalog) && isSealedCatalog(keys, item.context))
      .sort((a, b) => a.id.localeCompare(b.id));
    const first = mine[0];
    return first
      ? {
          id: first.id,
          version: first.version,
          tools: first.context?.['tools'],
          rejectedTools: first.context?.['rejectedTools'],
        }
      : undefined;
  };

  const publishOnce = async (): Promise<void> => {
    const tools = options.entries();
    const rejectedTools = options.rejected().map((item) => ({
      name: item.name ?? null,
      id: item.id,
      reason: item.errors
        .slice(0, 3)
        .map((e) => `${e.path || '/'}: ${e.message}`)
        .join('; '),
    }));
    const context = sealCatalog(keys, {
      workspace,
      totalTools: tools.length + rejectedTools.length,
      activeTools: tools.length,
      lastUpdated: new Date().toISOString(),
      tools,
      rejectedTools,
    });
    for (let attempt = 0; attempt < 5; attempt++) {
      const existing = await find();
      if (!existing) {
        try {
          await client.createBreadcrumb(
            {
              title: `Tool catalog (${workspace})`,
              schema_name: SCHEMA.ToolCatalog,
              tags: [workspace, TAG.Catalog],
              context,
            },
            // The key stops two replicas creating two catalogs; if a catalog created under it was
            // deleted since, the key is spent, so later attempts create without it.
            attempt === 0 ? { idempotencyKey: `catalog:${workspace}` } : {},
          );
          return;
        } catch (error) {
          if (!isConflict(error)) throw error;
          continue;
        }
      }
      if (
        JSON.stringify(existing.tools) === JSON.stringify(tools) &&
        JSON.stringify(existing.rejectedTools) === JSON.stringify(rejectedTools)
      )
        return;
      try {
        await client.updateBreadcrumb(existing.id, { context }, { ifMatch: existing.version });
        return;
      } catch (error) {
        if (!isVersionMismatch(error) && !isNotFound(error)) throw error;
      }
    }
    logger.warn('catalog publication gave up after repeated conflicts', { workspace });
  };

  const flush = (): Promise<void> => {
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    running = running.then(publishOnce).catch((error: unknown) => logger.warn('catalog publication failed', { error }));
    return running;
  };

  const schedule = (): void => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, debounceMs);
  };

  const close = async (): Promise<void> => {
    closed = true;
    if (timer) clearTimeout(timer);
    await running;
  };

  return { schedule, flush, close };
}
