// Step "answer" of a request's life: writes the runner's one answer to a request — a tool.response.v1
// for a tool request, a tool.create.response.v1 for a create request. This is the only writer of
// answers and the only place that retries an answer write.
//
// Every answer is created with an Idempotency-Key derived from the request breadcrumb's id with the
// runner secret (request-keys.ts), so however many times a write is retried — by this replica after
// a network error, or by another replica after a takeover — the store keeps exactly one answer. A
// 409 is checked against the record it points at: our own earlier answer (or one deleted since)
// means "already answered"; anything else means the key was squatted (only possible when the runner
// secret is public) and the answer goes to the next derived slot.
//
// Every completed run ends in an answer: an answer the store refuses (too large, too deep, not
// serialisable) is replaced by an `output.invalid` error; transient store trouble (anywhere in an
// attempt: the write or the look at a conflicting record) is retried with backoff until the write
// lands or the signal aborts (the service must stop now; the lease then runs out and another
// attempt answers).

import { setTimeout as sleep } from 'node:timers/promises';
import type { StoreClient } from '../breadcrumbs/index.js';
import { conflictId, isConflict, isNotFound, StoreError } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, type ToolCreateResponseContext, type ToolResponseContext } from '../breadcrumbs/messages.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { failure, type ExecutionResult } from '../result.js';
import { backoffMs } from '../backoff.js';

export interface ResponderOptions {
  client: StoreClient;
  workspace: string;
  keys: RequestKeys;
  logger: Logger;
  retry?: { initialMs: number; maxMs: number };
}

export interface ToolAnswer {
  kind?: 'tool';
  /** The request breadcrumb's id: the answer's keys derive from it. */
  requestBreadcrumbId: string;
  rid: string;
  tool: string;
  result: ExecutionResult;
  /** Extra tags (e.g. `agent:<id>` of the requester). The required tags are always set. */
  extraTags?: string[];
  metadata?: Record<string, unknown>;
}

/** The answer to a create request (tool.create.response.v1). */
export interface CreateAnswer {
  kind: 'create';
  requestBreadcrumbId: string;
  rid: string;
  context: ToolCreateResponseContext;
  title: string;
  extraTags?: string[];
}

export type WriteOutcome = 'written' | 'duplicate';

export interface Responder {
  /** Writes the answer (a ToolAnswer, or a CreateAnswer): retried through store trouble until it lands or `signal` aborts. */
  respond(answer: ToolAnswer | CreateAnswer, signal?: AbortSignal): Promise<WriteOutcome>;
}

/** Answer slots tried when a key turns out squatted. */
const MAX_SLOTS = 3;

