// Token buckets for contract rate limits: one bucket per key (a tool, or a tool × calling agent).
//
// A bucket holds up to `limit + burst` tokens and refills `limit` tokens evenly per `window_ms`; a
// call takes one token or is refused with the time until one is back. Buckets live in this replica's
// memory: with N replicas a tool may see up to N times its limit (docs/tool-contracts.md "Rate limits").
// Full buckets carry no information, so the least recently used ones are dropped beyond `maxKeys`.

import { BoundedMap } from '../bounded.js';

/** A limit: `limit` calls per `windowMs`, plus `burst` at once. */
export interface RateLimitSpec {
  limit: number;
  windowMs: number;
  burst?: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterMs: number };

const EPSILON = 1e-9;

interface Bucket {
  tokens: number;
  at: number;
}

/** Per-key token buckets. */
export interface RateLimiter {
  /** Takes a token for `key` under `spec`, or says how long until one is available. */
  take(key: string, spec: RateLimitSpec): RateDecision;
  /** What `take` would decide, without taking (a call needing tokens of several buckets checks all first). */
  peek(key: string, spec: RateLimitSpec): RateDecision;
  /** Keys currently tracked. */
  size(): number;
}

/** Creates an in-memory limiter. */
export function createRateLimiter(options: { now?: () => number; maxKeys?: number } = {}): RateLimiter {
  const now = options.now ?? Date.now;
  const maxKeys = options.maxKeys ?? 100_000;
  const buckets = new BoundedMap<string, Bucket>(maxKeys);

  const refilled = (key: string, spec: RateLimitSpec): Bucket => {
    const capacity = spec.limit + (spec.burst ?? 0);
    const t = now();
    const known = buckets.get(key);
    return known
      ? { tokens: Math.min(capacity, known.tokens + (t - known.at) * (spec.limit / spec.windowMs)), at: t }
      : { tokens: capacity, at: t };
  };
  // EPSILON: refills are sums of float fractions; a token 1e-12 short is a whole token.
  const decide = (bucket: Bucket, spec: RateLimitSpec): RateDecision =>
    bucket.tokens >= 1 - EPSILON
      ? { ok: true }
      : {
          ok: false,
          retryAfterMs: Math.max(1, Math.ceil((1 - bucket.tokens) / (spec.limit / spec.windowMs) - EPSILON)),
        };

  return {
    peek: (key, spec) => decide(refilled(key, spec), spec),
    take(key, spec) {
      const bucket = refilled(key, spec);
      // Setting makes it the newest: the least recently used bucket leaves first.
      buckets.set(key, bucket);
      const decision = decide(bucket, spec);
      if (decision.ok) bucket.tokens = Math.max(0, bucket.tokens - 1);
      return decision;
    },
    size: () => buckets.size,
  };
}
