// Retention (src/store/retention.ts) on the real store: answered requests and their answers go
// together once the answer is older than the retention — never before, never while the runner has
// not finished the request, never an unanswered request or a pending approval; upstream's hygiene
// rules; leases of removed requests; and the freed pages given back, so a steady workload stays
// within a bound. Time is passed to `sweep(now)` explicitly: nothing here waits on a clock.
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.js';
import { call, startStore, tempDir } from './helpers.js';

const KEY = 'lease-key-for-tests-0123';
const R = 60_000;
const A = 30 * 60_000;
const WS = 'workspace:tools';

async function create(store: Store, body: Record<string, unknown>): Promise<string> {
  const reply = await call(store.url, 'POST', '/breadcrumbs', { body: { title: 't', tags: [WS], ...body } });
  if (reply.status !== 201) throw new Error(`create failed: ${JSON.stringify(reply.body)}`);
  return reply.body.id as string;
}
const exists = async (store: Store, id: string): Promise<boolean> =>
  (await call(store.url, 'GET', `/breadcrumbs/${id}`)).status === 200;
const updatedMs = async (store: Store, id: string): Promise<number> =>
  Date.parse((await call(store.url, 'GET', `/breadcrumbs/${id}/full`)).body.updated_at as string);
const lease = (store: Store, op: string, body: Record<string, unknown>) =>
  call(store.url, 'POST', `/x/leases/${op}`, { body: { scope: WS, ...body }, headers: { 'X-Lease-Key': KEY } });

/** One runner call: request, lease, answer, lease done (or left held with `finish: false`). */
async function runnerCall(store: Store, i: number, finish = true): Promise<{ request: string; answer: string }> {
  const request = await create(store, {
    schema_name: 'tool.request.v1',
    context: { tool: 'echo', input: { i, pad: 'x'.repeat(400) } },
  });
  await lease(store, 'acquire', { name: request, holder: 'r', token: `t${i}`, ttl_ms: 3_600_000, label: `rid-${i}` });
  const answer = await create(store, {
    schema_name: 'tool.response.v1',
    context: {
      request_id: `rid-${i}`,
      status: 'success',
      output: { i, pad: 'y'.repeat(400) },
      metadata: { request_breadcrumb_id: request },
    },
  });
  if (finish) await lease(store, 'finish', { name: request });
  return { request, answer };
}

describe('store: retention', () => {
  it('removes an answered request with its answer only once the answer is older than the retention', async () => {
    const store = await startStore({ leaseKey: KEY, retentionMs: R, auditRetentionMs: A, pruneIntervalMs: 3_600_000 });
    const done = await runnerCall(store, 1);
    const held = await runnerCall(store, 2, false);
    const unanswered = await create(store, { schema_name: 'tool.request.v1', context: { tool: 'echo', input: {} } });
    const answeredAt = await updatedMs(store, done.answer);
    store.retention!.sweep(answeredAt + R - 1);
    expect(await exists(store, done.request)).toBe(true);
    expect(await exists(store, done.answer)).toBe(true);
    const swept = store.retention!.sweep(answeredAt + R + 1_000);
    expect(swept.removed).toBe(2);
    expect(await exists(store, done.request)).toBe(false);
    expect(await exists(store, done.answer)).toBe(false);
    // Not finished by the runner (its lease is still held): kept, answer and all. Unanswered: kept.
    store.retention!.sweep(answeredAt + 100 * R);
    expect(await exists(store, held.request)).toBe(true);
    expect(await exists(store, held.answer)).toBe(true);
    expect(await exists(store, unanswered)).toBe(true);
    // The removed request's lease goes too; the held one stays.
    const leases = (await lease(store, 'list', {})).body.leases as Array<{ name: string }>;
    expect(leases.map((l) => l.name)).toEqual([held.request]);
  });

  it('keeps a pending approval and live claims; removes decided approvals, progress, dead claims and upstream hygiene records', async () => {
    const store = await startStore({ leaseKey: KEY, retentionMs: R, auditRetentionMs: A, pruneIntervalMs: 3_600_000 });
    const far = new Date(Date.now() + 1000 * A).toISOString();
    const past = new Date(Date.now() - 1000).toISOString();
    const pending = await create(store, { schema_name: 'tool.approval.request.v1', context: { expires_at: far } });
    const decided = await create(store, { schema_name: 'tool.approval.request.v1', context: { expires_at: far } });
    const decision = await create(store, {
      schema_name: 'tool.approval.response.v1',
      tags: [WS, `approval:${decided}`],
      context: { decision: 'approve' },
    });
    const progress = await create(store, { schema_name: 'tool.progress.v1', context: { text: 'half way' } });
    const liveClaim = await create(store, { schema_name: 'tool.claim.v1', context: { expires_at: far } });
    const deadClaim = await create(store, { schema_name: 'tool.claim.v1', context: { expires_at: past } });
    const ping = await create(store, { schema_name: 'system.ping.v1', context: {} });
    const pingWithTtl = await create(store, { schema_name: 'system.ping.v1', context: {}, ttl: far });
    const health = await create(store, { schema_name: 'tool.request.v1', tags: [WS, 'health:check'], context: {} });
    const now = Date.now();
    store.retention!.sweep(now + 6 * 60_000);
    expect(await exists(store, health)).toBe(false); // upstream: health checks after 5 minutes
    expect(await exists(store, ping)).toBe(true); // upstream: pings after 10 minutes
    store.retention!.sweep(now + 11 * 60_000);
    expect(await exists(store, ping)).toBe(false);
    expect(await exists(store, pingWithTtl)).toBe(true); // an explicit TTL decides
    expect(await exists(store, progress)).toBe(false);
    expect(await exists(store, deadClaim)).toBe(false);
    expect(await exists(store, liveClaim)).toBe(true);
    expect(await exists(store, decided)).toBe(true); // audit retention is longer
    store.retention!.sweep(now + A + 60_000);
    store.retention!.sweep(now + A + 60_000);
    expect(await exists(store, decided)).toBe(false);
    expect(await exists(store, decision)).toBe(false);
    expect(await exists(store, pending)).toBe(true);
  });

  it('a steady workload stays within a bound: the freed pages are given back and reused', async () => {
    const store = await startStore({
      dataDir: tempDir(),
      leaseKey: KEY,
      retentionMs: R,
      auditRetentionMs: A,
      pruneIntervalMs: 3_600_000,
    });
    const wave = async (from: number): Promise<void> => {
      for (let i = from; i < from + 150; i++) await runnerCall(store, i);
    };
    // Two waves fill the event log to its retention (1,000 events here); from then on it is steady.
    let bound = 0;
    for (let round = 0; round < 5; round++) {
      await wave(round * 1000);
      bound = Math.max(bound, round < 2 ? store.retention!.sizes().dbBytes : 0);
      expect(store.retention!.sweep(Date.now() + R + 1_000).removed).toBe(300);
      // Freed pages are given back to the file system at once.
      expect(store.retention!.sizes().freeBytes).toBe(0);
      // The same work again fits in the pages the first waves used: the file does not grow past them.
      if (round >= 2) expect(store.retention!.sizes().dbBytes).toBeLessThanOrEqual(bound);
    }
    const metrics = await fetch(`${store.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/^tools_runner_store_db_bytes \d+$/m);
    expect(metrics).toMatch(/^tools_runner_store_retention_removed_total 1500$/m);
  });
});
