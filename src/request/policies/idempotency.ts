// Idempotency keys: a request's `context.idempotency_key` makes its call run at most once.
//
// The key is bound to (calling agent, tool name, key) — requests without an agent share the
// binding of the agent ''. The binding's record is a `tool.idempotency.v1` breadcrumb holding the
// tool version, input hash, rid and breadcrumb id of the FIRST request, created BEFORE the tool
// runs with `Idempotency-Key: keys.idempotencyKey(binding)` (an HMAC under the runner secret, so
// no agent string reaches a header and nobody without the secret can take the key first). The
// store lets one create per key succeed: of two replicas racing, one gets the record and the
// other a 409 that names it. The record carries a MAC over all its fields, so an edited or forged
// record is recognised. Records do not expire: a key stays bound for as long as the store lives.
//
// Two policies, one per end of the chain (src/service/build.ts):
// - `idempotency-check` (first): finds the binding's record by its derived tag. None: go on. A
//   record of another request with the same version and input hash: its answer replayed for this
//   rid with `metadata.replayed_from`; not answered yet: park until its answer tag is seen (or
//   30 s, then look again). Different version or input: `conflict`. A replay therefore takes no
//   approval and no rate-limit token.
// - `idempotency-reserve` (last, right before the run): creates the record. A call refused
//   earlier in the chain (rate.exceeded, approval) leaves the key free. A 409 means another
//   request got there first: decided as in the check (usually a park).
//
// Fail-closed endings (answer `conflict`, never run, never replay):
// - the record was edited or forged (MAC does not verify), or deleted (the store keeps the key);
// - the first request was withdrawn (deleted) without an answer: it reserved the key right before
//   its run, so its effects are unknown;
// - this very request reserved the key in an earlier attempt that ended without an answer (a
//   runner restart or drain mid-run): re-running it could do the effect twice.
// A replayed answer must be the runner's: tagged with the first request's answer tag, naming its
// rid and breadcrumb id, never edited (store version 1); of several, the earliest created.

import { setTimeout as sleep } from 'node:timers/promises';
import {
  conflictId,
  isConflict,
  isNotFound,
  sameText,
  StoreError,
  type IdempotencyBinding,
  type RequestKeys,
  type StoreClient,
} from '../../breadcrumbs/index.js';
import {
  SCHEMA,
  ToolIdempotencyContext,
  ToolResponseContext,
  type BreadcrumbFull,
} from '../../breadcrumbs/messages.js';
import { ErrorCode } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { errorResult, type ExecutionResult } from '../../result.js';
import type { Call, Gate, Policy } from '../policy.js';
import { backoffMs } from '../../backoff.js';

export interface IdempotencyOptions {
  client: StoreClient;
  keys: RequestKeys;
  workspace: string;
  logger: Logger;
  /** How long a request waits for the first request's answer before looking again (default 30 s). */
  recheckMs?: number;
  now?: () => number;
}

/** The record as found: valid, or why it cannot be trusted. */
type Found =
  | { kind: 'record'; id: string; record: ToolIdempotencyContext }
  | { kind: 'tampered'; id: string }
  | { kind: 'deleted'; id: string }
  | { kind: 'none' };

/** Store create attempts of a reservation through transient store trouble. */
const RESERVE_TRIES = 5;

/** The fields a record's MAC covers, in a fixed order (JSON-encoded: no two field lists collide). */
function macInput(r: Omit<ToolIdempotencyContext, 'mac'>): string {
  return JSON.stringify([
    r.agent_id,
    r.tool,
    r.idempotency_key,
    r.version,
    r.input_hash,
    r.request_id,
    r.request_breadcrumb_id,
    r.created_at,
  ]);
}

/** The binding of a call that carries a key. */
export function bindingOf(call: Call): IdempotencyBinding | undefined {
  if (call.idempotencyKey === undefined) return undefined;
  return { agent: call.identity.agentId ?? '', tool: call.route.tool.name, key: call.idempotencyKey };
}

/** The MAC of a record's binding fields under the runner secret. */
export function idempotencyMac(keys: RequestKeys, record: Omit<ToolIdempotencyContext, 'mac'>): string {
  return keys.stateMac(SCHEMA.ToolIdempotency, macInput(record));
}

/** Whether `context` is a record of `binding` the runner wrote (fields intact, MAC valid). */
export function verifyIdempotencyRecord(
  keys: RequestKeys,
  binding: IdempotencyBinding,
  context: unknown,
): ToolIdempotencyContext | undefined {
  const parsed = ToolIdempotencyContext.safeParse(context);
  if (!parsed.success) return undefined;
  const r = parsed.data;
  if (r.agent_id !== binding.agent || r.tool !== binding.tool || r.idempotency_key !== binding.key) return undefined;
  return sameText(idempotencyMac(keys, r), r.mac) ? r : undefined;
}

