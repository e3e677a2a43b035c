// `context.tools.call(name, input, {version?, idempotencyKey?})` for a tool: the HOST writes a
// tool.request.v1 for the named tool and waits for the runner's verified answer through the one
// request client (src/breadcrumbs/request-client.ts), so the nested call takes the one request path
// — claims, contracts, approvals, rate limits, audit and timings apply as to any request.
//
// The nested request is sealed with its origin (origin.ts): the calling tool, the original agent
// (it runs as that agent), the parent's rid, the depth, the chain of calling tools, the parent's
// deadline and the runner's store identity; the seal covers the version and idempotency key too. Refused before anything is written: a tool already in the chain (a cycle), a depth over
// `nestedCallMaxDepth`, a deadline already passed. The wait ends at the parent's deadline; when the
// parent's run ends for any reason (answer, timeout, crash, drain, withdrawal) every nested request
// still pending is withdrawn (deleted), so the runner running it aborts it without an answer.

import { randomUUID } from 'node:crypto';
import type { RequestClient, WrittenRequest } from '../breadcrumbs/request-client.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { SandboxToolCaller } from '../sandbox/index.js';
import { sealOrigin, type RequestOrigin } from './origin.js';

/** What every nested call of the service shares. */
export interface ToolCallsOptions {
  requests: RequestClient;
  keys: Pick<RequestKeys, 'stateMac'>;
  maxDepth: number;
  logger: Logger;
}

/** The run that makes the calls. */
export interface CallingRun {
  tool: string;
  rid: string;
  breadcrumbId: string;
  agentId?: string;
  /** The run's own origin, when the runner wrote its request (its depth and chain continue). */
  origin?: RequestOrigin;
  /** Epoch ms the run's time is up (its timeout, or an earlier deadline of its own parent). */
  deadlineAt: number;
  signal: AbortSignal;
}

/** A run's `context.tools`; `close()` (when the run ends) withdraws the calls still pending. */
export interface RunToolCaller extends SandboxToolCaller {
  close(): Promise<void>;
}

/** Why a nested call cannot be made from `run`, or undefined when it can. */
export function nestedCallRefusal(
  run: Pick<CallingRun, 'tool' | 'origin'>,
  target: string,
  maxDepth: number,
): RunnerError | undefined {
  const chain = [...(run.origin?.chain ?? []), run.tool];
  if (chain.includes(target)) {
    return new RunnerError(
      ErrorCode.InputInvalid,
      `context.tools.call("${target}") refused: a cycle of nested calls (${[...chain, target].join(' -> ')})`,
    );
  }
  const depth = (run.origin?.depth ?? 0) + 1;
  if (depth > maxDepth) {
    return new RunnerError(
      ErrorCode.RateExceeded,
      `context.tools.call("${target}") refused: depth ${depth} is over the limit of ${maxDepth} nested calls (nestedCallMaxDepth; chain ${chain.join(' -> ')})`,
    );
  }
  return undefined;
}

/** Creates the caller of one run. */
export function createRunToolCaller(options: ToolCallsOptions, run: CallingRun): RunToolCaller {
  const { requests, keys, maxDepth } = options;
  const ended = new AbortController();
  const pending = new Set<WrittenRequest>();
  const stop = AbortSignal.any([ended.signal, run.signal]);
  const log = options.logger.child({ rid: run.rid, tool: run.tool });

  const withdraw = async (request: WrittenRequest): Promise<void> => {
    pending.delete(request);
    await requests
      .withdraw(request)
      .catch((error: unknown) => log.warn('nested request withdrawal failed', { child: request.rid, error }));
  };

  return {
    async call(name, input, callOptions) {
      const refusal = nestedCallRefusal(run, name, maxDepth);
      if (refusal) throw refusal;
      const remainingMs = run.deadlineAt - Date.now();
      if (remainingMs <= 0)
        throw new RunnerError(
          ErrorCode.Timeout,
          `context.tools.call("${name}"): the calling run's deadline has passed`,
        );
      if (stop.aborted)
        throw new RunnerError(ErrorCode.Conflict, `context.tools.call("${name}") called after the calling run ended`);
      const rid = randomUUID();
      const writer = await requests.writer();
      const origin: RequestOrigin = {
        kind: 'call',
        ...(run.agentId !== undefined ? { agent: run.agentId } : {}),
        depth: (run.origin?.depth ?? 0) + 1,
        chain: [...(run.origin?.chain ?? []), run.tool],
        parent_tool: run.tool,
        parent_rid: run.rid,
        parent_breadcrumb_id: run.breadcrumbId,
        deadline_at: run.deadlineAt,
        ...(run.origin?.seed !== undefined ? { seed: run.origin.seed } : {}),
        ...(writer !== undefined ? { writer } : {}),
      };
      const asked = {
        ...(callOptions.version !== undefined ? { version: callOptions.version } : {}),
        ...(callOptions.idempotencyKey !== undefined ? { idempotency_key: callOptions.idempotencyKey } : {}),
      };
      const written = await requests.write(
        {
          rid,
          tool: name,
          input,
          requestedBy: run.agentId ?? `tool:${run.tool}`,
          ...(run.agentId !== undefined ? { tags: [`agent:${run.agentId}`] } : {}),
          context: { origin: sealOrigin(keys, { rid, tool: name, input, ...asked }, origin), ...asked },
        },
        { signal: stop },
      );
      pending.add(written);
      const outcome = await requests.wait(written, { timeoutMs: remainingMs, signal: stop });
      if (outcome.kind !== 'answered') {
        await withdraw(written);
        if (outcome.kind === 'timeout')
          throw new RunnerError(
            ErrorCode.Timeout,
            `context.tools.call("${name}"): no answer before the calling run's deadline (request ${rid} withdrawn)`,
          );
        throw new RunnerError(
          ErrorCode.Conflict,
          `context.tools.call("${name}"): the calling run ended first (request ${rid} withdrawn)`,
        );
      }
      pending.delete(written);
      const answer = outcome.answer;
      if (answer.status === 'success') return answer.output ?? null;
      const code = (answer.error?.code ?? ErrorCode.ToolError) as ErrorCode;
      throw new RunnerError(
        code,
        `tool "${name}" answered ${code}: ${answer.error?.message ?? 'no message'} (request ${rid})`,
        { retryable: answer.error?.retryable ?? false },
      );
    },
    async close() {
      ended.abort();
      await Promise.all([...pending].map(withdraw));
    },
  };
}
