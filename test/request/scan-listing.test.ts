// The catch-up scan's listings (src/request/scan-listing.ts) against the real embedded store: every
// request of the window exactly once, in pages that double, so a scan's cost stays linear in its window.
import { describe, expect, it } from 'vitest';
import { createStoreClient, SCHEMA, type StoreClient } from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { DEFAULT_WINDOW_MARGIN_MS, LOCAL_WINDOW_MARGIN_MS, windowMarginFor } from '../../src/request/intake.js';
import { listSince, MAX_PAGE_GROWTH, MAX_PAGE_GROWTH_WITH_CONTEXTS } from '../../src/request/scan-listing.js';
import { startStore } from '../store/helpers.js';

const WS = 'workspace:tools';

/** The client, with every listing query it sends kept in `queries`. */
function recording(client: StoreClient): { client: StoreClient; queries: { limit?: number; offset?: number }[] } {
  const queries: { limit?: number; offset?: number }[] = [];
  const listBreadcrumbs: StoreClient['listBreadcrumbs'] = (query, opts) => {
    queries.push({ limit: query.limit, offset: query.offset });
    return client.listBreadcrumbs(query, opts);
  };
  return { client: { ...client, listBreadcrumbs }, queries };
}

async function writeRequests(client: StoreClient, n: number): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let at = 0; at < n; at += 50) {
    const made = await Promise.all(
      Array.from({ length: Math.min(50, n - at) }, (_, i) =>
        client.createBreadcrumb({
          title: `request ${at + i}`,
          schema_name: SCHEMA.ToolRequest,
          tags: [WS],
          context: { tool: 'echo', input: { i: at + i } },
        }),
      ),
    );
    for (const { id } of made) ids.add(id);
  }
  return ids;
}

describe('catch-up scan listing', () => {
  it('lists every request of the window once, in pages that double up to a cap (linear, not quadratic, in the window)', async () => {
    const store = await startStore({ maxBodyBytes: 1024 * 1024 });
    const base = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
    const ids = await writeRequests(base, 1_000);
    const { client, queries } = recording(base);

    const listed = await listSince(client, WS, 10, SCHEMA.ToolRequest, false, undefined);
    expect(listed.map((item) => item.id).sort()).toEqual([...ids].sort());
    expect(new Set(listed.map((item) => item.id)).size).toBe(1_000);
    // 10, 20, 40, 80, 160, 320, then the cap (64 × 10): 7 pages where pages of 10 took 101
    expect(queries.map((q) => q.limit)).toEqual([10, 20, 40, 80, 160, 320, 10 * MAX_PAGE_GROWTH]);
    expect(queries.map((q) => q.offset)).toEqual([0, 10, 30, 70, 150, 310, 630]);

    // with their contexts (each item may be large, a page is one response) pages grow less far
    queries.length = 0;
    const withContexts = await listSince(client, WS, 100, SCHEMA.ToolRequest, true, undefined);
    expect(withContexts).toHaveLength(1_000);
    expect(withContexts.every((item) => item.context !== undefined)).toBe(true);
    expect(queries.map((q) => q.limit)).toEqual([100, 200, 100 * MAX_PAGE_GROWTH_WITH_CONTEXTS, 400]);

    // a window that ends inside the listing: only what is newer than `since`, and no page past it
    const newest = await base.listBreadcrumbs({ schema_name: SCHEMA.ToolRequest, tag: WS, limit: 1, offset: 0 });
    const since = Date.parse(newest[0]!.updated_at) + 1;
    queries.length = 0;
    expect(await listSince(client, WS, 10, SCHEMA.ToolRequest, false, since)).toEqual([]);
    expect(queries).toHaveLength(1);
  });

  it('a windowed scan looks back 5 s past the previous one on the in-process store (one clock), 60 s over HTTP', async () => {
    const store = await startStore();
    const http = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
    const inProcess = createStoreClient({ baseUrl: store.url, logger: silentLogger(), local: store.local });
    expect(windowMarginFor(inProcess)).toBe(LOCAL_WINDOW_MARGIN_MS);
    expect(windowMarginFor(http)).toBe(DEFAULT_WINDOW_MARGIN_MS);
    expect(LOCAL_WINDOW_MARGIN_MS).toBeLessThan(DEFAULT_WINDOW_MARGIN_MS);
    http.close();
    inProcess.close();
  });
});
