// The MCP bridge: the store-facing half of the MCP server, shared by every MCP session (stdio or
// HTTP). It holds the exported view of the published catalog and turns calls into requests.
//
// Catalog view: IDLE (not read yet) → LOADED; a `tool.catalog.v1` event of the workspace (or a
// reconnect) re-reads the published catalog; when the exported tools differ, every listener is told
// (→ `notifications/tools/list_changed`). Omitted tools (name collisions, unexportable schemas) are
// logged once per change.
//
// Calls: each call is one `tool.request.v1` (tags tool:request, the workspace, agent:mcp:<client>;
// a fresh UUID requestId; `context.isolation: "process"` when the MCP client demands it) written and
// awaited through the request client (src/breadcrumbs/request-client.ts), which accepts only the
// runner's verified answer: PENDING → ANSWERED | TIMED OUT (callTimeoutMs) | CANCELLED. The event
// stream delivers the answer; a poll (up to every POLL_MS) covers a stream that is down. While it
// waits, the runner's `tool.progress.v1` records of the request (the runner's progress tag) are
// forwarded. Cancellation withdraws (deletes) the request breadcrumb: a request not yet claimed is
// then never run; one already running is NOT stopped (the runner has no cancel mechanism) and its
// answer is still written to the store.

import { randomUUID } from 'node:crypto';
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { StoreClient } from '../breadcrumbs/index.js';
import { createRequestClient, type WrittenRequest } from '../breadcrumbs/request-client.js';
import { SCHEMA, TAG, type StoreEvent } from '../breadcrumbs/messages.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { coerceError, ErrorCode } from '../errors.js';
import { buildToolViews, missingCatalogReason, readCatalog, type ToolViews } from '../export/index.js';
import type { Logger } from '../logger.js';
import { progressTag } from '../request/progress.js';
import { Execution } from '../result.js';
import { callResult, errorResult, type McpCallResult } from './results.js';

const POLL_MS = 2_000;

export interface McpBridgeOptions {
  client: StoreClient;
  workspace: string;
  logger: Logger;
  /** The runner's keys: verify the published catalog and the runner's answer tags. */
  keys: RequestKeys;
  /** Longest wait for an answer before the call ends as `timeout`. */
  callTimeoutMs: number;
}

/** Per-call options. */
export interface BridgeCallOptions {
  /** Sanitised MCP client name (the `agent:mcp:<client>` tag). */
  agent: string;
  /** Aborted when the MCP client cancels the call (or its session closes). */
  signal: AbortSignal;
  /** Each report of the running tool (context.progress), in order, once (tool.progress.v1 records). */
  onProgress?(value: unknown): void;
  /** `process`: the MCP client demands a fresh sandbox process for the call (`context.isolation`). */
  isolation?: 'process';
}

/** A call whose progress is forwarded, by rid. */
interface WatchedCall {
  rid: string;
  breadcrumbId?: string;
  /** The last progress report forwarded (its `seq`). */
  progressSeq: number;
  onProgress(value: unknown): void;
  /** Progress events seen before the request's breadcrumb id was known. */
  early: StoreEvent[];
}

export interface McpBridge {
  /** Feeds one store event (responses and catalog updates; everything else is ignored). */
  handleEvent(event: StoreEvent): void;
  /** After the event stream reconnects: re-read the catalog and poll every pending call. */
  onReconnect(): void;
  /** The exported view of the published catalog (read on first use). */
  views(): Promise<ToolViews>;
  /** Calls a tool by its exported name; never throws for tool or store failures (they are `isError` results). */
  call(exportName: string, args: unknown, opts: BridgeCallOptions): Promise<McpCallResult>;
  /** Registers a listener for changes of the exported tool list; returns its removal. */
  onListChanged(listener: () => void): () => void;
  /** Stops polling; pending calls end as cancelled. */
  close(): void;
}

