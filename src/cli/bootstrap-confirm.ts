// After `tools-runner bootstrap` writes its tools, it checks that the running service loaded them: it
// polls the service's sealed catalog (tool.catalog.v1) until every written tool is listed at the
// version of its file, or listed as rejected (with the runner's reason), or --bootstrap-wait-ms ends.
// A tool the store holds but the service never runs (a stamp made with another runner secret, a
// definition the runner refuses, no runner at all) is then reported instead of a silent "created".

import type { StoreClient } from '../breadcrumbs/index.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import type { CatalogEntry } from '../breadcrumbs/messages.js';
import { missingCatalogReason, readCatalog, type CatalogRead } from '../export/index.js';

/** One written tool to look for: its name, the version of its file and the id of its record. */
export interface WrittenTool {
  name: string;
  version: string;
  id: string;
}

/** A written tool the service did not load, with why. */
export interface NotLoaded {
  name: string;
  version: string;
  reason: string;
}

const POLL_MS = 250;

const listsVersion = (entry: CatalogEntry, version: string): boolean =>
  entry.version === version || (entry.versions ?? []).some((v) => v.version === version);

/** Waits (at most `waitMs`) until the service lists every written tool; returns the ones it did not load. */
export async function confirmLoaded(options: {
  client: StoreClient;
  keys: RequestKeys;
  workspace: string;
  tools: readonly WrittenTool[];
  waitMs: number;
  signal: AbortSignal;
}): Promise<NotLoaded[]> {
  const { client, keys, workspace } = options;
  const deadline = Date.now() + options.waitMs;
  let pending = [...options.tools];
  const failed: NotLoaded[] = [];
  let read: CatalogRead = { catalog: undefined, unverified: 0 };
  for (;;) {
    read = await readCatalog(client, workspace, keys);
    const catalog = read.catalog;
    if (catalog) {
      pending = pending.filter((tool) => {
        const rejected = catalog.rejectedTools.find((r) => r.id === tool.id);
        if (rejected) {
          failed.push({ name: tool.name, version: tool.version, reason: `the runner refused it: ${rejected.reason}` });
          return false;
        }
        const entry = catalog.tools.find((e) => e.name === tool.name);
        return !(entry && listsVersion(entry, tool.version));
      });
    }
    if (pending.length === 0 || Date.now() >= deadline || options.signal.aborted) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const seconds = `${Math.round(options.waitMs / 100) / 10} s`;
  for (const tool of pending) {
    const entry = read.catalog?.tools.find((e) => e.name === tool.name);
    const reason = !read.catalog
      ? missingCatalogReason(read, workspace)
      : entry
        ? `the runner still lists version ${entry.version} after ${seconds} (its log says why: "tool rejected"; --bootstrap-wait-ms to wait longer)`
        : `not in the runner's catalog after ${seconds} (its log says why: "tool rejected"; --bootstrap-wait-ms to wait longer)`;
    failed.push({ name: tool.name, version: tool.version, reason });
  }
  return failed;
}
