// Step "run" of a request's life: run the checked input. Code tools and host tools are two executors
// behind one interface; everything around them (reading, routing, checking, answering, claims,
// reports) is the same path (job.ts). A create request has an executor of its own (validate, test
// the examples, deploy: src/authoring/create-flow.ts implements CreateExecutor), on the same path.
//
// The code executor resolves the tool's secrets, then runs it in the Deno sandbox (with
// `context.api` when the tool was granted it). The host executor hands the call to the host-tool
// runner (src/host-tools: confirmation gate, secrets through the same resolver, transport, redaction;
// its audit facts come back in the result for the audit policy's one line per call); the input it
// receives was already normalised and checked by check.ts. Both executors list the call's effects
// in the result (`effects`), recorded as they happened, for the effects and audit policies.

import { setTimeout as sleep } from 'node:timers/promises';
import type { StoreClient } from '../breadcrumbs/index.js';
import type { ToolCreateResponseContext } from '../breadcrumbs/messages.js';
import type { Route } from '../catalog/catalog.js';
import type { Config } from '../config/index.js';
import { retryDelayMs, type RetryPlan } from '../contract/retry.js';
import { ErrorCode } from '../errors.js';
import type { HostTool } from '../host-tools/index.js';
import { errorResult, type ExecutionResult } from '../result.js';
import { sandboxToolOf, type Sandbox } from '../sandbox/index.js';
import { missingSecretsMessage, type SecretResolver } from '../tool-context/secrets.js';
import { createToolApi } from '../tool-context/tool-api.js';
import { createChainLedger } from '../tool-context/chains.js';
import type { RequestOrigin } from '../tool-context/origin.js';
import { createRunToolCaller, type ToolCallsOptions } from '../tool-context/tool-calls.js';
import { createLiveProgress, createProgressPublisher, type LiveProgressReport } from './progress.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import type { Logger } from '../logger.js';
import type { Stopwatch } from './timings.js';

/** Who the run is for. */
export interface RunContext {
  rid: string;
  breadcrumbId: string;
  agentId?: string;
  /** `process`: the caller demands a fresh, never-reused sandbox process (code tools). */
  isolation?: 'process';
  /** The approval the call was granted (approval policy), when it needed one. */
  approvalId?: string;
  signal: AbortSignal;
  /** The request's stopwatch: executors add `secrets`, `sandbox_wait` and `sandbox_run` to it. */
  timings?: Stopwatch;
  /** The verified origin of a request the runner wrote (nested call, subscription trigger, bootstrap run). */
  origin?: RequestOrigin;
}

/** Runs one kind of tool; never throws for tool behaviour (infrastructure trouble may throw). */
export interface Executor<R extends Route = Route> {
  readonly kind: R['kind'];
  run(route: R, input: unknown, ctx: RunContext): Promise<ExecutionResult>;
}

/** A create request as the job read it (`created_by` and `version` from `/full`). */
export interface CreateRequestRecord {
  id: string;
  tags: string[];
  context: Record<string, unknown>;
  created_by?: string | null | undefined;
  /** Store version; a request changed after it was written (version > 1) is refused. */
  version?: number | undefined;
}

/** Runs one create request (validate, test the examples, deploy); its answer is the job's to write. */
export interface CreateExecutor {
  run(record: CreateRequestRecord, signal: AbortSignal): Promise<{ rid: string; answer: ToolCreateResponseContext }>;
}

/** The executors, by request kind (code and host tools by route kind; `create` for create requests). */
export interface Executors {
  code: Executor<Extract<Route, { kind: 'code' }>>;
  host: Executor<Extract<Route, { kind: 'host' }>>;
  /** Absent: create requests are answered `rejected` (no tool creation on this request path). */
  create?: CreateExecutor;
}

/** Runs `route` with the executor of its kind. */
export function execute(executors: Executors, route: Route, input: unknown, ctx: RunContext): Promise<ExecutionResult> {
  return route.kind === 'code' ? executors.code.run(route, input, ctx) : executors.host.run(route, input, ctx);
}

/**
 * Runs `route` as often as its retry plan allows: again only after a failure whose code the plan
 * names, after the plan's backoff, and never once `ctx.signal` aborted.
 */
export async function executeWithRetries(
  executors: Executors,
  route: Route,
  input: unknown,
  ctx: RunContext,
  plan: RetryPlan,
): Promise<{ result: ExecutionResult; attempts: number }> {
  for (let attempt = 1; ; attempt++) {
    const result = await execute(executors, route, input, ctx);
    if (result.ok || attempt >= plan.maxAttempts || !plan.on.has(result.error.code) || ctx.signal.aborted)
      return { result, attempts: attempt };
    const delay = retryDelayMs(plan, attempt + 1);
    try {
      await sleep(delay, undefined, { signal: ctx.signal });
    } catch {
      return { result, attempts: attempt };
    }
  }
}

