// Retention (src/store/retention.ts, one set of rules over both backends) on the real store:
// answered requests and their answers go together once the answer is older than the retention —
// never before, never while the runner has not finished the request, never an unanswered request
// or a pending approval; upstream's hygiene rules; everything that hangs off a removed record
// (tags, history, search rows, vector) goes with it and its deletion is an event; sweeps running at
// once (replicas) remove each record once; and a steady workload stays within a size bound.
// Time is passed to `sweep(now)` explicitly: nothing here waits on a clock.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { expect, it } from 'vitest';
import type { Store } from '../../src/store/index.js';
import { call, describeBackends, onCleanup, pgDatabase, startStore, tempDir, type Backend } from './helpers.js';

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

/**
 * One runner call: request, answer, and the lease the runner takes (finished, or left held with
 * `finish: false`) when the store offers leases (both backends do with a lease key).
 */
async function runnerCall(store: Store, i: number, finish = true): Promise<{ request: string; answer: string }> {
  const leased = (await lease(store, 'list', {})).status === 200;
  const request = await create(store, {
    schema_name: 'tool.request.v1',
    context: { tool: 'echo', input: { i, pad: 'x'.repeat(400) } },
  });
  if (leased)
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
  if (leased && finish) await lease(store, 'finish', { name: request });
  return { request, answer };
}

/** A store on a database this test can also read directly (SQLite file / PostgreSQL database). */
async function storeWithDb(
  backend: Backend,
  options: Record<string, unknown>,
): Promise<{ store: Store; count: (sql: string, ...params: unknown[]) => Promise<number>; url?: string }> {
  if (backend === 'sqlite') {
    const dataDir = tempDir();
    const store = await startStore({ dataDir, ...options });
    const db = new Database(join(dataDir, 'store.db'), { readonly: true });
    onCleanup(() => db.close());
    const count = async (sql: string, ...params: unknown[]): Promise<number> =>
      Number(
        db
          .prepare(`SELECT count(*) FROM (${sql})`)
          .pluck()
          .get(...params),
      );
    return { store, count };
  }
  const url = await pgDatabase();
  const store = await startStore({ db: url, ...options });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  onCleanup(() => client.end());
  const count = async (sql: string, ...params: unknown[]): Promise<number> => {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    return Number((await client.query(`SELECT count(*) AS n FROM (${text}) x`, params)).rows[0].n);
  };
  return { store, count, url };
}

