// The RAP tool server: the runner's catalog offered to RAP runtimes, every call run through the
// runner's normal request path.
//
// An invocation (the RAP invocation body) is validated (4xx naming the offending field), then written as a
// `tool.request.v1` (tags `tool:request`, the workspace, `agent:rap:<caller>`) with an
// Idempotency-Key derived from the RAP `id` under the runner secret — the raw id never reaches a
// header — and acknowledged with 200 at once. A retried invoke with the same id lands on the same
// request (409 from the store -> the existing record), so it never runs twice; if that request was
// already answered, the result is delivered again. A store failure is a 503 (the runtime retries).
//
// States of one call: WAITING (for the runner's verified tool.response.v1 through the request client,
// src/breadcrumbs/request-client.ts: store events fed in, a poll as fallback)
// -> DELIVERING (POST `tool_result` to callback_url, retried) -> gone; or CANCELLED (by
// `/cancel_tool_call` or `/close_thread`: a request no replica has claimed yet is withdrawn — its
// breadcrumb deleted, so it never runs; one already claimed runs to its end and its answer is
// recorded in the store, but no result is sent); or TIMED OUT (an `Error: timeout` result is sent).
// Calls live in memory: after a restart a retried invoke re-attaches, a cancel cannot.
//
// Callers (src/rap/auth.ts): every call belongs to the caller that invoked it (the --rap-tokens
// name, or `anonymous` without tokens). Calls are keyed by (caller, id): a retried invoke re-attaches
// (and may change callback_url) only for the same caller; another caller using the same id makes
// an invocation of its own (its own request, its own result); cancel and close_thread see only the
// caller's own calls, so another's call looks exactly like an unknown id (nothing is revealed).

import { canonicalJson } from '../screen/index.js';
import {
  conflictId,
  createRequestClient,
  isConflict,
  isNotFound,
  SCHEMA,
  TAG,
  ToolResponseContext,
  type RequestKeys,
  type StoreClient,
  type StoreEvent,
} from '../breadcrumbs/index.js';
import { coerceError, ErrorCode } from '../errors.js';
import { Execution, failure, failureText, withExecution } from '../result.js';
import type { Logger } from '../logger.js';
import { checkCallbackUrl } from './callback-url.js';
import { DEFAULT_DELIVERY, deliverCallback, type DeliveryPolicy } from './deliver.js';
import type { RapPrincipal } from './auth.js';
import { HttpError } from '../http.js';
import { buildServedToolset, type ServableTool } from './served-toolset.js';
import { quoteValue, type RapToolset } from './toolset.js';

/** Inputs of the tool server. */
export interface ToolServerOptions {
  client: StoreClient;
  keys: RequestKeys;
  workspace: string;
  logger: Logger;
  /** The tools to serve (the runnable catalog, without tools imported from RAP servers). */
  tools(): ServableTool[];
  /** Absolute URL of the invocation endpoint (served as the toolset's `endpoint`). */
  endpoint(): string;
  allowedCallbackHosts: readonly string[];
  resultTimeoutMs: number;
  pollIntervalMs: number;
  delivery?: DeliveryPolicy;
}

/** The tool server's operations (the listener maps routes onto them). */
export interface RapToolServer {
  toolset(): RapToolset;
  /** Validates and records an invocation of `principal`; throws HttpError for a 4xx/5xx answer. */
  invoke(body: unknown, principal: RapPrincipal): Promise<{ accepted: true; id: string }>;
  /** Cancels one of `principal`'s own calls (another's is as good as unknown). */
  cancel(body: unknown, principal: RapPrincipal): Promise<{ withdrawn: number; running: number }>;
  /** Cancels `principal`'s own calls of a thread. */
  closeThread(body: unknown, principal: RapPrincipal): Promise<{ withdrawn: number; running: number }>;
  handleEvent(event: StoreEvent): void;
  pending(): number;
  close(): Promise<void>;
}

interface ServedCall {
  /** The caller that invoked it (RapPrincipal.caller). */
  owner: string;
  id: string;
  groupId: string;
  callId?: string;
  callbackUrl: string;
  rid: string;
  breadcrumbId: string;
  tool: string;
  /** Ends its wait (cancel, close). */
  stop: AbortController;
}