/** Creates the bridge. */
export function createMcpBridge(options: McpBridgeOptions): McpBridge {
  const { client, workspace, logger, keys } = options;
  const requests = createRequestClient({ client, keys, workspace, pollMaxMs: POLL_MS });
  const watched = new Map<string, WatchedCall>();
  const listeners = new Set<() => void>();
  const closing = new AbortController();
  let current: ToolViews | undefined;
  let currentKey = '';
  let loading: Promise<ToolViews> | undefined;
  let again = false;
  let warnedUnverified = false;

  const load = async (): Promise<ToolViews> => {
    const read = await readCatalog(client, workspace, keys);
    // No sealed catalog means an empty tool list: say why once, not on every refresh.
    if (!read.catalog && read.unverified > 0 && !warnedUnverified) {
      warnedUnverified = true;
      logger.warn('MCP serves no tools: no catalog sealed with this runner secret', {
        reason: missingCatalogReason(read, workspace),
      });
    }
    const entries = read.catalog?.tools ?? [];
    const views = buildToolViews(entries);
    const key = JSON.stringify([views.tools, views.omitted]);
    if (key !== currentKey) {
      for (const o of views.omitted)
        logger.warn('tool not exported over MCP', { tool: o.name, exportName: o.exportName, reason: o.reason });
      const hadList = current !== undefined;
      current = views;
      currentKey = key;
      if (hadList) {
        logger.info('MCP tool list changed', { tools: views.tools.length });
        for (const listener of listeners) listener();
      }
    }
    return views;
  };

  const refresh = (): Promise<ToolViews> => {
    if (loading) {
      again = true;
      return loading;
    }
    loading = load().finally(() => {
      loading = undefined;
      if (again) {
        again = false;
        void refresh().catch((error: unknown) => logger.warn('MCP catalog refresh failed', { error }));
      }
    });
    return loading;
  };

  /** Forwards the new reports of a tool.progress.v1 event written by the runner for this call. */
  const considerProgress = (entry: WatchedCall, event: StoreEvent): void => {
    const tags = event.tags ?? [];
    if (entry.breadcrumbId === undefined || !tags.includes(workspace)) return;
    if (!tags.includes(progressTag(keys, entry.breadcrumbId))) return;
    const context = event.context as { request_id?: unknown; events?: unknown } | undefined;
    if (context?.request_id !== entry.rid || !Array.isArray(context.events)) return;
    for (const item of context.events as Array<{ seq?: unknown; value?: unknown }>) {
      if (typeof item?.seq !== 'number' || item.seq <= entry.progressSeq) continue;
      entry.progressSeq = item.seq;
      entry.onProgress(item.value);
    }
  };

  const handleEvent = (event: StoreEvent): void => {
    if (event.type !== 'breadcrumb.updated') return;
    if (event.schema_name === SCHEMA.ToolCatalog) {
      if (event.tags?.includes(workspace) && event.tags.includes(TAG.Catalog))
        void refresh().catch((error: unknown) => logger.warn('MCP catalog refresh failed', { error }));
      return;
    }
    if (event.schema_name === SCHEMA.ToolResponse) return requests.handleEvent(event);
    if (event.schema_name !== SCHEMA.ToolProgress || watched.size === 0) return;
    for (const tag of event.tags ?? []) {
      if (!tag.startsWith('request:')) continue;
      const entry = watched.get(tag.slice('request:'.length));
      if (!entry) continue;
      if (entry.breadcrumbId === undefined) entry.early.push(event);
      else considerProgress(entry, event);
    }
  };

  const call = async (exportName: string, args: unknown, opts: BridgeCallOptions): Promise<McpCallResult> => {
    let views = current ?? (await refresh());
    let name = views.reverse.get(exportName);
    if (name === undefined) {
      views = await refresh();
      name = views.reverse.get(exportName);
    }
    if (name === undefined) {
      // The specification lists an unknown tool among the protocol errors (-32602), not tool results.
      const omitted = views.omitted.find((o) => o.exportName === exportName);
      const why = omitted
        ? omitted.reason
        : `no tool named ${JSON.stringify(exportName)} in the catalog of ${workspace}`;
      throw new McpError(McpErrorCode.InvalidParams, `Unknown tool: ${JSON.stringify(exportName)} (${why})`);
    }
    const rid = randomUUID();
    const startedAt = performance.now();
    const watch: WatchedCall | undefined = opts.onProgress
      ? { rid, progressSeq: 0, onProgress: opts.onProgress, early: [] }
      : undefined;
    if (watch) watched.set(rid, watch);
    const signal = AbortSignal.any([opts.signal, closing.signal]);
    let written: WrittenRequest | undefined;
    try {
      written = await requests.write(
        {
          rid,
          tool: name,
          input: args ?? {},
          requestedBy: `mcp:${opts.agent}`,
          tags: [TAG.agent(`mcp:${opts.agent}`)],
          ...(opts.isolation ? { context: { isolation: opts.isolation } } : {}),
        },
        { signal: opts.signal },
      );
      if (watch) {
        watch.breadcrumbId = written.breadcrumbId;
        for (const event of watch.early.splice(0)) considerProgress(watch, event);
      }
      const result = await requests.wait(written, { timeoutMs: options.callTimeoutMs, signal });
      if (result.kind === 'cancelled') {
        await cancel(rid, written, name);
        return errorResult(
          ErrorCode.Internal,
          `call of ${JSON.stringify(name)} (request ${rid}) was cancelled by the client`,
          {},
          Execution.MayHaveRun,
        );
      }
      if (result.kind === 'timeout') {
        return errorResult(
          ErrorCode.Timeout,
          `no tool.response.v1 for request ${rid} (tool ${JSON.stringify(name)}) within ${options.callTimeoutMs} ms; the request stays in the store and may still be answered`,
          {},
          Execution.MayHaveRun,
        );
      }
      logger.debug('MCP call answered', {
        rid,
        tool: name,
        status: result.answer.status,
        ms: Math.round(performance.now() - startedAt),
      });
      return callResult(result.answer, {
        rid,
        requestBreadcrumbId: written.breadcrumbId,
        responseBreadcrumbId: result.responseId,
      });
    } catch (error) {
      if (opts.signal.aborted) {
        await cancel(rid, written, name);
        return errorResult(
          ErrorCode.Internal,
          `call of ${JSON.stringify(name)} (request ${rid}) was cancelled by the client`,
          {},
          written ? Execution.MayHaveRun : Execution.NeverStarted,
        );
      }
      const e = coerceError(error);
      logger.warn('MCP call failed', { rid, tool: name, code: e.code, error: e.message });
      // Once the request is in the store a runner may run it, whatever happened to our wait.
      return written
        ? errorResult(
            e.code,
            `waiting for the answer to request ${rid} for ${JSON.stringify(name)} failed: ${e.message}`,
            {},
            Execution.MayHaveRun,
          )
        : errorResult(
            e.code,
            `request ${rid} for ${JSON.stringify(name)} could not be written to the store: ${e.message}`,
            {},
            Execution.NeverStarted,
          );
    } finally {
      if (watch) watched.delete(rid);
    }
  };

  /** Withdraws the request so a runner that has not claimed it yet never runs it. */
  const cancel = async (rid: string, written: WrittenRequest | undefined, tool: string): Promise<void> => {
    if (written === undefined) {
      logger.info('MCP call cancelled before its request was written', { rid, tool });
      return;
    }
    try {
      if (await requests.withdraw(written))
        logger.info('MCP call cancelled: request deleted', { rid, tool, request: written.breadcrumbId });
    } catch (error) {
      logger.warn('MCP call cancelled but its request could not be deleted', { rid, tool, error });
    }
  };

  return {
    handleEvent,
    onReconnect() {
      void refresh().catch((error: unknown) => logger.warn('MCP catalog refresh failed', { error }));
      requests.onReconnect();
    },
    views: () => (current ? Promise.resolve(current) : refresh()),
    call,
    onListChanged(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    close() {
      closing.abort();
      requests.close();
      listeners.clear();
    },
  };
}
