// Progress of a running code-tool call (context.progress in the sandbox), to its two readers: the
// store (a tool.progress.v1 record, so that a caller waiting on the request — MCP bridge,
// `tools-runner call` — can forward it) and the admin port's live feed (below, createLiveProgress).
//
// The store: one `tool.progress.v1` record per request, created at the first report and then replaced (PATCH of
// its context) at most every `intervalMs` with the reports since the previous write:
// `{request_id, tool, seq, events: [{seq, value}], dropped, done}` — `seq` numbers every report of the
// call, so a reader forwards only what it has not seen. Tagged with the workspace, `tool:progress`,
// `request:<rid>` and a progress tag only the runner can compute (a MAC of the request's breadcrumb
// id), which readers check: an agent cannot forge another call's progress. Bounded: at most
// MAX_EVENTS_PER_WRITE reports and MAX_BYTES_PER_WRITE bytes per write (the rest counted in
// `dropped`), one write in flight at a time; the record expires after an hour. Store failures are
// logged and never fail the call.

import type { StoreClient } from '../breadcrumbs/index.js';
import { SCHEMA, TAG } from '../breadcrumbs/messages.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import type { Logger } from '../logger.js';

export const MAX_EVENTS_PER_WRITE = 200;
export const MAX_BYTES_PER_WRITE = 32 * 1024;
const TTL_MS = 60 * 60 * 1000;

/** The tag a request's progress record carries: `progress:` + a MAC of the request breadcrumb id. */
export function progressTag(keys: Pick<RequestKeys, 'stateMac'>, requestBreadcrumbId: string): string {
  return `progress:${keys.stateMac('progress', requestBreadcrumbId).slice(0, 32)}`;
}

/** Collects one call's reports and writes them; `close()` flushes the rest (with `done: true`). */
export interface ProgressPublisher {
  push(value: unknown): void;
  close(): Promise<void>;
}

/** Creates the publisher of one call. */
export function createProgressPublisher(options: {
  client: StoreClient;
  keys: Pick<RequestKeys, 'stateMac'>;
  workspace: string;
  rid: string;
  requestBreadcrumbId: string;
  tool: string;
  intervalMs: number;
  logger: Logger;
}): ProgressPublisher {
  const { client, rid, tool, logger } = options;
  let seq = 0;
  let dropped = 0;
  let queue: Array<{ seq: number; value: unknown }> = [];
  let queuedBytes = 0;
  let recordId: string | undefined;
  let writing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let failed = false;
  let closed = false;

  const write = async (done: boolean): Promise<void> => {
    const events = queue;
    queue = [];
    queuedBytes = 0;
    if (failed || (events.length === 0 && !done) || (events.length === 0 && recordId === undefined)) return;
    const context = { request_id: rid, tool, seq, events, dropped, done };
    try {
      if (recordId === undefined) {
        const created = await client.createBreadcrumb({
          title: `Progress: ${tool}`,
          schema_name: SCHEMA.ToolProgress,
          tags: [
            options.workspace,
            TAG.Progress,
            TAG.request(rid),
            progressTag(options.keys, options.requestBreadcrumbId),
          ],
          context,
          ttl: new Date(Date.now() + TTL_MS).toISOString(),
        });
        recordId = created.id;
      } else {
        await client.updateBreadcrumb(recordId, { context });
      }
    } catch (error) {
      failed = true; // one failure stops publishing for this call; the call itself goes on
      logger.warn('progress not published', { rid, tool, error });
    }
  };

  const schedule = (): void => {
    if (timer || writing || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      writing = write(false).finally(() => {
        writing = undefined;
        if (queue.length > 0) schedule();
      });
    }, options.intervalMs);
  };

  return {
    push(value) {
      if (closed) return;
      seq++;
      const bytes = JSON.stringify(value)?.length ?? 0;
      if (queue.length >= MAX_EVENTS_PER_WRITE || queuedBytes + bytes > MAX_BYTES_PER_WRITE) {
        dropped++;
        return;
      }
      queue.push({ seq, value });
      queuedBytes += bytes;
      schedule();
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      await writing;
      if (seq > 0) await write(true);
    },
  };
}

// ---- the live feed ----------------------------------------------------------------------------------
//
// The live feed's view of a running call's progress (`execution:progress` on
// /live, printed by `tools-runner tail`). The values arrive with the tool's secrets already redacted
// (the sandbox redacts each report before onProgress).
//
// Bounded so a chatty tool cannot flood /live: per call at most one report per LIVE_INTERVAL_MS goes
// out; a report arriving sooner waits, replaced by any newer one (the skipped reports show as gaps in
// `seq`, which numbers every report of the call like tool.progress.v1 does), and `close()` sends the
// one still waiting, so the last report precedes the call's finish. A value whose JSON is longer than
// LIVE_MAX_CHARS is cut: a `{text}` report keeps the start of its text, any other becomes
// `{truncated: true, chars, preview}`.

export const LIVE_INTERVAL_MS = 200;
export const LIVE_MAX_CHARS = 1024;

/** One report as the live feed carries it. */
export interface LiveProgressReport {
  rid: string;
  tool: string;
  seq: number;
  value: unknown;
}

/** A report's value within LIVE_MAX_CHARS of JSON. */
export function liveValue(value: unknown): unknown {
  const json = JSON.stringify(value) ?? 'null';
  if (json.length <= LIVE_MAX_CHARS) return value;
  const text = (value as { text?: unknown } | null)?.text;
  if (typeof text === 'string' && Object.keys(value as object).length === 1)
    return { text: `${text.slice(0, LIVE_MAX_CHARS - 32)}… (${text.length} chars)` };
  return { truncated: true, chars: json.length, preview: json.slice(0, LIVE_MAX_CHARS / 2) };
}

/** The live reporter of one call. */
export interface LiveProgress {
  push(value: unknown): void;
  close(): void;
}

export function createLiveProgress(options: {
  rid: string;
  tool: string;
  emit(report: LiveProgressReport): void;
  intervalMs?: number;
}): LiveProgress {
  const intervalMs = options.intervalMs ?? LIVE_INTERVAL_MS;
  let seq = 0;
  let lastSent = -Infinity;
  let waiting: { seq: number; value: unknown } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const send = (report: { seq: number; value: unknown }): void => {
    lastSent = performance.now();
    try {
      options.emit({ rid: options.rid, tool: options.tool, seq: report.seq, value: liveValue(report.value) });
    } catch {
      // a listener's fault is not the tool's
    }
  };
  const flush = (): void => {
    timer = undefined;
    const report = waiting;
    waiting = undefined;
    if (report) send(report);
  };

  return {
    push(value) {
      if (closed) return;
      seq++;
      const since = performance.now() - lastSent;
      if (since >= intervalMs && !timer) return send({ seq, value });
      waiting = { seq, value };
      timer ??= setTimeout(flush, Math.max(0, intervalMs - since));
    },
    close() {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      flush();
    },
  };
}
