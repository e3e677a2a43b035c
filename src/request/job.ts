// The job: the life of one request, read top to bottom — claim -> read -> route -> check -> admit ->
// run (retries) -> check output -> review -> answer -> settle. Each step is a function of its own
// file of this folder (claims.ts, read.ts, route.ts, check.ts, policy.ts, execute.ts, respond.ts);
// intake (intake.ts) queues the job, the lease keeper (lease.ts) renews the claim while it runs.
// A create request (tool.create.request.v1) lives the same life with the create executor in place
// of route … review: claim -> read -> create (validate, test the examples, deploy) -> answer.
//
// Every path that owns a claim ends in exactly one answer, except a drain that aborts the job
// mid-run, a deleted request, and a policy that parks the call (waiting for an approval or for
// another request's answer): then the claim is released without an answer so another replica (or
// this one after a restart, or intake when the wait is over) runs the request.

import type { StoreAuthProbe, StoreClient } from '../breadcrumbs/index.js';
import { agentTagsOf, type RequestIdentity } from '../breadcrumbs/messages.js';
import type { Catalog } from '../catalog/catalog.js';
import { retryPlan } from '../contract/retry.js';
import { coerceError, ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { renderDisplay } from '../rap/display-script.js';
import { errorResult, failure, type ExecutionResult } from '../result.js';
import type { SchemaValidator } from '../screen/index.js';
import { checkInput, checkOutput } from './check.js';
import type { ClaimManager, HeldClaim } from './claims.js';
import type { Cutover } from './cutover.js';
import { createRequestRid, type PendingRequest } from './events.js';
import { executeWithRetries, type Executors } from './execute.js';
import { RequestWithdrawn, type RequestOutcome } from './intake.js';
import type { LeaseKeeper } from './lease.js';
import { admit, callOf, review, settle, type Call, type Gate, type Policy } from './policy.js';
import { answeredWithoutRun } from './policies/effects.js';
import { readRequest, readRequestRecord, type RequestRecord } from './read.js';
import type { CreateAnswer, Responder, ToolAnswer } from './respond.js';
import { routeMetadata, routeRequest } from './route.js';
import type { OriginCheck, RequestOrigin } from '../tool-context/origin.js';
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

/** How a started call ended when it ended without an answer. */
export interface EndedReport {
  rid: string;
  tool: string;
  agentId?: string;
  outcome: 'withdrawn' | 'released' | 'parked';
}

export interface RequestJobOptions {
  client: StoreClient;
  claims: ClaimManager;
  leases: LeaseKeeper;
  catalog: Catalog;
  /** The runner's one schema validator (compiled-schema cache). */
  validator: SchemaValidator;
  executors: Executors;
  /** The contract policies, in order (policy.ts); empty = every checked call runs once. */
  policies?: readonly Policy[];
  responder: Responder;
  logger: Logger;
  replica: string;
  /** The answer-tag cutover (cutover.ts); absent = no request predates it. */
  cutover?: Cutover;
  /**
   * Whether the store authenticates writers: then the caller of a request is its verified writer
   * (breadcrumbs/caller.ts); absent = the store does not (the request's label is the caller).
   */
  storeAuth?: StoreAuthProbe;
  /** Aborted only when the service must stop NOW (not at drain start): the answer write gives up then. */
  hardStop: AbortSignal;
  onStarted?(report: { rid: string; tool: string; agentId?: string }): void;
  onFinished?(report: ExecutionReport): void;
  /** A started call that ends without an answer from this run: withdrawn (request deleted), released (drain) or parked. */
  onEnded?(report: EndedReport): void;
  /**
   * The origin of a request the runner wrote itself (src/tool-context/origin.ts): sealed, it runs as
   * the origin's agent, and its depth, chain and deadline reach the executor; refused, it is answered
   * permission.denied. Absent = none trusted.
   */
  originOf?(record: RequestRecord, rid: string, authenticated: boolean): OriginCheck;
}

export interface RequestJob {
  /** Runs one request's life; intake calls it for every job it queued. */
  handle(request: PendingRequest, signal: AbortSignal): Promise<RequestOutcome>;
}

/** How a tool call ended: the result to answer with, and what the answer and the reports say about it. */
interface Called {
  kind: ExecutionReport['kind'];
  /** The route's answer metadata (routeMetadata). */
  metadata: Record<string, unknown>;
  result: ExecutionResult;
  /** The call the policies saw (absent when the request never got past routing and checking). */
  call?: Call;
  /** Runs of the tool (0 when it never ran: a policy answered, or the request ended before). */
  attempts: number;
  display?: string;
  /** Set when a policy parked the call: no answer now. */
  parked?: Extract<Gate, { kind: 'park' }>;
}

/**
 * Who a request runs as: a request the runner wrote for a nested call, trigger or bootstrap run runs
 * as its origin's agent; one whose origin is not the runner's seal of it is refused (readRequest answers it).
 */
function sealedIdentity(
  options: Pick<RequestJobOptions, 'originOf'>,
  kind: string | undefined,
  record: RequestRecord,
  read: RequestIdentity,
): { identity: RequestIdentity; origin?: RequestOrigin } {
  const sealed = kind === 'create' ? undefined : options.originOf?.(record, read.rid, read.verified === true);
  if (sealed?.kind === 'refused') return { identity: { ...read, callerProblem: sealed.problem } };
  if (sealed?.kind !== 'sealed') return { identity: read };
  return { identity: withAgent(read, sealed.origin.agent), origin: sealed.origin };
}

/** The identity with its agent replaced (a runner-written request runs as its origin's agent). */
function withAgent(identity: RequestIdentity, agentId: string | undefined): RequestIdentity {
  const { agentId: _replaced, ...rest } = identity;
  return agentId !== undefined ? { ...rest, agentId } : rest;
}

/** What a run came to: the answer to write (unless parked) and, for a tool request, how the call went. */
interface Ran {
  answer: ToolAnswer | CreateAnswer;
  tool?: Called & { durationMs: number };
  parked?: Called['parked'];
}

/** Creates the job that runs one request's life. */
export function createRequestJob(options: RequestJobOptions): RequestJob {
  const { client, claims, leases, catalog, responder, validator, executors, logger, replica } = options;
  const policies = options.policies ?? [];

  const handle = async (request: PendingRequest, signal: AbortSignal): Promise<RequestOutcome> => {
    const watch = createStopwatch(request.seenAt);
    // claim
    const acquired = await claims.acquire({ breadcrumbId: request.breadcrumbId, rid: request.rid });
    watch.lap('claim');
    if (acquired.kind === 'busy') return { kind: 'busy', until: acquired.expiresAt };
    if (acquired.kind !== 'acquired') return acquired.kind;
    const claim = acquired.claim;
    const log = logger.child({ rid: request.rid, tool: request.tool, attempt: claim.attempt });
    const letGo = leases.keep(claim, log);
    try {
      // read
      const read = await readRequestRecord(client, request, options.storeAuth);
      if (read === 'gone') {
        log.info('request deleted before it ran');
        await claims.cleanup(request.breadcrumbId);
        return 'answered';
      }
      const { record } = read;
      const { identity, origin } = sealedIdentity(options, request.kind, record, read.identity);
      if (request.kind !== 'create' && (await options.cutover?.answeredByOlderRunner(record, identity.rid))) {
        log.info('request answered by an older runner; not run again');
        await claim.drop();
        return 'answered';
      }
      watch.lap('route'); // reading the request (and the cutover check) is part of routing it
      const who =
        request.kind === 'create'
          ? { rid: createRequestRid(record).rid, tool: request.tool }
          : { rid: identity.rid, tool: identity.tool, ...(identity.agentId ? { agentId: identity.agentId } : {}) };
      // The reports (metrics, console, live feed) are of tool calls; a create request is logged.
      const reports = request.kind !== 'create';
      if (reports) options.onStarted?.(who);
      // route -> check -> admit -> run (retries) -> check output -> review; or create
      watch.mark(); // total_ms and the stages from here on measure the same span
      const ran =
        request.kind === 'create'
          ? await runCreate(record, signal, log)
          : await runTool(record, identity, claim, signal, watch, log, origin);
      // endings without an answer
      if (signal.aborted && signal.reason instanceof RequestWithdrawn) {
        log.info('request deleted while it ran; no answer');
        if (reports) options.onEnded?.({ ...who, outcome: 'withdrawn' });
        await claim.drop();
        return 'withdrawn';
      }
      if (signal.aborted) {
        log.warn('job aborted by drain, releasing its claim');
        if (reports) options.onEnded?.({ ...who, outcome: 'released' });
        await claim.release().catch((error: unknown) => log.warn('claim release failed', { error }));
        return 'released';
      }
      if (ran.parked) {
        // Waiting (for an approval, for another request's answer): no answer and no claim now;
        // intake wakes the request when a wake token is seen or at `until` (a restart finds it by scan).
        log.info('request parked', { reason: ran.parked.reason, until: new Date(ran.parked.until).toISOString() });
        if (reports) options.onEnded?.({ ...who, outcome: 'parked' });
        await claim.release().catch((error: unknown) => log.warn('claim release failed', { error }));
        return { kind: 'parked', until: ran.parked.until, wakeOn: ran.parked.wakeOn };
      }
      // answer (the responder retries through store trouble until the service must stop)
      watch.mark();
      await responder.respond(ran.answer, options.hardStop);
      // nobody waits for the lease's finish: it may share the next request's commit
      void claim.drop({ ride: true });
      watch.lap('respond');
      // settle
      if (ran.tool) {
        const { result, call, attempts, durationMs } = ran.tool;
        if (call) await settle(policies, call, { result, ran: attempts > 0, attempts, durationMs }, log);
        // stores in the order of the fields (the live feed shows them so), not a chain of spreads
        const report = { ...who, kind: ran.tool.kind, status: result.ok ? 'success' : 'error' } as ExecutionReport;
        if (!result.ok) report.code = result.error.code;
        report.durationMs = durationMs;
        if (ran.tool.display !== undefined) report.display = ran.tool.display;
        report.timings = watch.all();
        options.onFinished?.(report);
        log.info('request answered', { status: report.status, code: report.code, durationMs: Math.round(durationMs) });
      } else if (ran.answer.kind === 'create') {
        const { status, tool, errors } = ran.answer.context;
        log.info('tool creation answered', { status, tool: tool?.name, errors: errors.length });
      }
      return 'answered';
    } catch (error) {
      // Store trouble after claiming (no run is in progress here: every ending of a run is an
      // answer): give the claim back, so the intake's retry takes the next attempt at once instead
      // of finding its own live lease busy until the lease runs out and a scan takes it over.
      await claim.release().catch((releaseError: unknown) => log.warn('claim release failed', { error: releaseError }));
      throw error;
    } finally {
      letGo();
    }
  };

  // A tool request: route -> check -> admit -> run (retries) -> check output -> review. Every
  // ending is a result to answer with (or a park).
  const runTool = async (
    record: RequestRecord,
    identity: RequestIdentity,
    claim: HeldClaim,
    signal: AbortSignal,
    watch: Stopwatch,
    log: Logger,
    origin?: RequestOrigin,
  ): Promise<Ran> => {
    const startedAt = performance.now();
    let called: Called;
    try {
      called = await callTool(record, identity, claim.attempt, signal, watch, origin);
    } catch (error) {
      // Infrastructure trouble on the way (secrets API, catalog refresh): still an answer.
      const e = coerceError(error);
      log.warn('request failed before or around execution', { code: e.code, error: e.message });
      const result: ExecutionResult = {
        ok: false,
        error: failure(e.code, e.message),
        durationMs: performance.now() - startedAt,
        logs: [],
        logsTruncated: false,
      };
      called = {
        kind: 'none',
        metadata: { replica },
        result: answeredWithoutRun({ claimAttempt: claim.attempt }, result),
        attempts: 0,
      };
    }
    const durationMs = performance.now() - startedAt;
    const { call, attempts } = called;
    // One clone, then stores (what a chain of spreads gave, key order included: a later key overrides
    // in place); each spread after the first took V8's slow define path per key on every call.
    const metadata: Record<string, unknown> = { ...called.metadata };
    if (call) {
      for (const key of Object.keys(call.metadata)) metadata[key] = call.metadata[key];
      if (call.warnings.length > 0) metadata['warnings'] = call.warnings;
    }
    if (attempts > 1) metadata['attempts'] = attempts;
    metadata['attempt'] = claim.attempt;
    // A subscription's run names its trigger; a nested call its parent (src/tool-context/origin.ts).
    if (origin?.trigger_id !== undefined) {
      metadata['trigger_id'] = origin.trigger_id;
      metadata['subscription'] = origin.subscription;
    }
    if (origin?.parent_rid !== undefined) {
      metadata['parent_rid'] = origin.parent_rid;
      metadata['depth'] = origin.depth;
    }
    metadata['total_ms'] = Math.round(durationMs * 1000) / 1000;
    metadata['timings'] = watch.forAnswer();
    const answer: ToolAnswer = {
      requestBreadcrumbId: identity.breadcrumbId,
      rid: identity.rid,
      tool: identity.tool,
      result: called.result,
      extraTags: agentTagsOf(record.tags),
      metadata,
    };
    return { answer, tool: { ...called, durationMs }, ...(called.parked ? { parked: called.parked } : {}) };
  };

  const callTool = async (
    record: RequestRecord,
    identity: RequestIdentity,
    claimAttempt: number,
    signal: AbortSignal,
    watch: Stopwatch,
    origin?: RequestOrigin,
  ): Promise<Called> => {
    const { rid, tool: toolName, agentId } = identity;
    const ended = (kind: Called['kind'], metadata: Record<string, unknown>, result: ExecutionResult): Called => ({
      kind,
      metadata,
      result,
      attempts: 0,
    });
    const read = readRequest(record, identity);
    if (!read.ok) return ended('none', {}, read.result);
    // route
    const routed = await routeRequest(catalog, toolName, read.version, origin);
    watch.lap('route');
    if (!routed.ok) return ended('none', {}, routed.result);
    const { route } = routed;
    const metadata = routeMetadata(route, replica);
    // The caller's demand for a fresh process is honoured by the code executor (host tools run their own transport).
    if (read.isolation && route.kind === 'code') metadata['isolation'] = read.isolation;
    // check
    const checked = checkInput(route, read.input, validator);
    watch.lap('validate');
    if (!checked.ok) return ended(route.kind, metadata, checked.result);
    // admit
    const call = callOf({
      identity,
      route,
      input: checked.input,
      idempotencyKey: read.idempotencyKey,
      warnings: route.warnings ?? [],
      claimAttempt,
    });
    const gate = await admit(policies, call, signal);
    watch.lap('policy');
    if (gate.kind === 'park')
      return {
        ...ended(route.kind, metadata, errorResult(ErrorCode.ApprovalRequired, gate.reason)),
        call,
        parked: gate,
      };
    if (gate.kind === 'answer') return { ...ended(route.kind, metadata, answeredWithoutRun(call, gate.result)), call };
    // run (retries)
    const approvalId = call.metadata['approval_id'];
    const ctx = {
      rid,
      breadcrumbId: identity.breadcrumbId,
      signal,
      timings: watch,
      ...(agentId ? { agentId } : {}),
      ...(read.isolation ? { isolation: read.isolation } : {}),
      ...(typeof approvalId === 'string' ? { approvalId } : {}),
      ...(origin ? { origin } : {}),
    };
    const { result, attempts } = await executeWithRetries(
      executors,
      route,
      checked.input,
      ctx,
      retryPlan(call.contract),
    );
    watch.mark(); // the executor counted its own stages (secrets, sandbox_wait, sandbox_run)
    const display =
      route.kind === 'host' && route.tool.transport.kind === 'rap'
        ? renderDisplay(route.tool.name, route.tool.transport.displayScript, checked.input)
        : undefined;
    // check output
    const output = checkOutput(route, result, validator);
    watch.lap('validate');
    // review
    const reviewed = review(policies, call, output);
    watch.lap('policy');
    return {
      kind: route.kind,
      metadata,
      call,
      attempts,
      result: reviewed,
      ...(display !== undefined ? { display } : {}),
    };
  };

  // A create request: the create executor validates the spec, tests its examples and deploys the tool.
  const runCreate = async (record: RequestRecord, signal: AbortSignal, log: Logger): Promise<Ran> => {
    const { rid } = createRequestRid(record);
    let ran: { rid: string; answer: CreateAnswer['context'] };
    try {
      if (!executors.create) throw new Error('tool creation is not available on this request path');
      ran = await executors.create.run(record, signal);
    } catch (error) {
      const e = coerceError(error);
      log.error('tool creation failed', { error: e.message });
      ran = {
        rid,
        answer: {
          request_id: rid,
          status: 'rejected',
          errors: [{ code: e.code, path: '', message: e.message }],
          warnings: [],
          examples: [],
        },
      };
    }
    // Titled with the tool's name (the spec's when nothing was created), else the request id.
    const spec = record.context['tool_spec'] as { name?: unknown } | undefined;
    const specName = typeof spec?.name === 'string' && spec.name !== '' ? spec.name : undefined;
    const title = `Tool ${ran.answer.status}: ${ran.answer.tool?.name ?? specName ?? ran.rid}`;
    const extraTags = record.tags.filter((tag) => tag.startsWith('agent:'));
    return {
      answer: { kind: 'create', requestBreadcrumbId: record.id, rid: ran.rid, context: ran.answer, title, extraTags },
    };
  };

  return { handle };
}