/** The executor of tool.code.v1 tools: secrets, then the Deno sandbox. */
export function createCodeExecutor(options: {
  client: StoreClient;
  sandbox: Sandbox;
  secrets: SecretResolver;
  config: Config;
  /** With keys (and a logger), context.progress reports are published as tool.progress.v1 (progress.ts). */
  keys?: Pick<RequestKeys, 'stateMac'>;
  logger?: Logger;
  /** Each call's reports for the live feed (secrets redacted, rate- and size-limited: progress.ts). */
  onLiveProgress?(report: LiveProgressReport): void;
  /** `context.tools.call` for tools with a `permissions.tools` grant (absent: their calls fail as dependency.unavailable). */
  toolCalls?: ToolCallsOptions;
}): Executors['code'] {
  const { client, sandbox, secrets, config } = options;
  const chains = createChainLedger(config.subscriptionChainMaxRecords);
  return {
    kind: 'code',
    async run(route, input, ctx) {
      const tool = route.tool;
      const secretsFrom = performance.now();
      const resolved = await secrets.resolve(tool.requiredSecrets, {
        tool: tool.name,
        rid: ctx.rid,
        definitionId: route.breadcrumbId,
        operator: route.owner === 'operator',
      });
      ctx.timings?.add('secrets', performance.now() - secretsFrom);
      if (resolved.missing.length > 0) {
        return errorResult(ErrorCode.SecretMissing, missingSecretsMessage(tool.name, resolved), {
          missing: resolved.missing,
          ...(resolved.unshared.length > 0 ? { unshared: resolved.unshared } : {}),
        });
      }
      const progress =
        options.keys && options.logger
          ? createProgressPublisher({
              client,
              keys: options.keys,
              workspace: config.workspace,
              rid: ctx.rid,
              requestBreadcrumbId: ctx.breadcrumbId,
              tool: tool.name,
              intervalMs: config.progressIntervalMs,
              logger: options.logger,
            })
          : undefined;
      const deadlineAt = Math.min(Date.now() + tool.timeoutMs, ctx.origin?.deadline_at ?? Infinity);
      if (deadlineAt <= Date.now()) {
        return errorResult(
          ErrorCode.Timeout,
          `the deadline of the calling run (${ctx.origin?.parent_tool ?? '?'}, request ${ctx.origin?.parent_rid ?? '?'}) passed before tool "${tool.name}" started`,
        );
      }
      const tools =
        tool.tools !== undefined && options.toolCalls
          ? createRunToolCaller(options.toolCalls, {
              tool: tool.name,
              rid: ctx.rid,
              breadcrumbId: ctx.breadcrumbId,
              deadlineAt,
              signal: ctx.signal,
              ...(ctx.agentId ? { agentId: ctx.agentId } : {}),
              ...(ctx.origin ? { origin: ctx.origin } : {}),
            })
          : undefined;
      const depth = ctx.origin?.depth ?? 0;
      const live = options.onLiveProgress
        ? createLiveProgress({ rid: ctx.rid, tool: tool.name, emit: options.onLiveProgress })
        : undefined;
      const onProgress =
        progress || live
          ? (value: unknown): void => {
              progress?.push(value);
              live?.push(value);
            }
          : undefined;
      try {
        return await sandbox.run({
          tool: sandboxToolOf(tool),
          input,
          secrets: resolved.values,
          request: {
            id: ctx.rid,
            workspace: config.workspace,
            ...(ctx.agentId ? { agentId: ctx.agentId } : {}),
            ...(ctx.origin?.trigger_event !== undefined ? { trigger_event: ctx.origin.trigger_event } : {}),
          },
          ...(ctx.isolation ? { isolation: ctx.isolation } : {}),
          ...(tool.api
            ? {
                api: createToolApi({
                  client,
                  tool: tool.name,
                  rid: ctx.rid,
                  config,
                  schemas: tool.apiSchemas,
                  ...(depth > 0 ? { depth } : {}),
                  ...(ctx.origin?.seed !== undefined ? { chain: { seed: ctx.origin.seed, ledger: chains } } : {}),
                  // The caller's quota pays for what the run creates; a run without one (a trigger), its owner's.
                  chargeTo: ctx.agentId ?? (route.owner.startsWith('agent:') ? route.owner.slice(6) : undefined),
                }),
              }
            : {}),
          ...(tools ? { tools } : {}),
          ...(onProgress ? { onProgress } : {}),
          signal: ctx.signal,
          onTimings: ({ waitMs, runMs }) => {
            ctx.timings?.add('sandbox_wait', waitMs);
            ctx.timings?.add('sandbox_run', runMs);
          },
        });
      } finally {
        // the last reports are in the store (and on the live feed) before the answer is written
        live?.close();
        await tools?.close();
        await progress?.close();
      }
    },
  };
}

/** Runs one checked host-tool call (the service wires src/host-tools's executeHostTool with `inputChecked`). */
export type HostRun = (tool: HostTool, input: Record<string, unknown>, ctx: RunContext) => Promise<ExecutionResult>;

/** The executor of host tools (tools.json manifests, RAP toolsets); `run` is undefined when none are configured. */
export function createHostExecutor(options: { run?: HostRun }): Executors['host'] {
  return {
    kind: 'host',
    async run(route, input, ctx) {
      if (!options.run) return errorResult(ErrorCode.ToolNotFound, `host tool "${route.tool.name}" has no executor`);
      // The whole call counts as sandbox_run, but for the secret resolution the service times into `secrets`.
      const secretsBefore = ctx.timings?.get('secrets') ?? 0;
      const from = performance.now();
      try {
        return await options.run(route.tool, input as Record<string, unknown>, ctx);
      } finally {
        const secretsMs = (ctx.timings?.get('secrets') ?? 0) - secretsBefore;
        ctx.timings?.add('sandbox_run', performance.now() - from - secretsMs);
      }
    },
  };
}