describeBackends('store: retention', (backend) => {
  it('removes an answered request with its answer only once the answer is older than the retention, with everything hanging off them', async () => {
    const { store, count } = await storeWithDb(backend, {
      leaseKey: KEY,
      retentionMs: R,
      auditRetentionMs: A,
      pruneIntervalMs: 3_600_000,
    });
    const done = await runnerCall(store, 1);
    const held = await runnerCall(store, 2, false);
    const unanswered = await create(store, { schema_name: 'tool.request.v1', context: { tool: 'echo', input: {} } });
    // Satellites: history (a second version), a stored vector, tags and search rows.
    await call(store.url, 'PATCH', `/breadcrumbs/${done.request}`, { body: { embedding: [1, 0], title: 'again' } });
    const answeredAt = await updatedMs(store, done.answer);
    const request = await call(store.url, 'GET', `/breadcrumbs/${done.request}/full`);
    const satellites = async (id: string): Promise<number[]> => [
      await count('SELECT 1 FROM breadcrumb_history WHERE breadcrumb_id = ?', id),
      await count('SELECT 1 FROM breadcrumb_embeddings WHERE breadcrumb_id = ?', id),
      await count(
        'SELECT 1 FROM breadcrumb_tags t WHERE NOT EXISTS (SELECT 1 FROM breadcrumbs b WHERE b.write_seq = t.write_seq)',
      ),
    ];
    expect(request.body.embedding).toEqual([1, 0]);
    expect(await satellites(done.request)).toEqual([1, 1, 0]);
    await store.retention.sweep(answeredAt + R - 1);
    expect(await exists(store, done.request)).toBe(true);
    expect(await exists(store, done.answer)).toBe(true);
    const swept = await store.retention.sweep(answeredAt + R + 1_000);
    expect(swept.removed).toBe(2);
    expect(await exists(store, done.request)).toBe(false);
    expect(await exists(store, done.answer)).toBe(false);
    // A swept request is told apart from one never written: 410 expired, with when.
    const gone = await call(store.url, 'GET', `/breadcrumbs/${done.request}`);
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({ code: 'expired', reason: 'retention', removed_at: expect.any(String) });
    expect(gone.body.error).toMatch(/^breadcrumb "[^"]+" expired: removed by retention at /);
    expect((await call(store.url, 'GET', `/breadcrumbs/${done.request}/full`)).status).toBe(410);
    expect((await call(store.url, 'GET', '/breadcrumbs/00000000-0000-0000-0000-00000000dead')).status).toBe(404);
    expect(await satellites(done.request)).toEqual([0, 0, 0]);
    const searchRows =
      backend === 'sqlite'
        ? await count("SELECT 1 FROM breadcrumbs_fts WHERE breadcrumbs_fts MATCH 'again'")
        : await count("SELECT 1 FROM breadcrumbs WHERE fts @@ to_tsquery('simple', 'again')");
    expect(searchRows).toBe(0);
    // Each removal is an event (streams see it; a resume after it replays it).
    const deleted = await count(
      `SELECT 1 FROM events WHERE data LIKE '%"breadcrumb.deleted"%' AND data LIKE '%"reason":"retention"%'`,
    );
    expect(deleted).toBe(2);
    // Not finished by the runner (its lease is still held): kept, answer and all. Unanswered: kept.
    await store.retention.sweep(answeredAt + 100 * R);
    expect(await exists(store, held.request)).toBe(true);
    expect(await exists(store, held.answer)).toBe(true);
    // The removed request's lease goes too; the held one stays.
    const leases = (await lease(store, 'list', {})).body.leases as Array<{ name: string }>;
    expect(leases.map((l) => l.name)).toEqual([held.request]);
    expect(await exists(store, unanswered)).toBe(true);
    // The tombstone lasts as long as the Idempotency-Keys of removed records (twice the retention).
    expect((await call(store.url, 'GET', `/breadcrumbs/${done.request}`)).status).toBe(404);
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
    await store.retention.sweep(now + 6 * 60_000);
    expect(await exists(store, health)).toBe(false); // upstream: health checks after 5 minutes
    expect(await exists(store, ping)).toBe(true); // upstream: pings after 10 minutes
    await store.retention.sweep(now + 11 * 60_000);
    expect(await exists(store, ping)).toBe(false);
    expect(await exists(store, pingWithTtl)).toBe(true); // an explicit TTL decides
    expect(await exists(store, progress)).toBe(false);
    expect(await exists(store, deadClaim)).toBe(false);
    expect(await exists(store, liveClaim)).toBe(true);
    expect(await exists(store, decided)).toBe(true); // audit retention is longer
    await store.retention.sweep(now + A + 60_000);
    await store.retention.sweep(now + A + 60_000);
    expect(await exists(store, decided)).toBe(false);
    expect(await exists(store, decision)).toBe(false);
    expect(await exists(store, pending)).toBe(true);
  });

  it('removes a tool creation (request and answer) after the audit retention; a creation answer that names no request stays', async () => {
    const store = await startStore({ leaseKey: KEY, retentionMs: R, auditRetentionMs: A, pruneIntervalMs: 3_600_000 });
    const creation = async (named: boolean): Promise<{ request: string; answer: string }> => {
      const request = await create(store, {
        schema_name: 'tool.create.request.v1',
        context: { tool_spec: { name: 'made', code: 'x'.repeat(2000) } },
      });
      await lease(store, 'acquire', { name: request, holder: 'r', token: `c-${request}`, ttl_ms: 3_600_000 });
      const answer = await create(store, {
        schema_name: 'tool.create.response.v1',
        context: {
          request_id: 'rid',
          status: 'created',
          errors: [],
          warnings: [],
          examples: [],
          ...(named ? { request_breadcrumb_id: request } : {}),
        },
      });
      await lease(store, 'finish', { name: request });
      return { request, answer };
    };
    const named = await creation(true);
    const unnamed = await creation(false);
    const answeredAt = await updatedMs(store, unnamed.answer);
    await store.retention.sweep(answeredAt + 10 * R); // past the call retention, within the audit one
    for (const id of [named.request, named.answer, unnamed.request, unnamed.answer])
      expect(await exists(store, id)).toBe(true);
    await store.retention.sweep(answeredAt + A + 1_000);
    expect(await exists(store, named.request)).toBe(false);
    expect(await exists(store, named.answer)).toBe(false);
    // Removing it alone would make its request look unanswered, and run again.
    expect(await exists(store, unnamed.request)).toBe(true);
    expect(await exists(store, unnamed.answer)).toBe(true);
  });

  it('sweeps running at once (replicas on one database) remove each record once', async () => {
    const url = backend === 'postgres' ? await pgDatabase() : undefined;
    const options = { retentionMs: R, auditRetentionMs: A, pruneIntervalMs: 3_600_000 };
    const first = await startStore(url ? { db: url, ...options } : options);
    const second = url ? await startStore({ db: url, ...options }) : first;
    const calls = [];
    for (let i = 0; i < 40; i++) calls.push(await runnerCall(i % 2 === 0 ? first : second, i));
    const at = Date.now() + R + 1_000;
    const results = await Promise.all([
      first.retention.sweep(at),
      second.retention.sweep(at),
      first.retention.sweep(at),
    ]);
    expect(results.reduce((sum, result) => sum + result.removed, 0)).toBe(80);
    for (const { request, answer } of calls) {
      expect(await exists(first, request)).toBe(false);
      expect(await exists(second, answer)).toBe(false);
    }
    expect(first.retention.removedTotal() + (second === first ? 0 : second.retention.removedTotal())).toBe(80);
  });

  it('a backlog larger than one pass (2,000 records) goes in one sweep', async () => {
    const store = await startStore({ retentionMs: R, auditRetentionMs: A, pruneIntervalMs: 3_600_000 });
    const CALLS = 1100;
    for (let i = 0; i < CALLS; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, k) => {
          const request = await create(store, { schema_name: 'tool.request.v1', context: { i: i + k } });
          await create(store, {
            schema_name: 'tool.response.v1',
            context: { status: 'success', metadata: { request_breadcrumb_id: request } },
          });
        }),
      );
    }
    const swept = await store.retention.sweep(Date.now() + R + 1_000);
    expect(swept.removed).toBe(2 * CALLS);
    const left = await call(store.url, 'GET', `/breadcrumbs?tag=${encodeURIComponent(WS)}`);
    expect(left.body).toEqual([]);
  });

  it('a steady workload stays within a bound: freed space is reused, and /metrics reports the size', async () => {
    const { store, url } = await storeWithDb(backend, {
      leaseKey: KEY,
      retentionMs: R,
      auditRetentionMs: A,
      pruneIntervalMs: 3_600_000,
    });
    // PostgreSQL reuses the space of deleted rows once they are vacuumed; autovacuum does that on its
    // own schedule (docs/store.md), here a VACUUM after each sweep stands in for it.
    const vacuum = async (): Promise<void> => {
      if (url === undefined) return;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query('VACUUM');
      } finally {
        await client.end();
      }
    };
    // 150 calls from 30 callers at once (replicas' concurrent jobs): the same records and events as
    // one after another, without waiting out each round trip in turn.
    const wave = async (from: number): Promise<void> => {
      const lane = async (first: number): Promise<void> => {
        for (let i = first; i < from + 150; i += 30) await runnerCall(store, i);
      };
      await Promise.all(Array.from({ length: 30 }, (_, k) => lane(from + k)));
    };
    const ROUNDS = 6;
    const empty = (await store.retention.measure()).dbBytes;
    // Two waves fill the event log to its retention (1,000 events here); from then on it is steady.
    let bound = 0;
    const sizes: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await wave(round * 1000);
      if (round < 2) bound = Math.max(bound, (await store.retention.measure()).dbBytes);
      // Each round's sweep is twice the retention later than the one before: the tombstones of the
      // requests an earlier round removed have expired by then, as they do in a steady state.
      expect((await store.retention.sweep(Date.now() + R + 1_000 + round * 2 * R)).removed).toBe(300);
      await vacuum();
      const after = await store.retention.measure();
      sizes.push(after.dbBytes);
      if (backend === 'sqlite') {
        // SQLite gives freed pages back to the file system at once, and the same work again fits in
        // the pages the first waves used: the file does not grow past them.
        expect(after.freeBytes).toBe(0);
        if (round >= 2) expect(after.dbBytes, `sizes after each round: ${sizes.join(', ')}`).toBeLessThanOrEqual(bound);
      }
    }
    if (backend === 'postgres') {
      // PostgreSQL reuses the vacuumed space; what still grows is the full-text GIN index, whose
      // entry tree keeps every word it ever saw (docs/store.md: REINDEX CONCURRENTLY now and then).
      // Bound: a round after the fill adds under a tenth of what the first round took.
      const first = (sizes[0] as number) - empty;
      const perRound = ((sizes[ROUNDS - 1] as number) - (sizes[2] as number)) / (ROUNDS - 3);
      expect(perRound, `empty ${empty}, sizes after each round: ${sizes.join(', ')}`).toBeLessThan(first / 10);
    }
    const metrics = await fetch(`${store.url}/metrics`).then((r) => r.text());
    expect(Number(/^tools_runner_store_db_bytes (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    expect(metrics).toMatch(new RegExp(`^tools_runner_store_retention_removed_total ${ROUNDS * 300}$`, 'm'));
  }, 180_000); // a bound for a hang, not a speed: 4,500 store calls and 6 sweeps on a shared machine
});
