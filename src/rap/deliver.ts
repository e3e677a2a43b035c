// POSTs a RAP callback message (`tool_result`) to a callback URL, with retries.
//
// Retried with exponential backoff: connection failures, timeouts, 429 and 5xx. Not retried: other
// non-2xx answers (the receiver refused the message) and redirects (never followed: a redirect
// could leave the allowed callback hosts). Each attempt has its own timeout.

import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../backoff.js';

/** A `tool_result` callback message (RAP). */
export interface RapToolResult {
  type: 'tool_result';
  group_id: string;
  id: string;
  call_id?: string;
  text: string;
}

/** Retry policy of deliveries. */
export interface DeliveryPolicy {
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  attemptTimeoutMs: number;
}

/** Default policy: 6 attempts, 250 ms doubling to at most 5 s, 10 s per attempt. */
export const DEFAULT_DELIVERY: DeliveryPolicy = {
  attempts: 6,
  initialDelayMs: 250,
  maxDelayMs: 5_000,
  attemptTimeoutMs: 10_000,
};

/** How a delivery ended. */
export type DeliveryOutcome =
  | { ok: true; attempts: number; status: number }
  | { ok: false; attempts: number; reason: string };

function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** Delivers `message` to `url`; never throws. Stops early when `signal` aborts. */
export async function deliverCallback(
  url: string,
  message: RapToolResult,
  policy: DeliveryPolicy,
  signal?: AbortSignal,
): Promise<DeliveryOutcome> {
  const body = JSON.stringify(message);
  let reason = 'not attempted';
  for (let attempt = 1; attempt <= policy.attempts; attempt++) {
    if (signal?.aborted) return { ok: false, attempts: attempt - 1, reason: 'stopped' };
    const timeout = AbortSignal.timeout(policy.attemptTimeoutMs);
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        redirect: 'manual',
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      await res.body?.cancel().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return { ok: true, attempts: attempt, status: res.status };
      reason = `HTTP ${res.status}`;
      if (res.status < 500 && res.status !== 429)
        return { ok: false, attempts: attempt, reason: `${reason} (not retried)` };
    } catch (error) {
      reason = timeout.aborted ? `no answer within ${policy.attemptTimeoutMs} ms` : reasonOf(error);
    }
    if (attempt < policy.attempts) {
      const delay = backoffMs({ initialMs: policy.initialDelayMs, maxMs: policy.maxDelayMs }, attempt - 1);
      await sleep(delay, undefined, signal ? { signal } : {}).catch(() => undefined);
    }
  }
  return { ok: false, attempts: policy.attempts, reason };
}
