// The effects policy: the timeout and partial-effect taxonomy, decided from the effects the executor
// counted at the harness/host boundary (`result.effects`, see docs/tool-contracts.md "Effects and timeouts").
//
// For a tool whose contract does not say `read-only` (an absent side_effect is unknown, and unknown
// is treated as side-effecting):
// - `timeout` after at least one effect -> `timeout.unknown-commit` (the action may have committed);
// - `timeout` before any effect -> `timeout.before-submit` (nothing reached out: safe to retry), unless
//   an earlier claim attempt may have run it or the tool has a way out the runner does not count
//   (an extra Deno permission): then `timeout.unknown-commit`, not retryable;
// - any retryable error without effects (a crash, a dependency down) is retryable only on those same
//   terms; every such answer says what is known in `details.execution` (result.ts `Execution`);
// - any other error after at least one observed effect (a store write, a network use) ->
//   `partial-effect` (`details.cause_code` keeps the code, the message stays the original one); a host
//   program or RAP tool that was merely started and reports its own error keeps that error.
// A read-only tool keeps its `timeout` and its errors, and so does a code tool that can have no
// external effect at all (no `net` host, no store-api `write` grant, no extra Deno permission): its
// timeout is a plain `timeout`, not retryable (running the same loop again ends the same way). Every answer of a call that had effects lists
// them (`metadata.effects` on success, `details.effects` on error; at most MAX_LISTED_EFFECTS, with
// `effects_count` the total).

import { ErrorCode } from '../../errors.js';
import { Execution, failure, withExecution, type Effect, type ExecutionResult } from '../../result.js';
import type { Route } from '../../catalog/catalog.js';
import type { Call, Policy } from '../policy.js';

/** Effects that only say a call was handed over (its process started, its invocation sent), not what it did. */
const STARTED_ONLY: ReadonlySet<string> = new Set(['host.exec', 'rap.invoke']);

/** Most effects an answer lists. */
export const MAX_LISTED_EFFECTS = 50;

/** The listed effects and their total count. */
export function effectsOf(result: ExecutionResult): { effects: Effect[]; count: number } {
  const effects = result.effects ?? [];
  return { effects: effects.slice(0, MAX_LISTED_EFFECTS), count: effects.length + (result.effectsDropped ?? 0) };
}

/** "store.create rec-1, net.fetch api.example.com:443 and 3 more" */
function summary(effects: readonly Effect[], count: number): string {
  const named = effects.slice(0, 3).map((e) => `${e.kind} ${e.target}`);
  return count > named.length ? `${named.join(', ')} and ${count - named.length} more` : named.join(', ');
}

const plural = (n: number): string => `${n} effect${n === 1 ? '' : 's'}`;

/** A code tool that can reach nothing outside its sandbox: no network, no store-api write, no extra Deno permission. */
export function cannotHaveEffects(route: Route | undefined): boolean {
  if (route?.kind !== 'code') return false;
  const { net, api, extraPermissions } = route.tool;
  return net.length === 0 && api !== 'write' && extraPermissions.length === 0;
}

/** A code tool with a way out the runner does not count (an extra Deno permission: `run`, `write`, ...). */
function uncounted(route: Route | undefined): boolean {
  return route?.kind === 'code' && route.tool.extraPermissions.length > 0;
}

/** The result `result` becomes under the taxonomy (unchanged when no rule applies). */
export function classify(
  call: Pick<Call, 'contract' | 'metadata' | 'claimAttempt'> & { route?: Route },
  result: ExecutionResult,
): ExecutionResult {
  const { effects, count } = effectsOf(result);
  if (result.ok) {
    if (count > 0) {
      call.metadata['effects'] = effects;
      call.metadata['effects_count'] = count;
    }
    return result;
  }
  if (call.contract.side_effect === 'read-only' || cannotHaveEffects(call.route)) return result;
  const cause = result.error;
  const listed = count > 0 ? { effects, effects_count: count } : {};
  const details = { ...cause.details, ...listed, cause_code: cause.code };
  // Without counted effects: why the action may still have run (an earlier attempt, an uncounted way out).
  const earlier = (call.claimAttempt ?? 1) > 1;
  const maybe = earlier
    ? `attempt ${call.claimAttempt ?? 1} of this request: an earlier attempt (on a replica that stopped) may have run it`
    : uncounted(call.route)
      ? 'it has permissions whose effects the runner cannot count'
      : undefined;
  if (cause.code === ErrorCode.Timeout) {
    const error =
      count > 0
        ? withExecution(
            failure(
              ErrorCode.TimeoutUnknownCommit,
              `${cause.message}; it had ${plural(count)} (${summary(effects, count)}), so its action may have committed: check before retrying`,
              details,
            ),
            Execution.RanResultLost,
          )
        : maybe !== undefined
          ? withExecution(
              failure(
                ErrorCode.TimeoutUnknownCommit,
                `${cause.message}; it had no effect counted, but ${maybe}: check before retrying`,
                details,
              ),
              Execution.MayHaveRun,
            )
          : withExecution(
              failure(
                ErrorCode.TimeoutBeforeSubmit,
                `${cause.message}; it had no effect yet, so nothing was submitted and it is safe to retry`,
                details,
              ),
              Execution.NeverStarted,
            );
    return { ...result, error };
  }
  // A retryable ending (a crash, a dependency down) is retryable only when nothing can have run.
  if (count === 0 && cause.retryable) {
    const execution =
      maybe !== undefined ? Execution.MayHaveRun : (cause.details?.['execution'] as Execution | undefined);
    return { ...result, error: withExecution(cause, execution ?? Execution.NeverStarted) };
  }
  // A host program or a remote RAP tool that was started and then reported its own error has told us
  // what happened better than "it was started" can: its error stands (a timeout above cannot tell).
  if (count === 0 || effects.every((effect) => STARTED_ONLY.has(effect.kind)))
    return count === 0 ? result : { ...result, error: { ...cause, details: { ...cause.details, ...listed } } };
  // the message stays the tool's own (a caller may match on it); the code and details say the rest
  return {
    ...result,
    error: withExecution(failure(ErrorCode.PartialEffect, cause.message, details), Execution.RanResultLost),
  };
}

/**
 * A result answered without running the tool now (a policy's answer, trouble before the run): on a
 * later claim attempt an earlier one may have run it, so a retryable error of a tool that is not
 * read-only says `may_have_run` and is not retryable.
 */
export function answeredWithoutRun(
  call: { claimAttempt?: number; contract?: Call['contract'] },
  result: ExecutionResult,
): ExecutionResult {
  if (result.ok || (call.claimAttempt ?? 1) <= 1 || !result.error.retryable) return result;
  if (call.contract?.side_effect === 'read-only') return result;
  return { ...result, error: withExecution(result.error, Execution.MayHaveRun) };
}

/** Creates the policy (a `review` hook only). */
export function effectsPolicy(): Policy {
  return { name: 'effects', review: (call, result) => classify(call, result) };
}
