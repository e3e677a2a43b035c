// Contract policies through the whole request path (a real runner process with its embedded store,
// real Deno): rate limits per tool and per agent (hit, then recovered after retry_after_ms), the
// operator's --rate-limits override, and retries by contract (a read-only tool is retried after
// sandbox.crashed and succeeds; a side-effecting one is not retried).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { answer, cleanupAll, client, putTool, request, startRunnerWithStore, toolContext } from './harness.js';

let c: StoreClient;

/**
 * Crashes its process on the first run for `input.mark` and succeeds afterwards: the first run leaves
 * a marker record through context.api, later runs find it. Each run also leaves an `exec:` record.
 */
const CRASH_ONCE = `export async function execute(input, context) {
  await context.api.createBreadcrumb({ title: 'exec', schema_name: 'e2e.exec.v1', tags: ['exec:' + input.mark], context: {} });
  const seen = await context.api.searchBreadcrumbs({ tag: 'crashed:' + input.mark });
  if (seen.length === 0) {
    await context.api.createBreadcrumb({ title: 'crashed', schema_name: 'e2e.crash.v1', tags: ['crashed:' + input.mark], context: {} });
    Deno.exit(3);
  }
  return { recovered: true };
}`;
const apiWrite = { permissions: { net: false, api: 'write' }, limits: { timeout_ms: 10_000, memory_mb: 128 } };

async function executions(mark: string): Promise<number> {
  return (await c.listBreadcrumbs({ tag: `exec:${mark}`, limit: 100 })).length;
}

const OVERRIDE = { 'rate-override': { per_tool: { limit: 1, window_ms: 60_000 } } };

beforeAll(async () => {
  const { url } = await startRunnerWithStore(['--rate-limits', JSON.stringify(OVERRIDE)]);
  c = client(url);
  await Promise.all([
    putTool(
      c,
      toolContext('rate-agent', 'export async function execute() { return { ok: true }; }', {
        contract: { side_effect: 'read-only', rate_limits: { per_agent: { limit: 1, window_ms: 1500 } } },
      }),
    ),
    putTool(
      c,
      toolContext('rate-tool', 'export async function execute() { return { ok: true }; }', {
        contract: { side_effect: 'read-only', rate_limits: { per_tool: { limit: 2, window_ms: 60_000 } } },
      }),
    ),
    // The contract allows plenty; the operator's override allows one call a minute.
    putTool(
      c,
      toolContext('rate-override', 'export async function execute() { return { ok: true }; }', {
        contract: { rate_limits: { per_tool: { limit: 100, window_ms: 1000 } } },
      }),
    ),
    putTool(
      c,
      toolContext('retry-read', CRASH_ONCE, {
        ...apiWrite,
        contract: { side_effect: 'read-only', retry: { max_attempts: 3, backoff_ms: 50 } },
      }),
    ),
    putTool(
      c,
      toolContext('retry-write', CRASH_ONCE, {
        ...apiWrite,
        contract: { side_effect: 'reversible-write', retry: { max_attempts: 3, backoff_ms: 50 } },
      }),
    ),
    putTool(
      c,
      toolContext('retry-idem', CRASH_ONCE, {
        ...apiWrite,
        contract: { side_effect: 'external-communication', idempotent: true },
      }),
    ),
    putTool(c, toolContext('retry-unknown', CRASH_ONCE, apiWrite)),
  ]);
}, 60_000);

afterAll(cleanupAll);

describe('rate limits', () => {
  it('a per-agent limit refuses the second call with retry_after_ms, leaves other agents alone and recovers', async () => {
    const first = await answer(c, await request(c, 'rate-agent', {}, undefined, { requestedBy: 'agent-a' }));
    expect(first.status).toBe('success');
    const limited = await answer(c, await request(c, 'rate-agent', {}, undefined, { requestedBy: 'agent-a' }));
    expect(limited.status).toBe('error');
    expect(limited.error?.code).toBe('rate.exceeded');
    expect(limited.error?.message).toMatch(
      /^rate limit of "rate-agent" for agent "agent-a" reached \(1 per 1500 ms\); retry in \d+ ms$/,
    );
    const retryAfter = limited.error?.details?.['retry_after_ms'] as number;
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(1500);
    expect(limited.error?.details?.['scope']).toBe('agent');
    expect(limited.error?.retryable).toBe(true);

    const other = await answer(c, await request(c, 'rate-agent', {}, undefined, { requestedBy: 'agent-b' }));
    expect(other.status).toBe('success');

    await new Promise((r) => setTimeout(r, retryAfter + 50));
    const recovered = await answer(c, await request(c, 'rate-agent', {}, undefined, { requestedBy: 'agent-a' }));
    expect(recovered.status).toBe('success');
  });

  it('a per-tool limit counts every caller together', async () => {
    const statuses = [];
    for (const agent of ['x', 'y', 'z'])
      statuses.push(
        (await answer(c, await request(c, 'rate-tool', {}, undefined, { requestedBy: agent }))).error?.code ??
          'success',
      );
    expect(statuses).toEqual(['success', 'success', 'rate.exceeded']);
  });

  it("the operator's --rate-limits entry replaces the contract's limits", async () => {
    expect((await answer(c, await request(c, 'rate-override', {}))).status).toBe('success');
    const limited = await answer(c, await request(c, 'rate-override', {}));
    expect(limited.error?.code).toBe('rate.exceeded');
    expect(limited.error?.message).toMatch(
      /^rate limit of "rate-override" for all callers reached \(1 per 60000 ms\); retry in \d+ ms$/,
    );
  });
});

describe('retries by contract', () => {
  it('a read-only tool is retried after sandbox.crashed and its answer says how many runs it took', async () => {
    const response = await answer(c, await request(c, 'retry-read', { mark: 'read' }));
    expect(response.error).toBeUndefined();
    expect(response.status).toBe('success');
    expect(response.output).toEqual({ recovered: true });
    expect(response.metadata?.['attempts']).toBe(2);
    expect(await executions('read')).toBe(2);
  });

  it('an idempotent tool is retried even though it has side effects', async () => {
    const response = await answer(c, await request(c, 'retry-idem', { mark: 'idem' }));
    expect(response.status).toBe('success');
    expect(response.metadata?.['attempts']).toBe(2);
  });

  it('a side-effecting tool is never retried, whatever its retry field says', async () => {
    const response = await answer(c, await request(c, 'retry-write', { mark: 'write' }));
    expect(response.status).toBe('error');
    // it wrote through context.api before it crashed: partial-effect, the crash kept as the cause
    expect(response.error?.code).toBe('partial-effect');
    expect(response.error?.details?.['cause_code']).toBe('sandbox.crashed');
    expect(response.metadata?.['attempts']).toBeUndefined();
    expect(await executions('write')).toBe(1);
  });

  it('a tool without a contract (side effect unknown) is never retried', async () => {
    const response = await answer(c, await request(c, 'retry-unknown', { mark: 'unknown' }));
    expect(response.error?.code).toBe('partial-effect');
    expect(response.error?.details?.['cause_code']).toBe('sandbox.crashed');
    expect(await executions('unknown')).toBe(1);
  });
});