/** Builds the context of a tool.response.v1 from an execution result. */
export function responseContext(answer: ToolAnswer, now = new Date()): ToolResponseContext {
  const { result } = answer;
  const metadata: Record<string, unknown> = {
    ...answer.metadata,
    request_breadcrumb_id: answer.requestBreadcrumbId,
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

type Body = Parameters<StoreClient['createBreadcrumb']>[0];

/** Thrown when an answer cannot be stored as it is (the store refused it, or it does not serialise). */
class Unstorable extends Error {}

/** Creates the responder. */
export function createResponder(options: ResponderOptions): Responder {
  const { client, workspace, keys, logger } = options;
  const retry = options.retry ?? { initialMs: 100, maxMs: 5_000 };

  /** Whether the record a 409 points at is the runner's answer to this request (or was, and is gone). */
  const isOurAnswer = async (
    error: StoreError,
    answerTag: string,
    signal: AbortSignal | undefined,
  ): Promise<boolean> => {
    const id = conflictId(error);
    if (id === undefined) return false;
    try {
      const found = await client.getBreadcrumbFull(id, signal ? { signal } : undefined);
      return found.tags.includes(answerTag);
    } catch (lookup) {
      // Our answer, deleted since by someone with delete rights: the request was answered.
      if (isNotFound(lookup)) return true;
      throw lookup;
    }
  };

  /** One attempt over the answer slots: 'written', 'duplicate', or throws (Unstorable, squatted slots, store trouble). */
  const attempt = async (
    keyOf: (slot: number) => string,
    body: Body,
    answerTag: string,
    signal: AbortSignal | undefined,
  ): Promise<WriteOutcome> => {
    for (let slot = 1; ; slot++) {
      try {
        await client.createBreadcrumb(body, { idempotencyKey: keyOf(slot), ...(signal ? { signal } : {}) });
        return 'written';
      } catch (error) {
        if (isConflict(error)) {
          if (await isOurAnswer(error, answerTag, signal)) return 'duplicate';
          logger.error(
            "an answer key was taken by a record that is not the runner's answer (is --runner-secret set?)",
            { slot },
          );
          if (slot >= MAX_SLOTS) throw new Error(`every answer slot of the request is taken by foreign records`);
          continue;
        }
        // The client refuses a body it cannot serialise before sending anything (storeCode `unsendable`).
        if (error instanceof StoreError && error.storeCode === 'unsendable')
          throw new Unstorable(`the answer cannot be serialised: ${error.message}`);
        if (error instanceof StoreError && (error.status === 400 || error.status === 413 || error.status === 422)) {
          throw new Unstorable(`the store refused the answer (HTTP ${error.status}: ${error.message})`);
        }
        throw error;
      }
    }
  };

  /** The one retry loop of answer writes: transient store trouble is retried with backoff until `signal` aborts. */
  const write = async (
    keyOf: (slot: number) => string,
    body: Body,
    answerTag: string,
    signal: AbortSignal | undefined,
  ): Promise<WriteOutcome> => {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt(keyOf, body, answerTag, signal);
      } catch (error) {
        if (!(error instanceof StoreError) || !error.retryable || signal?.aborted) throw error;
        const delay = backoffMs(retry, tries - 1);
        logger.warn('answer write failed, retrying', { tries, delayMs: delay, error });
        await sleep(delay, undefined, signal ? { signal } : {});
      }
    }
  };

  const respondCreate = (answer: CreateAnswer, signal?: AbortSignal): Promise<WriteOutcome> => {
    const answerTag = keys.answerTag(answer.requestBreadcrumbId);
    return write(
      (slot) => keys.createResponseKey(answer.requestBreadcrumbId, slot),
      {
        title: answer.title,
        schema_name: SCHEMA.ToolCreateResponse,
        tags: [workspace, TAG.Response, TAG.request(answer.rid), answerTag, ...(answer.extraTags ?? [])],
        // Names its request, as a tool answer's metadata does: retention removes the two together.
        context: { ...answer.context, request_breadcrumb_id: answer.requestBreadcrumbId },
      },
      answerTag,
      signal,
    );
  };

  const respondTool = async (answer: ToolAnswer, signal?: AbortSignal): Promise<WriteOutcome> => {
    const answerTag = keys.answerTag(answer.requestBreadcrumbId);
    const tags = [workspace, TAG.Response, TAG.request(answer.rid), answerTag, ...(answer.extraTags ?? [])];
    const keyOf = (slot: number) => keys.responseKey(answer.requestBreadcrumbId, slot);
    const title = `${answer.result.ok ? 'Response' : 'Error'}: ${answer.tool}`;
    try {
      return await write(
        keyOf,
        { title, schema_name: SCHEMA.ToolResponse, tags, context: responseContext(answer) },
        answerTag,
        signal,
      );
    } catch (error) {
      if (!(error instanceof Unstorable)) throw error;
      // The caller still gets an answer: an error that names why the real one could not be stored.
      logger.warn('answer not storable, sending an error instead', { rid: answer.rid, reason: error.message });
      const replacement: ToolAnswer = {
        ...answer,
        metadata: { ...answer.metadata },
        result: {
          ok: false,
          durationMs: answer.result.durationMs,
          logs: [],
          logsTruncated: answer.result.logs.length > 0,
          error: failure(
            ErrorCode.OutputInvalid,
            `${error.message}; the output is probably too large or too deeply nested`,
          ),
        },
      };
      return write(
        keyOf,
        {
          title: `Error: ${answer.tool}`,
          schema_name: SCHEMA.ToolResponse,
          tags,
          context: responseContext(replacement),
        },
        answerTag,
        signal,
      );
    }
  };

  return {
    respond: (answer, signal) =>
      answer.kind === 'create' ? respondCreate(answer, signal) : respondTool(answer, signal),
  };
}
