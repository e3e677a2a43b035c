// Never lose a request, never answer one twice: several replicas, a runner killed with SIGKILL, the
// store restarted, and SIGTERM drains — all with real processes, a real store and real Deno.
// Every test runs with both claim kinds: store leases (this project's store with a lease key) and
// tool.claim.v1 breadcrumbs (what a foreign store gets).

import { afterEach, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { until } from '../support/waits.js';
import {
  cleanupAll,
  client,
  putTool,
  request,
  startRunner as startRunnerOn,
  startStoreProcess,
  tempDir,
  toolContext,
  waitForResponses,
  type CliProcess,
} from './harness.js';

afterEach(cleanupAll);

/** A tool that records each execution as a breadcrumb tagged e2e-exec (via context.api). */
const MARKER = toolContext(
  'e2e-marker',
  `export async function execute(input, context) {
     if (input.sleepMs) await new Promise((r) => setTimeout(r, input.sleepMs));
     await context.api.createBreadcrumb({ title: 'exec', schema_name: 'e2e.exec.v1', tags: ['e2e-exec'], context: { rid: context.request.id } });
     return { rid: context.request.id };
   }`,
  { permissions: { net: false, api: 'write' }, limits: { timeout_ms: 10000, memory_mb: 64 } },
);

async function executions(c: StoreClient): Promise<Map<string, number>> {
  const items = await c.listAll({ tag: 'e2e-exec', include_context: true });
  const counts = new Map<string, number>();
  for (const item of items) {
    const rid = String(item.context?.['rid']);
    counts.set(rid, (counts.get(rid) ?? 0) + 1);
  }
  return counts;
}

function expectExactlyOnce(responses: Map<string, unknown[]>, rids: string[]): void {
  const wrong = rids.filter((rid) => responses.get(rid)?.length !== 1);
  expect(wrong, `requests without exactly one response: ${wrong.slice(0, 5).join(', ')}`).toEqual([]);
}

async function submit(c: StoreClient, n: number, input: Record<string, unknown>): Promise<string[]> {
  const rids: string[] = [];
  for (let i = 0; i < n; i++) rids.push(await request(c, 'e2e-marker', { ...input, i }));
  return rids;
}

/** Resolves once at least `count` of `rids` have a response. */
async function progress(c: StoreClient, rids: string[], count: number): Promise<void> {
  for (;;) {
    const items = await c.listAll({ schema_name: 'tool.response.v1', tag: 'workspace:tools' });
    const answered = new Set(
      items.flatMap((i) => i.tags.filter((t) => t.startsWith('request:')).map((t) => t.slice(8))),
    );
    if (rids.filter((rid) => answered.has(rid)).length >= count) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const LEASE_KEY = 'e2e-lease-key-0123456789';

/** The two claim kinds: how the store and the runners are started for each. */
const KINDS = [
  { kind: 'lease', store: ['--lease-key', LEASE_KEY], runner: ['--lease-key', LEASE_KEY, '--claims', 'lease'] },
  { kind: 'breadcrumb', store: [], runner: ['--claims', 'breadcrumb'] },
] as const;

/** The rids of requests some runner holds a claim on (a live lease, or a claim breadcrumb). */
async function claimedRids(c: StoreClient, kind: string): Promise<string[]> {
  if (kind === 'lease') {
    const reply = (await c.lease('list', { scope: 'workspace:tools' }, LEASE_KEY)) as {
      leases: Array<{ label: string; state: string; expires_ms: number }>;
    };
    return reply.leases
      .filter((lease) => lease.state === 'held' && lease.expires_ms > Date.now())
      .map((lease) => lease.label);
  }
  const claims = await c.listAll({ schema_name: 'tool.claim.v1', tag: 'workspace:tools', include_context: true });
  return claims.map((i) => String(i.context?.['request_id']));
}

/** Waits until the runner holds a claim on a request that has no answer yet (it is mid-run on it). */
async function midRun(c: StoreClient, rids: string[], kind: string): Promise<void> {
  const wanted = new Set(rids);
  for (;;) {
    const claimed = (await claimedRids(c, kind)).filter((rid) => wanted.has(rid));
    const items = await c.listAll({ schema_name: 'tool.response.v1', tag: 'workspace:tools' });
    const answered = new Set(
      items.flatMap((i) => i.tags.filter((t) => t.startsWith('request:')).map((t) => t.slice(8))),
    );
    if (claimed.some((rid) => !answered.has(rid))) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each(KINDS)('with $kind claims', ({ kind, store: storeArgs, runner: runnerArgs }) => {
  const startStore = (dataDir: string, port = 0) => startStoreProcess(dataDir, port, [...storeArgs]);
  const startRunner = (url: string) => startRunnerOn(url, [...runnerArgs]);

  describe('replicas', () => {
    it('two runners on one store answer 300 requests exactly once, running none twice', async () => {
      const { url } = await startStore(tempDir());
      const c = client(url);
      await putTool(c, MARKER);
      await Promise.all([startRunner(url), startRunner(url)]);
      const rids = await submit(c, 300, {});
      const responses = await waitForResponses(c, rids, 120_000);
      expectExactlyOnce(responses, rids);
      const counts = await executions(c);
      const twice = rids.filter((rid) => (counts.get(rid) ?? 0) !== 1);
      expect(twice, `requests not executed exactly once: ${twice.slice(0, 5).join(', ')}`).toEqual([]);
      const replicas = new Set(rids.map((rid) => responses.get(rid)?.[0]?.metadata['replica']));
      expect(replicas.size).toBe(2);
      // Lease claims cost no breadcrumbs; breadcrumb claims are deleted once answered.
      if (kind === 'lease') expect(await c.listAll({ schema_name: 'tool.claim.v1' })).toEqual([]);
    });
  });

  describe('crashes and restarts', () => {
    it('a runner killed with SIGKILL under load and restarted answers every request exactly once', async () => {
      const { url } = await startStore(tempDir());
      const c = client(url);
      await putTool(c, MARKER);
      const first = await startRunner(url);
      // All 60 written at once, 300 ms each at 4 at a time: ~4.5 s of work, so when 10 are answered the
      // runner is surely mid-run on others (a faster runner must not finish everything before the kill).
      const rids = await Promise.all(
        Array.from({ length: 60 }, (_, i) => request(c, 'e2e-marker', { sleepMs: 300, i })),
      );
      await progress(c, rids, 10);
      // On a loaded machine the runner can be between runs at any given moment: kill it only when it
      // holds a claim on an unanswered request, so a takeover is certain to be needed.
      await midRun(c, rids, kind);
      first.signal('SIGKILL');
      await first.exited;
      await startRunner(url);
      const responses = await waitForResponses(c, rids, 120_000);
      expectExactlyOnce(responses, rids);
      // The requests the killed runner was running were taken over after their leases expired.
      const attempts = rids.map((rid) => Number(responses.get(rid)?.[0]?.metadata['attempt']));
      expect(attempts.filter((n) => n > 1).length).toBeGreaterThan(0);
      expect(attempts.every((n) => n === 1 || n === 2)).toBe(true);
      // Executions never exceed attempts: at most the killed attempt and its takeover.
      const counts = await executions(c);
      expect(rids.filter((rid, i) => (counts.get(rid) ?? 0) > (attempts[i] ?? 1))).toEqual([]);
    });

    it('the store restarted under load loses nothing', async () => {
      const dataDir = tempDir();
      const { store, url } = await startStore(dataDir);
      const port = new URL(url).port;
      const c = client(url);
      await putTool(c, MARKER);
      await startRunner(url);
      const rids = await submit(c, 40, { sleepMs: 50 });
      await progress(c, rids, 5);
      store.signal('SIGKILL');
      await store.exited;
      // Requests written while the store is down are retried by the client until it is back: the
      // store starts again once a write has been refused.
      let refused = 0;
      const writer: StoreClient = {
        ...c,
        createBreadcrumb: (...args) =>
          c.createBreadcrumb(...args).catch((error: unknown) => {
            refused++;
            throw error;
          }),
      };
      const during = submit(writer, 20, { sleepMs: 50 });
      await until('a request write refused while the store is down', () => refused > 0);
      await startStore(dataDir, Number(port));
      rids.push(...(await during));
      const responses = await waitForResponses(c, rids, 120_000);
      expectExactlyOnce(responses, rids);
    });

    it('SIGTERM drains without losing a request', async () => {
      const { url } = await startStore(tempDir());
      const c = client(url);
      await putTool(c, MARKER);
      const first: CliProcess = await startRunner(url);
      const rids = await submit(c, 40, { sleepMs: 150 });
      await progress(c, rids, 5);
      first.signal('SIGTERM');
      expect(await first.exited).toBe(0);
      await startRunner(url);
      const responses = await waitForResponses(c, rids, 120_000);
      expectExactlyOnce(responses, rids);
      // Jobs running at SIGTERM finished within the grace period: nothing ran twice.
      const counts = await executions(c);
      expect(rids.filter((rid) => (counts.get(rid) ?? 0) !== 1)).toEqual([]);
    });
  });
});
