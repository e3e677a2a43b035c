// Step "read" of a request's life (after the claim): read the record the job runs and who sent it.
//
// The record actually run decides the identity (it may differ from the event that queued it). With
// store auth on, the caller is the record's verified writer — only the `/full` record says who (an
// event's snapshot does not); without it, the request's agent label is the caller. A tool request's
// context is then read for what it asks (input, version, idempotency key, isolation): a malformed
// request (bad requestId, context not a tool.request.v1, input nested too deeply) ends here as an
// input.invalid result.

import { callerOf, isNotFound, type StoreAuthProbe, type StoreClient } from '../breadcrumbs/index.js';
import {
  requestIdentity,
  ToolRequestContext,
  type BreadcrumbFull,
  type RequestIdentity,
} from '../breadcrumbs/messages.js';
import { ErrorCode } from '../errors.js';
import { errorResult, jsonDepthExceeds, MAX_JSON_DEPTH, type ExecutionResult } from '../result.js';
import type { PendingRequest } from './events.js';

/** The request record as the job reads it (from `/full`, or the creation event's snapshot: then no timestamps or writers). */
export type RequestRecord = Pick<BreadcrumbFull, 'id' | 'tags' | 'context'> &
  Partial<Pick<BreadcrumbFull, 'created_at' | 'updated_at' | 'created_by' | 'updated_by' | 'version'>>;

/** The record to run and its identity, or `gone` (deleted before it ran). */
export async function readRequestRecord(
  client: Pick<StoreClient, 'getBreadcrumbFull'>,
  request: PendingRequest,
  storeAuth: StoreAuthProbe | undefined,
): Promise<{ record: RequestRecord; identity: RequestIdentity } | 'gone'> {
  const authenticated = (await storeAuth?.authenticates()) ?? false;
  let record: RequestRecord;
  try {
    // A create request is always read in full (its creation flow needs the writer and the store version).
    const snapshot = authenticated || request.kind === 'create' ? undefined : request.snapshot;
    record = snapshot
      ? { id: request.breadcrumbId, ...snapshot, version: 1 }
      : await client.getBreadcrumbFull(request.breadcrumbId);
  } catch (error) {
    if (isNotFound(error)) return 'gone';
    throw error;
  }
  const caller = callerOf(record, authenticated);
  // The record's identity with the caller in place of its label (agentId): built with stores, not a
  // rest copy and spreads (V8's slow define path on every request).
  const named = requestIdentity({ id: request.breadcrumbId, tags: record.tags, context: record.context });
  const identity: RequestIdentity = { breadcrumbId: named.breadcrumbId, tool: named.tool, rid: named.rid };
  if (named.agentLabel !== undefined) identity.agentLabel = named.agentLabel;
  if (named.problem !== undefined) identity.problem = named.problem;
  if (caller.agentId !== undefined) identity.agentId = caller.agentId;
  identity.verified = caller.verified;
  if (caller.problem !== undefined) identity.callerProblem = caller.problem;
  return { record, identity };
}

/** What a well-formed request asks for. */
export interface RequestAsk {
  input: unknown;
  /** `context.version`: an exact version or a range. */
  version?: string;
  /** `context.idempotency_key`. */
  idempotencyKey?: string;
  /** `context.isolation`: the caller demands a fresh sandbox process. */
  isolation?: 'process';
}

/** The request's input (and what else it asks for), or the error result that answers a malformed request. */
export function readRequest(
  full: Pick<BreadcrumbFull, 'context'>,
  identity: RequestIdentity,
): ({ ok: true } & RequestAsk) | { ok: false; result: ExecutionResult } {
  if (identity.problem)
    return { ok: false, result: errorResult(ErrorCode.InputInvalid, `malformed tool.request.v1: ${identity.problem}`) };
  if (identity.callerProblem)
    return { ok: false, result: errorResult(ErrorCode.PermissionDenied, identity.callerProblem) };
  const parsed = ToolRequestContext.safeParse(full.context);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'context'}: ${i.message}`).join('; ');
    return { ok: false, result: errorResult(ErrorCode.InputInvalid, `malformed tool.request.v1: ${problems}`) };
  }
  const { input, version, idempotency_key: idempotencyKey, isolation } = parsed.data;
  if (jsonDepthExceeds(input))
    return {
      ok: false,
      result: errorResult(ErrorCode.InputInvalid, `input is nested deeper than ${MAX_JSON_DEPTH} levels`),
    };
  return {
    ok: true,
    input,
    ...(version !== undefined ? { version } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
    ...(isolation !== undefined ? { isolation } : {}),
  };
}
