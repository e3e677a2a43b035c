// Retries by contract: which failed runs the runner tries again by itself, how often and how far apart.
//
// Only a tool that cannot do harm by running twice is retried: a `read-only` one, or one whose
// contract says `idempotent: true`. Everything else (unknown side effect included) runs at most once,
// whatever its `retry` field says. Only codes that say "nothing useful happened, try later" qualify:
// sandbox.crashed, dependency.unavailable and rate.exceeded (or the subset the contract's `retry.on`
// names). Without a `retry` field, a retry-safe tool gets one retry after 100 ms.

import type { ToolContract } from './contract.js';
import { backoffMs } from '../backoff.js';

/** Codes a contract may retry on. */
export const RETRY_CODES = ['sandbox.crashed', 'dependency.unavailable', 'rate.exceeded'] as const;

/** How the runner retries one tool's failed runs. */
export interface RetryPlan {
  /** Runs in all (1 = no retry). */
  maxAttempts: number;
  /** Wait before the first retry; doubles for each further one (capped at 30 s). */
  backoffMs: number;
  on: ReadonlySet<string>;
}

const DEFAULT_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 30_000;

/** Whether running the tool twice is harmless by its contract. */
export function retrySafe(contract: ToolContract): boolean {
  return contract.side_effect === 'read-only' || contract.idempotent === true;
}

/** The retry plan of a contract. */
export function retryPlan(contract: ToolContract): RetryPlan {
  if (!retrySafe(contract)) return { maxAttempts: 1, backoffMs: 0, on: new Set() };
  const retry = contract.retry;
  return {
    maxAttempts: retry?.max_attempts ?? 2,
    backoffMs: retry?.backoff_ms ?? DEFAULT_BACKOFF_MS,
    on: new Set(retry?.on ?? RETRY_CODES),
  };
}

/** Wait before attempt `attempt` (2 = the first retry). */
export function retryDelayMs(plan: RetryPlan, attempt: number): number {
  return backoffMs({ initialMs: plan.backoffMs, maxMs: MAX_BACKOFF_MS }, attempt - 2);
}