const MAX_ID = 200;
/** Calls waiting for the runner at once; beyond this an invoke is answered 503 (retry later). */
export const MAX_PENDING_CALLS = 10_000;
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]+$/u;

const bad = (message: string): HttpError => new HttpError(400, 'input.invalid', message);

function idField(body: Record<string, unknown>, key: string, required: boolean): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) {
    if (required) throw bad(`${key} is required`);
    return undefined;
  }
  if (typeof value !== 'string' || value === '' || value.length > MAX_ID || !PRINTABLE.test(value)) {
    throw bad(`${key} must be a non-empty string of at most ${MAX_ID} printable characters, got ${quoteValue(value)}`);
  }
  return value;
}

/** `agent:rap:<caller>`: the invoker's user_id (else its group_id), kept to tag-safe characters. */
function callerOf(userId: string | undefined, groupId: string): string {
  const raw = userId ?? groupId;
  const safe = raw.replace(/[^A-Za-z0-9_.@:-]/g, '_').slice(0, 64);
  return safe === '' ? 'anonymous' : safe;
}

/** The text of a RAP tool_result for a tool.response.v1: the output, or `Error: <code>: <message>`. */
export function resultText(response: ToolResponseContext): string {
  if (response.status === 'error')
    return `Error: ${failureText(response.error ?? { code: 'internal', message: 'the tool failed' })}`;
  if (typeof response.output === 'string') return response.output;
  return JSON.stringify(response.output ?? null);
}

/** The fields of a RAP invocation body, each checked (400 naming the offending field). */
interface Invocation {
  operation: string;
  args: Record<string, unknown>;
  id: string;
  callId: string | undefined;
  groupId: string;
  userId: string | undefined;
  callbackUrl: string;
}

function parseInvocation(body: unknown, allowedCallbackHosts: readonly string[]): Invocation {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw bad(`invocation must be a JSON object, got ${Array.isArray(body) ? 'an array' : quoteValue(body)}`);
  const b = body as Record<string, unknown>;
  if (typeof b['operation'] !== 'string' || b['operation'] === '')
    throw bad(`operation must be a non-empty string, got ${quoteValue(b['operation'])}`);
  const operation = b['operation'];
  const rawArgs = b['arguments'];
  if (rawArgs !== undefined && rawArgs !== null && (typeof rawArgs !== 'object' || Array.isArray(rawArgs)))
    throw bad(`arguments must be a JSON object, got ${quoteValue(rawArgs)}`);
  const args = (rawArgs ?? {}) as Record<string, unknown>;
  const id = idField(b, 'id', true) as string;
  const callId = idField(b, 'call_id', false);
  const groupId = idField(b, 'group_id', true) as string;
  const userId = idField(b, 'user_id', false);
  const ancestors = b['thread_ancestors'];
  if (
    ancestors !== undefined &&
    ancestors !== null &&
    !(Array.isArray(ancestors) && ancestors.every((a) => typeof a === 'string'))
  ) {
    throw bad(`thread_ancestors must be an array of strings, got ${quoteValue(ancestors)}`);
  }
  const callbackUrl = checkCallbackUrl(b['callback_url'], allowedCallbackHosts).href;
  return { operation, args, id, callId, groupId, userId, callbackUrl };
}

