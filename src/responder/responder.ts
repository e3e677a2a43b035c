// Writes the runner's answers: tool.response.v1 (and tool.create.response.v1) breadcrumbs.
//
// Every answer is created with an Idempotency-Key derived from the request id, so however many
// times a write is retried — by this replica after a network error, or by another replica after
// a takeover — the store keeps exactly one answer; a 409 means "already answered" and is success.
// Transient store failures are retried with backoff until the write lands or the signal aborts.

import { setTimeout as sleep } from 'node:timers/promises';
import type { StoreClient } from '../breadcrumbs/index.js';
import { isConflict, StoreError } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, type ToolCreateResponseContext, type ToolResponseContext } from '../breadcrumbs/messages.js';
import { ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { failure, type ExecutionResult } from '../result.js';

export interface ResponderOptions {
  client: StoreClient;
  workspace: string;
  logger: Logger;
  retry?: { initialMs: number; maxMs: number };
}

export interface ToolAnswer {
  rid: string;
  tool: string;
  result: ExecutionResult;
  /** Extra tags (e.g. `agent:<id>` of the requester). The three required tags are always set. */
  extraTags?: string[];
  metadata?: Record<string, unknown>;
}

export type WriteOutcome = 'written' | 'duplicate';

export interface Responder {
  respond(answer: ToolAnswer, signal?: AbortSignal): Promise<WriteOutcome>;
  /** Titled `Tool <status>: <tool name>` (the spec's `toolName` when nothing was created), else the rid. */
  respondCreate(rid: string, context: ToolCreateResponseContext, extraTags: string[], signal?: AbortSignal, toolName?: string): Promise<WriteOutcome>;
}

/** Builds the context of a tool.response.v1 from an execution result. */
export function responseContext(answer: ToolAnswer, now = new Date()): ToolResponseContext {
  const { result } = answer;
  const metadata: Record<string, unknown> = {
    ...answer.metadata,
    ...(result.logs.length > 0 ? { logs: result.logs } : {}),
    ...(result.logsTruncated ? { logs_truncated: true } : {}),
  };
  return {
    request_id: answer.rid,
    tool: answer.tool,
    status: result.ok ? 'success' : 'error',
    ...(result.ok ? { output: result.output } : { error: { ...result.error } }),
    execution_time_ms: Math.round(result.durationMs * 1000) / 1000,
    metadata,
    timestamp: now.toISOString(),
  };
}

/** Creates the responder. */
export function createResponder(options: ResponderOptions): Responder {
  const { client, workspace, logger } = options;
  const retry = options.retry ?? { initialMs: 100, maxMs: 5_000 };

  const write = async (
    key: string,
    body: Parameters<StoreClient['createBreadcrumb']>[0],
    signal: AbortSignal | undefined,
  ): Promise<WriteOutcome> => {
    let delay = retry.initialMs;
    for (;;) {
      try {
        await client.createBreadcrumb(body, { idempotencyKey: key, ...(signal ? { signal } : {}) });
        return 'written';
      } catch (error) {
        if (isConflict(error)) return 'duplicate';
        if (!(error instanceof StoreError) || !error.retryable || signal?.aborted) throw error;
        logger.warn('answer write failed, retrying', { key, delayMs: delay, error });
        await sleep(delay, undefined, signal ? { signal } : {});
        delay = Math.min(retry.maxMs, delay * 2);
      }
    }
  };

  const respond = async (answer: ToolAnswer, signal?: AbortSignal): Promise<WriteOutcome> => {
    const context = responseContext(answer);
    const tags = [workspace, TAG.Response, TAG.request(answer.rid), ...(answer.extraTags ?? [])];
    const title = `${answer.result.ok ? 'Response' : 'Error'}: ${answer.tool}`;
    try {
      return await write(`response:${answer.rid}`, { title, schema_name: SCHEMA.ToolResponse, tags, context }, signal);
    } catch (error) {
      // The store refused this answer's body (e.g. too large): the caller still gets an answer.
      if (error instanceof StoreError && (error.status === 413 || error.status === 400)) {
        logger.warn('answer rejected by the store, sending an error instead', { rid: answer.rid, status: error.status });
        const replacement: ToolAnswer = {
          ...answer,
          result: {
            ok: false,
            durationMs: answer.result.durationMs,
            logs: [],
            logsTruncated: answer.result.logs.length > 0,
            error: failure(ErrorCode.OutputInvalid, `the store refused the response (HTTP ${error.status}: ${error.message}); the output is probably too large`),
          },
        };
        const fallback = responseContext(replacement);
        return write(`response:${answer.rid}`, { title: `Error: ${answer.tool}`, schema_name: SCHEMA.ToolResponse, tags, context: fallback }, signal);
      }
      throw error;
    }
  };

  const respondCreate = (rid: string, context: ToolCreateResponseContext, extraTags: string[], signal?: AbortSignal, toolName?: string): Promise<WriteOutcome> =>
    write(
      `create-response:${rid}`,
      {
        title: `Tool ${context.status}: ${context.tool?.name ?? toolName ?? rid}`,
        schema_name: SCHEMA.ToolCreateResponse,
        tags: [workspace, TAG.Response, TAG.request(rid), ...extraTags],
        context,
      },
      signal,
    );

  return { respond, respondCreate };
}
