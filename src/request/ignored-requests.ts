// Requests the runner will never answer, made visible. Every breadcrumb of the store passes the event
// stream, and almost all of them are none of the runner's business; but a record that looks like it
// was meant as a request for this runner — schema `tool.request.v1` with a missing or different
// workspace tag or without the `tool:request` tag, or a schema one or two typing mistakes away from
// it (`tool.reqest.v1`) — is logged at info with the reason, a hint when the miss is near
// (`workspace:tool` for `workspace:tools`), and counted by reason
// (`tools_runner_ignored_requests_total{reason}`). Other breadcrumbs are not looked at.
//
// The log is bounded: at most LOG_PER_WINDOW lines per LOG_WINDOW_MS; past that, requests are only
// counted, and the next window's first line says how many went unlogged. The counter sees them all.

import { SCHEMA, TAG, type StoreEvent } from '../breadcrumbs/messages.js';
import type { Logger } from '../logger.js';

/** Why a request-like record is not run. */
export type IgnoredReason = 'schema-typo' | 'no-workspace' | 'other-workspace' | 'no-request-tag';

export interface IgnoredRequest {
  reason: IgnoredReason;
  /** What was probably meant, when the record is a near miss. */
  hint?: string;
}

const WORKSPACE_PREFIX = 'workspace:';
const LOG_PER_WINDOW = 20;
const LOG_WINDOW_MS = 60_000;

/** Edit distance of `a` and `b`, or `max + 1` once it is certainly above `max` (both are short here). */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max || a.length > 200 || b.length > 200) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const swapped = i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1] ? (prev[j - 2] ?? 0) : Infinity;
      const value = Math.min(
        (prev[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + cost,
        swapped === Infinity ? Infinity : swapped + 1,
      );
      row.push(value);
      best = Math.min(best, value);
    }
    if (best > max) return max + 1;
    prev = row;
  }
  return prev[b.length] ?? max + 1;
}

/** True when `value` differs from `target` only by case, surrounding blanks, or at most two typing mistakes. */
export function isNearMiss(value: string, target: string): boolean {
  if (value === target) return false;
  const folded = value.trim().toLowerCase();
  return folded === target.toLowerCase() || distance(folded, target.toLowerCase(), 2) <= 2;
}

/** Why the record of `event` is a request this runner ignores, or undefined (a request it runs, or no request at all). */
export function ignoredRequestOf(event: StoreEvent, workspace: string): IgnoredRequest | undefined {
  if (event.type !== 'breadcrumb.updated' || typeof event.schema_name !== 'string') return undefined;
  // A creation, not every later update of the same record.
  if (event.version !== undefined && event.version !== 1) return undefined;
  const tags = Array.isArray(event.tags) ? event.tags.filter((tag): tag is string => typeof tag === 'string') : [];
  if (event.schema_name !== SCHEMA.ToolRequest) {
    return isNearMiss(event.schema_name, SCHEMA.ToolRequest)
      ? { reason: 'schema-typo', hint: `schema_name must be "${SCHEMA.ToolRequest}"` }
      : undefined;
  }
  const spaces = tags.filter((tag) => tag.startsWith(WORKSPACE_PREFIX) || isNearMiss(tag, workspace));
  if (!tags.includes(workspace)) {
    const near = spaces.find((tag) => isNearMiss(tag, workspace));
    if (near !== undefined)
      return { reason: 'other-workspace', hint: `tag "${near}" is not this runner's "${workspace}"` };
    if (spaces.length === 0) return { reason: 'no-workspace', hint: `add the tag "${workspace}"` };
    return { reason: 'other-workspace' };
  }
  if (!tags.includes(TAG.Request)) {
    const near = tags.find((tag) => isNearMiss(tag, TAG.Request));
    return {
      reason: 'no-request-tag',
      hint: near !== undefined ? `tag "${near}" should be "${TAG.Request}"` : `add the tag "${TAG.Request}"`,
    };
  }
  return undefined;
}

/** Logs (bounded, see the module comment) and counts ignored requests. */
export function createIgnoredRequestLog(options: {
  logger: Logger;
  workspace: string;
  count?: (reason: IgnoredReason) => void;
  now?: () => number;
}): (event: StoreEvent) => void {
  const { logger, workspace } = options;
  const now = options.now ?? Date.now;
  let windowStart = -Infinity;
  let logged = 0;
  let unlogged = 0;
  return (event) => {
    const ignored = ignoredRequestOf(event, workspace);
    if (!ignored) return;
    options.count?.(ignored.reason);
    const at = now();
    if (at - windowStart >= LOG_WINDOW_MS) {
      if (unlogged > 0)
        logger.info('ignored requests not logged (too many)', { count: unlogged, windowMs: LOG_WINDOW_MS });
      windowStart = at;
      logged = 0;
      unlogged = 0;
    }
    if (logged >= LOG_PER_WINDOW) {
      unlogged += 1;
      return;
    }
    logged += 1;
    const context = event.context as Record<string, unknown> | undefined;
    const tool = typeof context?.['tool'] === 'string' ? context['tool'].slice(0, 200) : undefined;
    logger.info('request ignored', {
      reason: ignored.reason,
      ...(ignored.hint !== undefined ? { hint: ignored.hint } : {}),
      breadcrumbId: event.breadcrumb_id,
      schema: event.schema_name?.slice(0, 200),
      ...(tool !== undefined ? { tool } : {}),
      workspace,
    });
  };
}
