// The life of one request, as the job intake (2-intake.ts) queued runs it — each step in its own
// file of this folder, in order: 3 claim (3-claims.ts; the answer-tag cutover in 3-cutover.ts) ->
// read and route (4-route.ts) -> check the input (5-check.ts) -> the contract policies admit the call
// (5-policy.ts) -> execute with the code or host executor, retried by contract (6-execute.ts) -> check
// the output (5-check.ts) and review it (5-policy.ts) -> respond (7-respond.ts) -> tidy the claim ->
// settle the policies (audit, bookkeeping).
//
// Every path that owns a claim ends in exactly one tool.response.v1, except a drain that aborts the
// job mid-run, and a policy that parks the call (waiting for an approval or for another request's
// answer): then the claim is released without an answer so another replica (or this one after a
// restart, or intake when the wait is over) runs the request. The lease is renewed while the job runs.

import { setTimeout as sleep } from 'node:timers/promises';
import type { StoreClient } from '../breadcrumbs/index.js';
import { callerOf, isNotFound, type StoreAuthProbe } from '../breadcrumbs/index.js';
import { agentTagsOf, requestIdentity, SCHEMA, TAG, type BreadcrumbFull, type RequestIdentity } from '../breadcrumbs/messages.js';
import type { Catalog } from '../catalog/catalog.js';
import type { Config } from '../config/index.js';
import { coerceError, ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { failure, type ExecutionResult } from '../result.js';
import type { SchemaValidator } from '../screen/index.js';
import type { PendingRequest } from './1-events.js';
import { RequestWithdrawn, type RequestOutcome } from './2-intake.js';
import { admit, callOf, review, settle, type Call, type Gate, type Policy } from './5-policy.js';
import { retryPlan } from '../contract/retry.js';
import type { ClaimManager } from './3-claims.js';
import { errorResult, readRequest, routeRequest } from './4-route.js';
import { checkInput, checkOutput } from './5-check.js';
import { executeWithRetries, executorMetadata, type Executors } from './6-execute.js';
import type { Responder } from './7-respond.js';
import { renderDisplay } from '../rap/display-script.js';
import type { RequestOrigin } from '../tool-context/origin.js';
import { createStopwatch, type StageTimings, type Stopwatch } from './timings.js';

/** What the service's metrics, console and live feed learn about one answered request. */
export interface ExecutionReport {
  rid: string;
  tool: string;
  kind: 'code' | 'host' | 'none';
  status: 'success' | 'error';
  code?: string;
  durationMs: number;
  /** The requesting agent, when the request names one. */
  agentId?: string;
  /** A human-readable line for the call (a RAP tool's `displayScript`), for `tools-runner tail`. */
  display?: string;
  /** Where the request's time went, per stage (timings.ts), `respond` included. */
  timings?: StageTimings;
}

export interface RequestHandlerOptions {
  client: StoreClient;
  claims: ClaimManager;
  catalog: Catalog;
  /** The runner's one schema validator (compiled-schema cache). */
  validator: SchemaValidator;
  executors: Executors;
  /** The contract policies, in order (5-policy.ts); empty = every checked call runs once. */
  policies?: readonly Policy[];
  responder: Responder;
  config: Config;
  logger: Logger;
  replica: string;
  /** Requests created before this (epoch ms) were answered by an older runner if a `request:<rid>` response exists. */
  legacyCutoverMs?: number;
  /**
   * Whether the store authenticates writers: then the caller of a request is its verified writer
   * (breadcrumbs/caller.ts); absent = the store does not (the request's label is the caller).
   */
  storeAuth?: StoreAuthProbe;
  /** Aborted only when the service must stop NOW (not at drain start). */
  hardStop: AbortSignal;
  onStarted?(report: { rid: string; tool: string; agentId?: string }): void;
  onFinished?(report: ExecutionReport): void;
  /** A started call that ends without an answer from this run: withdrawn (request deleted), released (drain) or parked. */
  onEnded?(report: EndedReport): void;
  /**
   * The verified origin of a request the runner wrote itself (src/tool-context/origin.ts): it runs
   * as the origin's agent, and its depth, chain and deadline reach the executor. Absent = none trusted.
   */
  originOf?(context: Record<string, unknown> | undefined, rid: string): RequestOrigin | undefined;
}

/** How a started call ended when it ended without an answer. */
export interface EndedReport {
  rid: string;
  tool: string;
  agentId?: string;
  outcome: 'withdrawn' | 'released' | 'parked';
}

interface Executed {
  tool: string;
  kind: ExecutionReport['kind'];
  result: ExecutionResult;
  metadata: Record<string, unknown>;
  display?: string;
  /** The call the policies saw (absent when the request never got past routing and checking). */
  call?: Call;
  /** Runs of the tool (0 when a policy answered). */
  attempts?: number;
  /** Set when a policy parked the call: no answer now. */
  parked?: Extract<Gate, { kind: 'park' }>;
}

/** How often a completed run's answer write is attempted before the job gives up (its lease then expires). */
const ANSWER_TRIES = 8;

/** Creates the per-request pipeline used by the queue's jobs. */
export function createRequestHandler(options: RequestHandlerOptions) {
  const { client, claims, catalog, responder, validator, executors, config, logger } = options;
  const policies = options.policies ?? [];

  // Steps 4 to 6 (and the output check of 5): every ending is a result to answer with.
  const run = async (full: Pick<BreadcrumbFull, 'tags' | 'context'>, identity: RequestIdentity, signal: AbortSignal, watch: Stopwatch, origin?: RequestOrigin): Promise<Executed> => {
    const { rid, tool: toolName, agentId } = identity;
    const read = readRequest(full, identity);
    if (!read.ok) return { tool: toolName, kind: 'none', metadata: {}, result: read.result };
    const routed = await routeRequest(catalog, toolName, read.version);
    watch.lap('route');
    if (!routed.ok) return { tool: toolName, kind: 'none', metadata: {}, result: routed.result };
    const { route } = routed;
    const metadata = executorMetadata(executors, route);
    // The caller's demand for a fresh process is honoured by the code executor (host tools run their own transport).
    if (read.isolation && route.kind === 'code') metadata['isolation'] = read.isolation;
    const checked = checkInput(route, read.input, validator);
    watch.lap('validate');
    if (!checked.ok) return { tool: toolName, kind: route.kind, metadata, result: checked.result };
    const call = callOf({ identity, route, input: checked.input, idempotencyKey: read.idempotencyKey, warnings: route.warnings ?? [] });
    const gate = await admit(policies, call, signal);
    watch.lap('policy');
    if (gate.kind === 'park') return { tool: toolName, kind: route.kind, metadata, call, parked: gate, attempts: 0, result: errorResult(ErrorCode.ApprovalRequired, gate.reason) };
    if (gate.kind === 'answer') return { tool: toolName, kind: route.kind, metadata, call, attempts: 0, result: gate.result };
    const approvalId = call.metadata['approval_id'];
    const ctx = { rid, breadcrumbId: identity.breadcrumbId, signal, timings: watch, ...(agentId ? { agentId } : {}), ...(read.isolation ? { isolation: read.isolation } : {}), ...(typeof approvalId === 'string' ? { approvalId } : {}), ...(origin ? { origin } : {}) };
    const { result, attempts } = await executeWithRetries(executors, route, checked.input, ctx, retryPlan(call.contract));
    watch.mark(); // the executor counted its own stages (secrets, sandbox_wait, sandbox_run)
    const display = route.kind === 'host' && route.tool.transport.kind === 'rap' ? renderDisplay(route.tool.name, route.tool.transport.displayScript, checked.input) : undefined;
    const output = checkOutput(route, result, validator);
    watch.lap('validate');
    const reviewed = review(policies, call, output);
    watch.lap('policy');
    return { tool: toolName, kind: route.kind, metadata, call, attempts, result: reviewed, ...(display !== undefined ? { display } : {}) };
  };

  const handle = async (request: PendingRequest, signal: AbortSignal): Promise<RequestOutcome> => {
    const watch = createStopwatch(request.seenAt);
    const acquired = await claims.acquire({ breadcrumbId: request.breadcrumbId, rid: request.rid });
    watch.lap('claim');
    if (acquired.kind !== 'acquired') return acquired.kind;
    const claim = acquired.claim;
    const log = logger.child({ rid: request.rid, tool: request.tool, attempt: claim.attempt });
    const renewEvery = Math.max(250, Math.floor(config.claimTtlMs / 3));
    const renewal = setInterval(() => {
      claim.renew().catch((error: unknown) => log.warn('claim renewal failed', { error }));
    }, renewEvery);
    try {
      let full: Pick<BreadcrumbFull, 'tags' | 'context' | 'created_at' | 'created_by' | 'updated_by'>;
      // With auth on, the caller is the record's verified writer: only the /full record says who (an event's snapshot does not).
      const authenticated = (await options.storeAuth?.authenticates()) ?? false;
      try {
        full = (authenticated ? undefined : request.snapshot) ?? (await client.getBreadcrumbFull(request.breadcrumbId));
      } catch (error) {
        if (!isNotFound(error)) throw error;
        log.info('request deleted before it ran');
        await claims.cleanup(request.breadcrumbId);
        return 'answered';
      }
      // The record actually run decides the identity (it may differ from the event that queued it).
      const caller = callerOf(full, authenticated);
      const { agentId: _label, ...named } = requestIdentity({ id: request.breadcrumbId, tags: full.tags, context: full.context });
      // A request the runner wrote for a nested call, trigger or bootstrap run runs as its origin's agent.
      const origin = options.originOf?.(full.context, named.rid);
      const agentId = origin ? origin.agent : caller.agentId;
      const identity: RequestIdentity = {
        ...named,
        ...(agentId !== undefined ? { agentId } : {}),
        verified: caller.verified,
        ...(caller.problem !== undefined ? { callerProblem: caller.problem } : {}),
      };
      const { rid } = identity;
      if (full.created_at !== undefined && Date.parse(full.created_at) < (options.legacyCutoverMs ?? 0)) {
        const legacy = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolResponse, tag: TAG.request(rid), limit: 1 });
        if (legacy.length > 0) {
          log.info('request answered by an older runner; not run again');
          await claim.drop();
          return 'answered';
        }
      }
      watch.lap('route'); // reading the request (and the cutover check) is part of routing it
      const who = { rid, tool: identity.tool, ...(identity.agentId ? { agentId: identity.agentId } : {}) };
      options.onStarted?.(who);
      const startedAt = performance.now();
      watch.mark(); // total_ms and the stages from here on measure the same span
      let executed: Executed;
      try {
        executed = await run(full, identity, signal, watch, origin);
      } catch (error) {
        // Infrastructure trouble on the way (secrets API, catalog refresh): still an answer.
        const e = coerceError(error);
        log.warn('request failed before or around execution', { code: e.code, error: e.message });
        executed = {
          tool: identity.tool,
          kind: 'none',
          metadata: { replica: options.replica },
          result: { ok: false, error: failure(e.code, e.message), durationMs: performance.now() - startedAt, logs: [], logsTruncated: false },
        };
      }
      if (signal.aborted && signal.reason instanceof RequestWithdrawn) {
        log.info('request deleted while it ran; no answer');
        options.onEnded?.({ ...who, outcome: 'withdrawn' });
        await claim.drop();
        return 'withdrawn';
      }
      if (signal.aborted) {
        log.warn('job aborted by drain, releasing its claim');
        options.onEnded?.({ ...who, outcome: 'released' });
        await claim.release().catch((error: unknown) => log.warn('claim release failed', { error }));
        return 'released';
      }
      if (executed.parked) {
        // Waiting (for an approval, for another request's answer): no answer and no claim now;
        // intake wakes the request when a wake token is seen or at `until` (a restart finds it by scan).
        log.info('request parked', { reason: executed.parked.reason, until: new Date(executed.parked.until).toISOString() });
        options.onEnded?.({ ...who, outcome: 'parked' });
        await claim.release().catch((error: unknown) => log.warn('claim release failed', { error }));
        return { kind: 'parked', until: executed.parked.until, wakeOn: executed.parked.wakeOn };
      }
      const totalMs = performance.now() - startedAt;
      const extraTags = agentTagsOf(full.tags);
      const answer = {
        requestBreadcrumbId: request.breadcrumbId,
        rid,
        tool: executed.tool,
        result: executed.result,
        extraTags,
        metadata: {
          ...executed.metadata,
          ...executed.call?.metadata,
          ...(executed.call && executed.call.warnings.length > 0 ? { warnings: executed.call.warnings } : {}),
          ...(executed.attempts !== undefined && executed.attempts > 1 ? { attempts: executed.attempts } : {}),
          attempt: claim.attempt,
          // A subscription's run names its trigger; a nested call its parent (src/tool-context/origin.ts).
          ...(origin?.trigger_id !== undefined ? { trigger_id: origin.trigger_id, subscription: origin.subscription } : {}),
          ...(origin?.parent_rid !== undefined ? { parent_rid: origin.parent_rid, depth: origin.depth } : {}),
          total_ms: Math.round(totalMs * 1000) / 1000,
          timings: watch.forAnswer(),
        },
      };
      watch.mark();
      // A completed run always ends in an answer: keep trying through store trouble until the
      // service must stop (then the lease runs out and another attempt answers).
      for (let tries = 1; ; tries++) {
        try {
          await responder.respond(answer, options.hardStop);
          break;
        } catch (error) {
          if (options.hardStop.aborted || tries >= ANSWER_TRIES) throw error;
          log.warn('answer write failed, retrying', { tries, error });
          await sleep(Math.min(5_000, 200 * 2 ** tries), undefined, { signal: options.hardStop }).catch(() => undefined);
        }
      }
      void claim.drop();
      watch.lap('respond');
      if (executed.call) {
        const settled = { result: executed.result, ran: (executed.attempts ?? 0) > 0, attempts: executed.attempts ?? 0, durationMs: totalMs };
        await settle(policies, executed.call, settled, log);
      }
      const report: ExecutionReport = {
        rid,
        tool: executed.tool,
        kind: executed.kind,
        status: executed.result.ok ? 'success' : 'error',
        ...(executed.result.ok ? {} : { code: executed.result.error.code }),
        durationMs: totalMs,
        ...(identity.agentId ? { agentId: identity.agentId } : {}),
        ...(executed.display !== undefined ? { display: executed.display } : {}),
        timings: watch.all(),
      };
      options.onFinished?.(report);
      log.info('request answered', { status: report.status, code: report.code, durationMs: Math.round(totalMs) });
      return 'answered';
    } catch (error) {
      // Store trouble after claiming (no run is in progress here: run() answers for every ending):
      // give the claim back, so the intake's retry takes the next attempt at once instead of finding
      // its own live lease busy until the lease runs out and a scan takes it over (30 s and more).
      await claim.release().catch((releaseError: unknown) => log.warn('claim release failed', { error: releaseError }));
      throw error;
    } finally {
      clearInterval(renewal);
    }
  };

  return { handle };
}