/** The request an earlier invoke with this id recorded; 409 when it was a different invocation. */
async function existingRequest(
  client: StoreClient,
  conflict: unknown,
  id: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<string> {
  const existingId = conflictId(conflict);
  let full;
  try {
    full = existingId === undefined ? undefined : await client.getBreadcrumbFull(existingId);
  } catch (error) {
    if (!isNotFound(error))
      throw new HttpError(
        503,
        'dependency.unavailable',
        `the invocation could not be recorded (the runner's store failed: ${coerceError(error).message}); retry it`,
      );
  }
  if (existingId === undefined)
    throw new HttpError(
      503,
      'dependency.unavailable',
      `the store reported id ${quoteValue(id)} as taken without naming the record; retry it`,
    );
  if (!full)
    throw new HttpError(
      409,
      'conflict',
      `id ${quoteValue(id)} was used by an earlier invocation whose request was withdrawn; use a new id`,
    );
  const context = full.context;
  const same =
    full.schema_name === SCHEMA.ToolRequest &&
    (context['rap'] as { id?: unknown } | undefined)?.id === id &&
    context['tool'] === tool &&
    canonicalJson(context['input']) === canonicalJson(args);
  if (!same)
    throw new HttpError(
      409,
      'conflict',
      `id ${quoteValue(id)} was already used for a different invocation; a retry must repeat the operation and arguments exactly`,
    );
  return full.id;
}

/** Creates the tool server. */
export function createRapToolServer(options: ToolServerOptions): RapToolServer {
  const { client, keys, workspace, logger } = options;
  const delivery = options.delivery ?? DEFAULT_DELIVERY;
  /** (owner, id) -> call. */
  const byId = new Map<string, ServedCall>();
  const keyOf = (owner: string, id: string): string => `${owner}\0${id}`;
  const requests = createRequestClient({ client, keys, workspace, pollMaxMs: options.pollIntervalMs });
  const deliveries = new Set<Promise<void>>();
  const stopping = new AbortController();

  const served = () =>
    buildServedToolset({
      name: `tools-runner/${workspace}`,
      description: `Tools of the tools-runner workspace ${workspace}`,
      endpoint: options.endpoint(),
      tools: options.tools(),
    });

  const forget = (call: ServedCall): void => {
    call.stop.abort();
    if (byId.get(keyOf(call.owner, call.id)) === call) byId.delete(keyOf(call.owner, call.id));
  };

  const finish = (call: ServedCall, text: string): void => {
    if (byId.get(keyOf(call.owner, call.id)) !== call) return;
    forget(call);
    const message = {
      type: 'tool_result' as const,
      group_id: call.groupId,
      id: call.id,
      ...(call.callId !== undefined ? { call_id: call.callId } : {}),
      text,
    };
    const task = deliverCallback(call.callbackUrl, message, delivery, stopping.signal).then((outcome) => {
      if (outcome.ok)
        logger.info('rap result delivered', { rid: call.rid, tool: call.tool, attempts: outcome.attempts });
      else
        logger.warn('rap result not delivered', {
          rid: call.rid,
          tool: call.tool,
          attempts: outcome.attempts,
          reason: outcome.reason,
        });
    });
    deliveries.add(task);
    void task.finally(() => deliveries.delete(task));
  };

  const watch = (fields: Omit<ServedCall, 'stop'>): void => {
    const existing = byId.get(keyOf(fields.owner, fields.id));
    if (existing) {
      // A retried invoke by the same caller: the latest callback_url (and thread) wins; the run is the same.
      existing.callbackUrl = fields.callbackUrl;
      existing.groupId = fields.groupId;
      if (fields.callId !== undefined) existing.callId = fields.callId;
      return;
    }
    const call: ServedCall = { ...fields, stop: new AbortController() };
    byId.set(keyOf(call.owner, call.id), call);
    // Only the runner's own answer counts (the request client verifies it); a request already answered is found by the first poll.
    void requests
      .wait(
        { rid: call.rid, breadcrumbId: call.breadcrumbId },
        { timeoutMs: options.resultTimeoutMs, signal: call.stop.signal },
      )
      .then((outcome) => {
        if (outcome.kind === 'answered') finish(call, resultText(outcome.answer));
        else if (outcome.kind === 'timeout') {
          logger.warn('rap call timed out waiting for the runner', {
            rid: call.rid,
            tool: call.tool,
            timeoutMs: options.resultTimeoutMs,
          });
          const late = failure(ErrorCode.Timeout, `the runner did not answer within ${options.resultTimeoutMs} ms`);
          finish(call, `Error: ${failureText(withExecution(late, Execution.MayHaveRun))}`);
        }
      });
  };

  const invoke = async (body: unknown, principal: RapPrincipal): Promise<{ accepted: true; id: string }> => {
    const { operation, args, id, callId, groupId, userId, callbackUrl } = parseInvocation(
      body,
      options.allowedCallbackHosts,
    );
    const tool = served().reverse.get(operation);
    if (tool === undefined)
      throw new HttpError(
        404,
        'tool.not_found',
        `unknown operation ${quoteValue(operation)}: the toolset has no such tool`,
      );

    if (byId.size >= MAX_PENDING_CALLS && !byId.has(keyOf(principal.caller, id))) {
      throw new HttpError(
        503,
        'rate.exceeded',
        `${MAX_PENDING_CALLS} RAP calls are already waiting for the runner; retry later`,
      );
    }
    // One request per (caller, id): a verified caller's ids are its own namespace.
    const derived = keys.stateMac(
      'rap-invoke',
      principal.verified ? `${workspace}\0${principal.caller}\0${id}` : `${workspace}\0${id}`,
    );
    const rid = `rap-${derived.slice(0, 24)}`;
    // The tag names the verified caller; without tokens, what the invocation declares (a label only).
    const caller = principal.verified ? principal.caller : callerOf(userId, groupId);
    const rap = {
      id,
      group_id: groupId,
      ...(callId !== undefined ? { call_id: callId } : {}),
      ...(userId !== undefined ? { user_id: userId } : {}),
    };
    let breadcrumbId: string;
    try {
      ({ breadcrumbId } = await requests.write(
        { rid, tool, input: args, requestedBy: `rap:${caller}`, tags: [TAG.agent(`rap:${caller}`)], context: { rap } },
        { idempotencyKey: `rap-invoke-${derived.slice(0, 32)}` },
      ));
    } catch (error) {
      if (!isConflict(error)) {
        throw new HttpError(
          503,
          'dependency.unavailable',
          `the invocation could not be recorded (the runner's store failed: ${coerceError(error).message}); retry it`,
        );
      }
      breadcrumbId = await existingRequest(client, error, id, tool, args);
    }
    watch({
      owner: principal.caller,
      id,
      groupId,
      ...(callId !== undefined ? { callId } : {}),
      callbackUrl,
      rid,
      breadcrumbId,
      tool,
    });
    logger.info('rap invocation accepted', { rid, tool, breadcrumbId, caller });
    return { accepted: true, id };
  };

  const withdraw = async (calls: ServedCall[]): Promise<{ withdrawn: number; running: number }> => {
    let withdrawn = 0;
    let running = 0;
    for (const call of calls) {
      forget(call);
      try {
        const claims = await client.listBreadcrumbs({
          schema_name: SCHEMA.ToolClaim,
          tag: keys.claimTag(call.breadcrumbId),
          limit: 1,
        });
        if (claims.length > 0) {
          running++;
          logger.info(
            'rap call cancelled while running: it runs to its end and its answer is recorded; no result is sent',
            { rid: call.rid, tool: call.tool },
          );
          continue;
        }
        await requests.withdraw({ rid: call.rid, breadcrumbId: call.breadcrumbId });
        withdrawn++;
        logger.info('rap call withdrawn before it ran', { rid: call.rid, tool: call.tool });
      } catch (error) {
        logger.warn('rap call cancellation failed', { rid: call.rid, error });
      }
    }
    return { withdrawn, running };
  };

  const field = (body: unknown, key: string): string | undefined => {
    const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[key] : undefined;
    return typeof value === 'string' ? value : undefined;
  };

  return {
    toolset: () => served().toolset,
    invoke,
    cancel: (body, principal) => {
      const id = field(body, 'tool_call_id');
      const thread = field(body, 'thread_id');
      const call = id === undefined ? undefined : byId.get(keyOf(principal.caller, id));
      return withdraw(call && (thread === undefined || thread === call.groupId) ? [call] : []);
    },
    closeThread: (body, principal) => {
      const thread = field(body, 'thread_id');
      return withdraw(
        thread === undefined
          ? []
          : [...byId.values()].filter((call) => call.owner === principal.caller && call.groupId === thread),
      );
    },
    handleEvent: (event) => requests.handleEvent(event),
    pending: () => byId.size,
    async close() {
      for (const call of [...byId.values()]) forget(call);
      requests.close();
      stopping.abort();
      await Promise.allSettled([...deliveries]);
    },
  };
}
