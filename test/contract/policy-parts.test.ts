// Building blocks of the contract layer: token buckets (fake clock) and canonical input hashes.

import { describe, expect, it } from 'vitest';
import { canonicalJson, inputHash } from '../../src/contract/canonical.js';
import { createRateLimiter } from '../../src/contract/rate-limiter.js';

describe('rate limiter', () => {
  it('allows limit + burst at once, then refuses with the time until a token is back', () => {
    let t = 0;
    const limiter = createRateLimiter({ now: () => t });
    const spec = { limit: 2, windowMs: 1000, burst: 1 };
    expect([1, 2, 3].map(() => limiter.take('k', spec).ok)).toEqual([true, true, true]);
    expect(limiter.take('k', spec)).toEqual({ ok: false, retryAfterMs: 500 });
    t += 499;
    expect(limiter.take('k', spec)).toEqual({ ok: false, retryAfterMs: 1 });
    t += 1;
    expect(limiter.take('k', spec)).toEqual({ ok: true });
    expect(limiter.take('k', spec).ok).toBe(false);
  });

  it('keeps keys apart and refills to capacity, not beyond', () => {
    let t = 0;
    const limiter = createRateLimiter({ now: () => t });
    const spec = { limit: 1, windowMs: 100 };
    expect(limiter.take('a', spec).ok).toBe(true);
    expect(limiter.take('b', spec).ok).toBe(true);
    expect(limiter.take('a', spec).ok).toBe(false);
    t += 10_000;
    expect(limiter.take('a', spec).ok).toBe(true);
    expect(limiter.take('a', spec).ok).toBe(false);
  });

  it('forgets the least recently used keys beyond maxKeys', () => {
    const limiter = createRateLimiter({ now: () => 0, maxKeys: 3 });
    for (const key of ['a', 'b', 'c', 'd']) limiter.take(key, { limit: 1, windowMs: 1000 });
    expect(limiter.size()).toBe(3);
    // 'a' was dropped (its bucket is full again), 'd' is empty.
    expect(limiter.take('a', { limit: 1, windowMs: 1000 }).ok).toBe(true);
    expect(limiter.take('d', { limit: 1, windowMs: 1000 }).ok).toBe(false);
  });
});

describe('canonical input hash', () => {
  it('ignores key order and undefined members, not values', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'], c: undefined })).toBe('{"a":[true,null,"x"],"b":1}');
    expect(inputHash({ b: 1, a: { d: 2, c: 3 } })).toBe(inputHash({ a: { c: 3, d: 2 }, b: 1 }));
    expect(inputHash({ a: 1 })).not.toBe(inputHash({ a: '1' }));
    expect(inputHash([1, 2])).not.toBe(inputHash([2, 1]));
    expect(inputHash({})).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('refuses values that are not JSON', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/cyclic/);
    expect(() => canonicalJson(Number.NaN)).toThrow(/not a JSON number/);
    expect(() => canonicalJson(10n)).toThrow(/not a JSON value: bigint/);
  });
});
