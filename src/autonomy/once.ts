// `context.bootstrap.mode: "once"` of an operator tool (docs/autonomy.md): one run per deployed
// version across all replicas and restarts. Each replica writes the same sealed request
// (triggers.ts: keyed by tool name and version), highest priority first; the store keeps one and the
// one request path runs and answers it like any request.

import type { RequestClient, RequestKeys } from '../breadcrumbs/index.js';
import type { Catalog } from '../catalog/catalog.js';
import type { Logger } from '../logger.js';
import { writeOwnRequest } from './triggers.js';

/** What the console shows of one `once` tool. */
export interface OnceStatus {
  tool: string;
  version: string;
  priority: number;
  /** `written`: this replica wrote the request; `exists`: another replica (or an earlier start) had. */
  request: 'written' | 'exists' | 'pending';
}

/** The once-runs of the catalog's operator tools. */
export function createOnceRuns(options: {
  requests: RequestClient;
  keys: Pick<RequestKeys, 'stateMac'>;
  catalog: Catalog;
  logger: Logger;
  signal: AbortSignal;
}) {
  const done = new Map<string, OnceStatus>();
  return {
    /** Writes the request of every once-tool version not written yet, highest priority first. */
    async reconcile(): Promise<void> {
      const due: OnceStatus[] = [];
      for (const entry of options.catalog.entries()) {
        const route = options.catalog.resolve(entry.name);
        if (route?.kind !== 'code' || route.tool.bootstrap?.mode !== 'once') continue;
        const key = `${route.tool.name}@${route.tool.version}`;
        if (done.get(key)?.request !== 'pending' && done.has(key)) continue;
        due.push({
          tool: route.tool.name,
          version: route.tool.version,
          priority: route.tool.bootstrap.priority,
          request: 'pending',
        });
      }
      due.sort((a, b) => b.priority - a.priority || a.tool.localeCompare(b.tool));
      for (const status of due) {
        const key = `${status.tool}@${status.version}`;
        done.set(key, status);
        const route = options.catalog.resolve(status.tool);
        const input = route?.kind === 'code' ? (route.tool.bootstrap?.input ?? {}) : {};
        try {
          status.request = await writeOwnRequest(options, {
            tool: status.tool,
            input,
            origin: { kind: 'bootstrap', depth: 0, chain: [] },
            unique: ['once', status.tool, status.version],
            signal: options.signal,
          });
          options.logger.info('bootstrap once', {
            tool: status.tool,
            version: status.version,
            request: status.request,
          });
        } catch (error) {
          options.logger.warn('bootstrap once: request write failed; retried at the next reconcile', {
            tool: status.tool,
            error,
          });
        }
      }
    },
    status(): OnceStatus[] {
      return [...done.values()].map((s) => ({ ...s }));
    },
  };
}
