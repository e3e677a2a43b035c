// A step of a request's life, between the input check (check.ts) and the run (execute.ts): the
// tool's contract decides whether, when and how often the call runs.
//
// A policy is a small object with up to three hooks, run in the order of the list the service
// builds (src/service/build.ts):
// - `admit` (before the run): `run` lets the call go on; `answer` ends it with a result and no run
//   (a replayed idempotent result, rate.exceeded, approval.required, conflict); `park` ends the job
//   without an answer and without a claim — intake wakes the request again when one of its wake
//   tokens is seen (an approval's response, another request's answer) or at `until`. The first
//   gate that is not `run` ends the chain.
// - `review` (after the run and the output check): may replace the result (the effect-aware timeout
//   taxonomy turns a `timeout` of a side-effecting tool into timeout.unknown-commit, ...).
// - `settle` (after the answer is stored): record what happened (audit evidence, idempotency
//   bookkeeping). Its failures are logged; the answer is already out.
//
// Policies see the same `Call` for code and host tools alike; the executor is the only difference.

import type { RequestIdentity } from '../breadcrumbs/messages.js';
import type { Route } from '../catalog/catalog.js';
import type { ToolContract } from '../contract/contract.js';
import { inputHash } from '../contract/canonical.js';
import type { Logger } from '../logger.js';
import type { ExecutionResult } from '../result.js';

/** One call as the policies see it: who calls what, with which checked input, under which contract. */
export interface Call {
  identity: RequestIdentity;
  route: Route;
  /** The version that runs (a code tool's semantic version, a host tool's manifest digest prefix). */
  version: string;
  contract: ToolContract;
  /** The checked input the executor receives. */
  input: unknown;
  /** `sha256:<hex>` of the canonical JSON of `input` (binds approvals and idempotency keys to the arguments); computed on first read. */
  readonly inputHash: string;
  /** The request's `context.idempotency_key`, when it has one. */
  idempotencyKey?: string;
  /** Answer metadata the policies add (e.g. `approval_id`, `replayed_from`); merged into the response. */
  metadata: Record<string, unknown>;
  /** Human-readable warnings for `metadata.warnings` (e.g. a deprecated version). */
  warnings: string[];
  /** The claim's attempt at the request: above 1, an earlier attempt (on a replica that died or stalled) may have run it. */
  claimAttempt?: number;
}

/** What an `admit` hook decides. */
export type Gate =
  | { kind: 'run' }
  | { kind: 'answer'; result: ExecutionResult }
  | {
      kind: 'park';
      /** Why, for logs and `tools-runner` listings. */
      reason: string;
      /** Epoch ms when the request is looked at again even if no wake token was seen. */
      until: number;
      /** Tokens (answer tags, `approval:<id>` tags) whose sighting wakes the request. */
      wakeOn: readonly string[];
    };

/** How the call ended, as `settle` hooks learn it. */
export interface Settled {
  result: ExecutionResult;
  /** Whether the tool ran (false: a policy answered, e.g. a replay or a refusal). */
  ran: boolean;
  /** Runs of the tool (retries included). */
  attempts: number;
  /** From the start of the policy step to the answer, ms. */
  durationMs: number;
}

/** One policy of the chain. */
export interface Policy {
  readonly name: string;
  admit?(call: Call, signal: AbortSignal): Gate | Promise<Gate>;
  review?(call: Call, result: ExecutionResult): ExecutionResult;
  settle?(call: Call, settled: Settled): void | Promise<void>;
}

/** The Call of a routed, checked request. */
export function callOf(options: {
  identity: RequestIdentity;
  route: Route;
  input: unknown;
  idempotencyKey?: string | undefined;
  warnings?: readonly string[];
  claimAttempt?: number;
}): Call {
  const { route } = options;
  let hash: string | undefined;
  return {
    identity: options.identity,
    route,
    version: route.version,
    contract: route.tool.contract ?? {},
    input: options.input,
    // computed on first use: only approvals, idempotency keys and audit lines need it
    get inputHash() {
      return (hash ??= inputHash(options.input));
    },
    ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
    metadata: {},
    warnings: [...(options.warnings ?? [])],
    claimAttempt: options.claimAttempt ?? 1,
  };
}

/** Runs the `admit` hooks in order; the first gate that is not `run` wins. */
export async function admit(policies: readonly Policy[], call: Call, signal: AbortSignal): Promise<Gate> {
  for (const policy of policies) {
    if (!policy.admit) continue;
    const gate = await policy.admit(call, signal);
    if (gate.kind !== 'run') return gate;
  }
  return { kind: 'run' };
}

/** Runs the `review` hooks in order over the run's result. */
export function review(policies: readonly Policy[], call: Call, result: ExecutionResult): ExecutionResult {
  let current = result;
  for (const policy of policies) if (policy.review) current = policy.review(call, current);
  return current;
}

/** Runs every `settle` hook; a failing hook is logged and does not stop the others. */
export async function settle(policies: readonly Policy[], call: Call, settled: Settled, logger: Logger): Promise<void> {
  for (const policy of policies) {
    if (!policy.settle) continue;
    try {
      await policy.settle(call, settled);
    } catch (error) {
      logger.warn('policy settle failed', { policy: policy.name, error });
    }
  }
}
