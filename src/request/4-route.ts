// Step 4 of a request's life (after the claim, 3-claims.ts): read the request and find what runs it.
//
// A malformed request (bad requestId, context not a tool.request.v1, input nested too deeply, a
// `context.version` that is neither a version nor a range) and a tool name or version nothing answers
// to (no version matches; the version was removed: the message names its replacement) end here as
// input.invalid / tool.not_found results; otherwise the catalog's route (a code tool or a host tool,
// at the version `context.version` asks for) picks the executor of step 6.

import { ToolRequestContext, type BreadcrumbFull, type RequestIdentity } from '../breadcrumbs/messages.js';
import type { Catalog, Route } from '../catalog/catalog.js';
import { ErrorCode } from '../errors.js';
import { failure, jsonDepthExceeds, MAX_JSON_DEPTH, type ExecutionResult } from '../result.js';

/** An error result of a stage that ran nothing (no duration, no logs). */
export function errorResult(code: ErrorCode, message: string, details?: Record<string, unknown>): ExecutionResult {
  return { ok: false, error: failure(code, message, details), durationMs: 0, logs: [], logsTruncated: false };
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
export function readRequest(full: Pick<BreadcrumbFull, 'context'>, identity: RequestIdentity): ({ ok: true } & RequestAsk) | { ok: false; result: ExecutionResult } {
  if (identity.problem) return { ok: false, result: errorResult(ErrorCode.InputInvalid, `malformed tool.request.v1: ${identity.problem}`) };
  if (identity.callerProblem) return { ok: false, result: errorResult(ErrorCode.PermissionDenied, identity.callerProblem) };
  const parsed = ToolRequestContext.safeParse(full.context);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'context'}: ${i.message}`).join('; ');
    return { ok: false, result: errorResult(ErrorCode.InputInvalid, `malformed tool.request.v1: ${problems}`) };
  }
  const { input, version, idempotency_key: idempotencyKey, isolation } = parsed.data;
  if (jsonDepthExceeds(input)) return { ok: false, result: errorResult(ErrorCode.InputInvalid, `input is nested deeper than ${MAX_JSON_DEPTH} levels`) };
  return { ok: true, input, ...(version !== undefined ? { version } : {}), ...(idempotencyKey !== undefined ? { idempotencyKey } : {}), ...(isolation !== undefined ? { isolation } : {}) };
}

/** The route of tool `name` at `versionSpec` (asking the store once when the catalog has none), or the error result. */
export async function routeRequest(catalog: Catalog, name: string, versionSpec?: string): Promise<{ ok: true; route: Route } | { ok: false; result: ExecutionResult }> {
  let found = catalog.lookup(name, versionSpec);
  // A bad version spec stays bad; anything else may be a version the store has and the catalog not yet.
  if (found.kind === 'unknown' || (found.kind === 'refused' && found.code !== ErrorCode.InputInvalid)) {
    await catalog.refreshName(name);
    found = catalog.lookup(name, versionSpec);
  }
  if (found.kind === 'route') return { ok: true, route: found.route };
  if (found.kind === 'refused') return { ok: false, result: errorResult(found.code, found.message) };
  const rejected = catalog.rejected().find((r) => r.name === name);
  const why = rejected?.errors[0] ? ` (a tool.code.v1 named "${name}" exists but was rejected: ${rejected.errors[0].path}: ${rejected.errors[0].message})` : '';
  return { ok: false, result: errorResult(ErrorCode.ToolNotFound, `no runnable tool named "${name}"${why}`) };
}
