// The one exponential backoff of the code base: every retry loop (event stream reconnects, answer
// polls, store waits, contract retries, RAP invocations and callbacks) asks it how long to wait.

/** An exponential backoff: `initialMs`, doubled per retry, never above `maxMs`. */
export interface Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
  /** Wait a random 50-100 % of the delay, so that many clients retrying together spread out. */
  readonly jitter?: boolean;
}

/** The wait before retry `n` (0 = the first retry): `initialMs * 2^n`, at most `maxMs`. */
export function backoffMs(backoff: Backoff, n: number, random: () => number = Math.random): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(Math.max(0, n), 30));
  return backoff.jitter === true ? Math.round(base * (0.5 + random() * 0.5)) : base;
}
