// The MCP bridge: the store-facing half of the MCP server, shared by every MCP session (stdio or
// HTTP). It holds the exported view of the published catalog and turns calls into requests.
//
// Catalog view: IDLE (not read yet) → LOADED; a `tool.catalog.v1` event of the workspace (or a
// reconnect) re-reads the published catalog; when the exported tools differ, every listener is told
// (→ `notifications/tools/list_changed`). Omitted tools (name collisions, unexportable schemas) are
// logged once per change.
//
// Calls: each call is one `tool.request.v1` (tags tool:request, the workspace, agent:mcp:<client>;
// a fresh UUID requestId) and waits for the runner's `tool.response.v1`: PENDING (request written,
// answer events matched by `request:<rid>` and checked: same workspace, `metadata.
// request_breadcrumb_id` = our request, and the runner's unforgeable answer tag when the runner
// secret is known) → ANSWERED | TIMED OUT (callTimeoutMs) | CANCELLED. The event stream delivers the
// answer; a poll every POLL_MS covers a stream that is down. Cancellation deletes the request
// breadcrumb: a request not yet claimed is then never run; one already running is NOT stopped
// (the runner has no cancel mechanism) and its answer is still written to the store.

import { randomUUID } from 'node:crypto';
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { StoreClient } from '../breadcrumbs/index.js';
import { isNotFound } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, ToolResponseContext, type StoreEvent } from '../breadcrumbs/messages.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { coerceError, ErrorCode } from '../errors.js';
import { buildToolViews, missingCatalogReason, readCatalog, type ToolViews } from '../export/index.js';
import type { Logger } from '../logger.js';
import { progressTag } from '../request/progress.js';
import { callResult, errorResult, type McpCallResult } from './results.js';

const POLL_MS = 2_000;

export interface McpBridgeOptions {
  client: StoreClient;
  workspace: string;
  logger: Logger;
  /** The runner's key derivation, when this process knows the runner secret (answers are then checked for the answer tag). */
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
}

