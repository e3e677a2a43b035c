// The listings of intake's catch-up scan (src/request/intake.ts): the requests of the workspace
// updated since a time (without their contexts), the answers among the responses of that window,
// and the contexts of the few requests the scan may enqueue.

import { isNotFound, type StoreClient } from '../breadcrumbs/index.js';
import { ridOfRequestTag, SCHEMA } from '../breadcrumbs/messages.js';
import { ANSWER_TAG_PREFIX } from '../breadcrumbs/request-keys.js';

/** A scan reads the contexts of up to this many unanswered requests one by one; more: it lists them again with contexts. */
const READ_ONE_BY_ONE = 64;

/** A listing's pages grow to at most this many times the first page's size. */
export const MAX_PAGE_GROWTH = 64;
/** The same bound for a listing with contexts: each item may be large, and a page is one response. */
export const MAX_PAGE_GROWTH_WITH_CONTEXTS = 4;

/**
 * Lists newest-first pages until an item is older than `since`. The store API pages by offset, and a
 * store skips `offset` rows to serve a page: with pages of one size, a window of n requests costs
 * n²/(2·pageSize) row skips (at 700 calls/s and a 5-minute window, ~10⁸ per scan: the scan took the
 * whole thread and calls nearly stopped). So each page is twice the size of the one before, up to
 * MAX_PAGE_GROWTH times the first (MAX_PAGE_GROWTH_WITH_CONTEXTS when the items carry their contexts):
 * a window of n costs ~2n rows read.
 */
export async function listSince(
  client: StoreClient,
  workspace: string,
  pageSize: number,
  schema: string,
  includeContext: boolean,
  since: number | undefined,
) {
  const out = [];
  const maxPage = pageSize * (includeContext ? MAX_PAGE_GROWTH_WITH_CONTEXTS : MAX_PAGE_GROWTH);
  for (let offset = 0, limit = pageSize; ; offset += limit, limit = Math.min(limit * 2, maxPage)) {
    const page = await client.listBreadcrumbs({
      schema_name: schema,
      tag: workspace,
      include_context: includeContext,
      limit,
      offset,
    });
    let older = false;
    for (const item of page) {
      if (since !== undefined && Date.parse(item.updated_at) < since) older = true;
      else out.push(item);
    }
    if (older || page.length < limit) return out;
  }
}

/**
 * The requests (tool and create) of the workspace updated since `since` (all when undefined), and the
 * answers among the responses of that window: answer tags, and the rids a legacy `request:<rid>` tag names.
 */
export async function listRecent(client: StoreClient, workspace: string, pageSize: number, since: number | undefined) {
  const list = (schema: string, includeContext: boolean) =>
    listSince(client, workspace, pageSize, schema, includeContext, since);
  // A windowed scan (on the timer, after a reconnect) lists requests without their context: it lists
  // every request of its window (thousands at a few hundred calls/s), nearly all answered already, and
  // reads the context of the few it may enqueue (contextsOf below). A full scan (at start, after an
  // overflow) lists them with it: then many may be waiting, and one listing serves them all.
  const withContexts = since === undefined;
  const requests = [
    ...(await list(SCHEMA.ToolRequest, withContexts)).map((item) => ({
      item,
      schema: SCHEMA.ToolRequest as string,
    })),
    ...(await list(SCHEMA.ToolCreateRequest, withContexts)).map((item) => ({
      item,
      schema: SCHEMA.ToolCreateRequest as string,
    })),
  ];
  const responses = [...(await list(SCHEMA.ToolResponse, false)), ...(await list(SCHEMA.ToolCreateResponse, false))];
  const answered = new Set<string>();
  const legacyAnswered = new Set<string>();
  for (const response of responses) {
    for (const tag of response.tags) {
      if (tag.startsWith(ANSWER_TAG_PREFIX)) answered.add(tag);
      const rid = ridOfRequestTag(tag);
      if (rid !== undefined) legacyAnswered.add(rid);
    }
  }
  /**
   * The contexts of `ids` (listed requests of `schema`): from the listing of a full scan; else one
   * read each when they are few, or the listing again with contexts; an id missing from the answer
   * was deleted meanwhile.
   */
  const contextsOf = async (schema: string, ids: Set<string>): Promise<Map<string, Record<string, unknown>>> => {
    const out = new Map<string, Record<string, unknown>>();
    if (ids.size === 0) return out;
    if (withContexts) {
      for (const { item } of requests) if (ids.has(item.id) && item.context) out.set(item.id, item.context);
      return out;
    }
    if (ids.size > READ_ONE_BY_ONE) {
      for (const item of await list(schema, true)) if (ids.has(item.id) && item.context) out.set(item.id, item.context);
      return out;
    }
    for (const id of ids) {
      try {
        out.set(id, (await client.getBreadcrumbFull(id)).context);
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    return out;
  };
  return { requests, answered, legacyAnswered, contextsOf };
}