/** The check (first in the chain) and the reservation (last) of idempotency keys. */
export function idempotencyPolicies(options: IdempotencyOptions): { check: Policy; reserve: Policy } {
  const { client, keys, workspace, logger } = options;
  const now = options.now ?? Date.now;
  const recheckMs = options.recheckMs ?? 30_000;
  const quote = (b: IdempotencyBinding) => `idempotency key ${JSON.stringify(b.key)}`;
  const refuse = (message: string, details: Record<string, unknown>): Gate => ({
    kind: 'answer',
    result: errorResult(ErrorCode.Conflict, message, details),
  });

  /** The binding's valid record found by its tag (junk with the tag but no valid MAC is ignored). */
  const findByTag = async (binding: IdempotencyBinding, signal: AbortSignal): Promise<Found> => {
    // Every page: junk under the tag must not push the real record out of sight.
    const items = await client.listAll(
      { schema_name: SCHEMA.ToolIdempotency, tag: keys.idempotencyTag(binding), include_context: true, limit: 100 },
      { signal },
    );
    for (const item of items) {
      const record = verifyIdempotencyRecord(keys, binding, item.context);
      if (record) return { kind: 'record', id: item.id, record };
    }
    return { kind: 'none' };
  };

  /** The record a reservation's 409 points at (the embedded store names it; upstream: by tag). */
  const findConflicting = async (
    binding: IdempotencyBinding,
    error: StoreError,
    signal: AbortSignal,
  ): Promise<Found> => {
    const id = conflictId(error);
    if (id === undefined) {
      const found = await findByTag(binding, signal);
      return found.kind === 'none' ? { kind: 'deleted', id: '(unknown)' } : found;
    }
    let full: BreadcrumbFull;
    try {
      full = await client.getBreadcrumbFull(id, { signal });
    } catch (lookup) {
      if (isNotFound(lookup)) return { kind: 'deleted', id };
      throw lookup;
    }
    const record =
      full.schema_name === SCHEMA.ToolIdempotency ? verifyIdempotencyRecord(keys, binding, full.context) : undefined;
    return record ? { kind: 'record', id, record } : { kind: 'tampered', id };
  };

  /** The runner's answer to the first request, when it has one. */
  const answerOf = async (
    first: ToolIdempotencyContext,
    signal: AbortSignal,
  ): Promise<ToolResponseContext | undefined> => {
    const items = await client.listAll(
      { schema_name: SCHEMA.ToolResponse, tag: keys.answerTag(first.request_breadcrumb_id), limit: 100 },
      { signal },
    );
    const candidates: Array<{ created: number; order: number; context: ToolResponseContext }> = [];
    for (const [order, item] of items.entries()) {
      if (item.version !== 1) continue;
      let full: BreadcrumbFull;
      try {
        full = await client.getBreadcrumbFull(item.id, { signal });
      } catch (error) {
        if (isNotFound(error)) continue;
        throw error;
      }
      const parsed = ToolResponseContext.safeParse(full.context);
      if (!parsed.success || full.version !== 1 || full.schema_name !== SCHEMA.ToolResponse) continue;
      const context = parsed.data;
      if (
        context.request_id !== first.request_id ||
        context.metadata['request_breadcrumb_id'] !== first.request_breadcrumb_id
      )
        continue;
      if (context.status === 'error' && !context.error) continue;
      candidates.push({ created: Date.parse(full.created_at ?? full.updated_at), order, context });
    }
    // Same millisecond: the store lists newest writes first, so the later in the list is the older.
    candidates.sort((a, b) => a.created - b.created || b.order - a.order);
    return candidates[0]?.context;
  };

  /** The first request's result, as this request's answer. */
  const replay = (call: Call, first: ToolIdempotencyContext, answer: ToolResponseContext): Gate => {
    call.metadata['replayed_from'] = { rid: first.request_id, request_breadcrumb_id: first.request_breadcrumb_id };
    const base = { durationMs: 0, logs: [], logsTruncated: false };
    const result: ExecutionResult =
      answer.status === 'success'
        ? { ...base, ok: true, output: answer.output }
        : {
            ...base,
            ok: false,
            error: {
              code: answer.error!.code as ErrorCode,
              message: answer.error!.message,
              retryable: answer.error!.retryable,
              ...(answer.error!.details ? { details: answer.error!.details } : {}),
            },
          };
    return { kind: 'answer', result };
  };

  /** Decides a call whose binding already has a valid record of ANOTHER request. */
  const decideOther = async (
    call: Call,
    binding: IdempotencyBinding,
    first: ToolIdempotencyContext,
    signal: AbortSignal,
  ): Promise<Gate> => {
    const differs: string[] = [];
    if (first.version !== call.version) differs.push(`version ${first.version} (this request: ${call.version})`);
    if (first.input_hash !== call.inputHash)
      differs.push(`input hash ${first.input_hash} (this request: ${call.inputHash})`);
    if (differs.length > 0) {
      return refuse(
        `${quote(binding)} of tool "${binding.tool}" was first used by request "${first.request_id}" with a different payload: ${differs.join(' and ')}; send a new key for a different call`,
        {
          first_request_id: first.request_id,
          differs: [
            ...(first.version !== call.version ? ['version'] : []),
            ...(first.input_hash !== call.inputHash ? ['input_hash'] : []),
          ],
        },
      );
    }
    const answer = await answerOf(first, signal);
    if (answer) return replay(call, first, answer);
    try {
      await client.getBreadcrumbFull(first.request_breadcrumb_id, { signal });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      // Gone without an answer: withdrawn after it reserved the key, i.e. while it ran (or about to).
      // An answer written in the meantime wins.
      const late = await answerOf(first, signal);
      if (late) return replay(call, first, late);
      return refuse(
        `${quote(binding)} was taken by request "${first.request_id}", which was withdrawn without an answer after it started to run; its effects are unknown, so this request does not run (send a new key)`,
        {
          first_request_id: first.request_id,
        },
      );
    }
    return {
      kind: 'park',
      reason: `waiting for the answer of request "${first.request_id}", the first with ${quote(binding)}`,
      until: now() + recheckMs,
      wakeOn: [keys.answerTag(first.request_breadcrumb_id)],
    };
  };

  /** The answer for a record that cannot be trusted. */
  const untrusted = (binding: IdempotencyBinding, found: Extract<Found, { kind: 'tampered' | 'deleted' }>): Gate => {
    logger.warn('idempotency record not trusted', { kind: found.kind, record: found.id, tool: binding.tool });
    const what =
      found.kind === 'tampered'
        ? `was edited or forged (breadcrumb ${found.id}: its MAC does not verify)`
        : `was deleted (breadcrumb ${found.id}; the store keeps the key)`;
    return refuse(
      `the record of ${quote(binding)} for tool "${binding.tool}" ${what}; this request does not run and no result is replayed (send a new key)`,
      { record: found.id, tampering: found.kind },
    );
  };

  const check: Policy = {
    name: 'idempotency-check',
    async admit(call, signal) {
      const binding = bindingOf(call);
      if (!binding) return { kind: 'run' };
      const found = await findByTag(binding, signal);
      if (found.kind !== 'record') return { kind: 'run' };
      if (found.record.request_breadcrumb_id === call.identity.breadcrumbId) {
        return refuse(
          `an earlier attempt of request "${call.identity.rid}" reserved ${quote(binding)} and ended without an answer (runner restart or drain while it ran); its effects are unknown, so it does not run again`,
          {
            first_request_id: call.identity.rid,
          },
        );
      }
      return decideOther(call, binding, found.record, signal);
    },
  };

  const reserve: Policy = {
    name: 'idempotency-reserve',
    async admit(call, signal) {
      const binding = bindingOf(call);
      if (!binding) return { kind: 'run' };
      const fields = {
        agent_id: binding.agent,
        tool: binding.tool,
        idempotency_key: binding.key,
        version: call.version,
        input_hash: call.inputHash,
        request_id: call.identity.rid,
        request_breadcrumb_id: call.identity.breadcrumbId,
        created_at: new Date(now()).toISOString(),
      };
      const context: ToolIdempotencyContext = { ...fields, mac: idempotencyMac(keys, fields) };
      const body = {
        title: `Idempotency: ${binding.tool}`,
        schema_name: SCHEMA.ToolIdempotency,
        tags: [workspace, keys.idempotencyTag(binding)],
        context,
      };
      for (let tries = 1; ; tries++) {
        try {
          await client.createBreadcrumb(body, { idempotencyKey: keys.idempotencyKey(binding), signal });
          return { kind: 'run' };
        } catch (error) {
          if (isConflict(error)) {
            const found = await findConflicting(binding, error, signal);
            if (found.kind === 'tampered' || found.kind === 'deleted') return untrusted(binding, found);
            if (found.kind === 'none') throw error;
            // Our own create whose reply was lost (a retry of this loop): the key is ours.
            if (found.record.request_breadcrumb_id === call.identity.breadcrumbId) return { kind: 'run' };
            return decideOther(call, binding, found.record, signal);
          }
          if (!(error instanceof StoreError) || !error.retryable || signal.aborted || tries >= RESERVE_TRIES)
            throw error;
          logger.warn('idempotency record write failed, retrying', { tries, error });
          await sleep(backoffMs({ initialMs: 100, maxMs: 5_000 }, tries), undefined, { signal });
        }
      }
    },
  };

  return { check, reserve };
}