interface Pending {
  rid: string;
  breadcrumbId?: string;
  /** The last progress report forwarded (its `seq`). */
  progressSeq: number;
  onProgress?(value: unknown): void;
  early: StoreEvent[];
  settle(result: ToolResponseContext, responseId: string | undefined): void;
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
  const pending = new Map<string, Pending>();
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
      logger.warn('MCP serves no tools: no catalog sealed with this runner secret', { reason: missingCatalogReason(read, workspace) });
    }
    const entries = read.catalog?.tools ?? [];
    const views = buildToolViews(entries);
    const key = JSON.stringify([views.tools, views.omitted]);
    if (key !== currentKey) {
      for (const o of views.omitted) logger.warn('tool not exported over MCP', { tool: o.name, exportName: o.exportName, reason: o.reason });
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

  const isOurAnswer = (entry: Pending, tags: readonly string[], context: unknown): ToolResponseContext | undefined => {
    if (entry.breadcrumbId === undefined || !tags.includes(workspace) || !tags.includes(TAG.request(entry.rid))) return undefined;
    if (!tags.includes(keys.answerTag(entry.breadcrumbId))) return undefined;
    const parsed = ToolResponseContext.safeParse(context);
    if (!parsed.success || parsed.data.request_id !== entry.rid || parsed.data.metadata['request_breadcrumb_id'] !== entry.breadcrumbId) return undefined;
    return parsed.data;
  };

  /** Forwards the new reports of a tool.progress.v1 event written by the runner for this call. */
  const considerProgress = (entry: Pending, event: StoreEvent): void => {
    const tags = event.tags ?? [];
    if (!entry.onProgress || entry.breadcrumbId === undefined || !tags.includes(workspace)) return;
    if (!tags.includes(progressTag(keys, entry.breadcrumbId))) return;
    const context = event.context as { request_id?: unknown; events?: unknown } | undefined;
    if (context?.request_id !== entry.rid || !Array.isArray(context.events)) return;
    for (const item of context.events as Array<{ seq?: unknown; value?: unknown }>) {
      if (typeof item?.seq !== 'number' || item.seq <= entry.progressSeq) continue;
      entry.progressSeq = item.seq;
      entry.onProgress(item.value);
    }
  };

  const consider = async (entry: Pending, event: StoreEvent): Promise<void> => {
    if (event.schema_name === SCHEMA.ToolProgress) return considerProgress(entry, event);
    let context: unknown = event.context;
    if (context === undefined && event.breadcrumb_id) context = (await client.getBreadcrumbFull(event.breadcrumb_id)).context;
    const answer = isOurAnswer(entry, event.tags ?? [], context);
    if (answer) entry.settle(answer, event.breadcrumb_id);
  };

  const poll = async (entry: Pending): Promise<void> => {
    const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolResponse, tag: TAG.request(entry.rid), include_context: true, limit: 20 });
    for (const item of items) {
      const answer = isOurAnswer(entry, item.tags, item.context);
      if (answer) return entry.settle(answer, item.id);
    }
  };

  const handleEvent = (event: StoreEvent): void => {
    if (event.type !== 'breadcrumb.updated') return;
    if (event.schema_name === SCHEMA.ToolCatalog) {
      if (event.tags?.includes(workspace) && event.tags.includes(TAG.Catalog)) void refresh().catch((error: unknown) => logger.warn('MCP catalog refresh failed', { error }));
      return;
    }
    if ((event.schema_name !== SCHEMA.ToolResponse && event.schema_name !== SCHEMA.ToolProgress) || pending.size === 0) return;
    for (const tag of event.tags ?? []) {
      if (!tag.startsWith('request:')) continue;
      const entry = pending.get(tag.slice('request:'.length));
      if (!entry) continue;
      if (entry.breadcrumbId === undefined) entry.early.push(event);
      else void consider(entry, event).catch((error: unknown) => logger.warn('MCP answer check failed', { rid: entry.rid, error }));
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
      const why = omitted ? omitted.reason : `no tool named ${JSON.stringify(exportName)} in the catalog of ${workspace}`;
      throw new McpError(McpErrorCode.InvalidParams, `Unknown tool: ${JSON.stringify(exportName)} (${why})`);
    }
    const rid = randomUUID();
    const startedAt = performance.now();
    let timer: NodeJS.Timeout | undefined;
    let pollTimer: NodeJS.Timeout | undefined;
    const outcome = new Promise<{ answer: ToolResponseContext; responseId: string | undefined } | 'timeout' | 'cancelled'>((resolve) => {
      const entry: Pending = {
        rid, early: [], progressSeq: 0, settle: (answer, responseId) => resolve({ answer, responseId }),
        ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      };
      pending.set(rid, entry);
      timer = setTimeout(() => resolve('timeout'), options.callTimeoutMs);
      const onAbort = (): void => resolve('cancelled');
      AbortSignal.any([opts.signal, closing.signal]).addEventListener('abort', onAbort, { once: true });
    });
    const entry = pending.get(rid) as Pending;
    try {
      const { id } = await client.createBreadcrumb({
        title: `Request: ${name}`,
        schema_name: SCHEMA.ToolRequest,
        tags: [TAG.Request, workspace, TAG.agent(`mcp:${opts.agent}`)],
        context: { tool: name, input: args ?? {}, requestId: rid, requestedBy: `mcp:${opts.agent}` },
      }, { signal: opts.signal });
      entry.breadcrumbId = id;
      for (const event of entry.early.splice(0)) void consider(entry, event).catch(() => undefined);
      const tick = (): void => {
        pollTimer = setTimeout(() => {
          poll(entry).catch((error: unknown) => logger.debug('MCP answer poll failed', { rid, error })).finally(() => { if (pending.has(rid)) tick(); });
        }, POLL_MS);
      };
      tick();
      const result = await outcome;
      if (result === 'cancelled') {
        await cancel(entry, name);
        return errorResult(ErrorCode.Internal, `call of ${JSON.stringify(name)} (request ${rid}) was cancelled by the client`);
      }
      if (result === 'timeout') {
        return errorResult(ErrorCode.Timeout, `no tool.response.v1 for request ${rid} (tool ${JSON.stringify(name)}) within ${options.callTimeoutMs} ms; the request stays in the store and may still be answered`);
      }
      logger.debug('MCP call answered', { rid, tool: name, status: result.answer.status, ms: Math.round(performance.now() - startedAt) });
      return callResult(result.answer, { rid, requestBreadcrumbId: id, responseBreadcrumbId: result.responseId});
    } catch (error) {
      if (opts.signal.aborted) {
        await cancel(entry, name);
        return errorResult(ErrorCode.Internal, `call of ${JSON.stringify(name)} (request ${rid}) was cancelled by the client`);
      }
      const e = coerceError(error);
      logger.warn('MCP call failed', { rid, tool: name, code: e.code, error: e.message });
      return errorResult(e.code, `request ${rid} for ${JSON.stringify(name)} could not be written to the store: ${e.message}`);
    } finally {
      clearTimeout(timer);
      clearTimeout(pollTimer);
      pending.delete(rid);
    }
  };

  /** Deletes the request breadcrumb so a runner that has not claimed it yet never runs it. */
  const cancel = async (entry: Pending, tool: string): Promise<void> => {
    if (entry.breadcrumbId === undefined) {
      logger.info('MCP call cancelled before its request was written', { rid: entry.rid, tool });
      return;
    }
    try {
      await client.deleteBreadcrumb(entry.breadcrumbId);
      logger.info('MCP call cancelled: request deleted', { rid: entry.rid, tool, request: entry.breadcrumbId });
    } catch (error) {
      if (!isNotFound(error)) logger.warn('MCP call cancelled but its request could not be deleted', { rid: entry.rid, tool, error });
    }
  };

  return {
    handleEvent,
    onReconnect() {
      void refresh().catch((error: unknown) => logger.warn('MCP catalog refresh failed', { error }));
      for (const entry of pending.values()) if (entry.breadcrumbId !== undefined) void poll(entry).catch(() => undefined);
    },
    views: () => (current ? Promise.resolve(current) : refresh()),
    call,
    onListChanged(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    close() {
      closing.abort();
      listeners.clear();
    },
  };
}
