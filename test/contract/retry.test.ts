// Retries by contract: only read-only or idempotent tools are retried, only on the codes that say
// nothing happened, with a doubling backoff; and the rate limiter's peek never takes a token.

import { describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/contract/rate-limiter.js';
import { retryDelayMs, retryPlan } from '../../src/contract/retry.js';

describe('retryPlan', () => {
  it('a read-only tool gets one retry after 100 ms on the three retryable codes by default', () => {
    const plan = retryPlan({ side_effect: 'read-only' });
    expect(plan).toEqual({
      maxAttempts: 2,
      backoffMs: 100,
      on: new Set(['sandbox.crashed', 'dependency.unavailable', 'rate.exceeded']),
    });
  });

  it("an idempotent tool follows its contract's retry field", () => {
    const plan = retryPlan({
      side_effect: 'financial',
      idempotent: true,
      retry: { max_attempts: 4, backoff_ms: 10, on: ['dependency.unavailable'] },
    });
    expect(plan).toEqual({ maxAttempts: 4, backoffMs: 10, on: new Set(['dependency.unavailable']) });
    expect([2, 3, 4].map((attempt) => retryDelayMs(plan, attempt))).toEqual([10, 20, 40]);
  });

  it.each([
    ['reversible-write', { side_effect: 'reversible-write' as const, retry: { max_attempts: 5 } }],
    ['unknown side effect', { retry: { max_attempts: 5 } }],
    ['idempotent: false', { side_effect: 'irreversible' as const, idempotent: false, retry: { max_attempts: 5 } }],
  ])('%s: never retried, whatever retry says', (_name, contract) => {
    expect(retryPlan(contract)).toEqual({ maxAttempts: 1, backoffMs: 0, on: new Set() });
  });

  it('the backoff is capped at 30 s', () => {
    expect(retryDelayMs({ maxAttempts: 10, backoffMs: 600_000, on: new Set() }, 9)).toBe(30_000);
  });
});

describe('rate limiter peek', () => {
  it('tells what take would decide without taking', () => {
    let now = 0;
    const limiter = createRateLimiter({ now: () => now });
    const spec = { limit: 1, windowMs: 1000 };
    expect(limiter.peek('k', spec)).toEqual({ ok: true });
    expect(limiter.peek('k', spec)).toEqual({ ok: true });
    expect(limiter.take('k', spec)).toEqual({ ok: true });
    expect(limiter.peek('k', spec)).toEqual({ ok: false, retryAfterMs: 1000 });
    now = 400;
    expect(limiter.peek('k', spec)).toEqual({ ok: false, retryAfterMs: 600 });
    now = 1000;
    expect(limiter.take('k', spec)).toEqual({ ok: true });
  });
});
