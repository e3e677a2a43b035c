// The rate-limit policy: token buckets per tool and per tool × calling agent (src/contract/rate-limiter.ts).
//
// The operator's `--rate-limits` entry for a tool replaces the contract's `rate_limits` for that tool.
// A call needs a token from every bucket that applies; when one is empty the call is answered
// `rate.exceeded` with `retry_after_ms` and does not run (and takes no token from the others).
// Requests without an agent share one "anonymous" per-agent bucket. Buckets are per replica.

import { RateLimits, type RateLimits as Limits } from '../../contract/contract.js';
import { createRateLimiter, type RateLimiter, type RateLimitSpec } from '../../contract/rate-limiter.js';
import { ErrorCode, RunnerError } from '../../errors.js';
import { errorResult } from '../../result.js';
import type { Policy } from '../policy.js';

/** Parses the operator's `--rate-limits` object (config.invalid naming the tool and field on error). */
export function parseRateOverrides(value: Record<string, unknown>): Map<string, Limits> {
  const out = new Map<string, Limits>();
  for (const [tool, limits] of Object.entries(value)) {
    const parsed = RateLimits.safeParse(limits);
    if (!parsed.success) {
      const problems = parsed.error.issues
        .map((issue) => `${['rateLimits', tool, ...issue.path.map(String)].join('.')}: ${issue.message}`)
        .join('; ');
      throw new RunnerError(ErrorCode.ConfigInvalid, `invalid --rate-limits: ${problems}`);
    }
    out.set(tool, parsed.data);
  }
  return out;
}

const spec = (limit: { limit: number; window_ms: number; burst?: number | undefined }): RateLimitSpec => ({
  limit: limit.limit,
  windowMs: limit.window_ms,
  ...(limit.burst !== undefined ? { burst: limit.burst } : {}),
});

/** Creates the policy; `limiter` defaults to an in-memory one (tests pass one with a fake clock). */
export function rateLimitPolicy(
  options: { overrides?: ReadonlyMap<string, Limits>; limiter?: RateLimiter } = {},
): Policy {
  const limiter = options.limiter ?? createRateLimiter();
  const overrides = options.overrides ?? new Map<string, Limits>();
  return {
    name: 'rate-limit',
    admit(call) {
      const name = call.route.tool.name;
      const limits = overrides.get(name) ?? call.contract.rate_limits;
      if (!limits) return { kind: 'run' };
      const agent = call.identity.agentId ?? '(anonymous)';
      const checks: Array<{ key: string; spec: RateLimitSpec; scope: string }> = [];
      if (limits.per_agent)
        checks.push({
          key: `agent\u0000${name}\u0000${agent}`,
          spec: spec(limits.per_agent),
          scope: `agent ${JSON.stringify(agent)}`,
        });
      if (limits.per_tool) checks.push({ key: `tool\u0000${name}`, spec: spec(limits.per_tool), scope: 'all callers' });
      for (const check of checks) {
        const decision = limiter.peek(check.key, check.spec);
        if (!decision.ok) {
          return {
            kind: 'answer',
            result: errorResult(
              ErrorCode.RateExceeded,
              `rate limit of "${name}" for ${check.scope} reached (${check.spec.limit} per ${check.spec.windowMs} ms); retry in ${decision.retryAfterMs} ms`,
              {
                retry_after_ms: decision.retryAfterMs,
                scope: check.scope === 'all callers' ? 'tool' : 'agent',
              },
            ),
          };
        }
      }
      for (const check of checks) limiter.take(check.key, check.spec);
      return { kind: 'run' };
    },
  };
}
