// Three `tools-runner start --db postgres://…` replicas on one PostgreSQL database (a throwaway
// cluster): requests written round-robin through all three stores are each answered exactly once,
// also when one replica is SIGKILLed and PostgreSQL restarts; every replica's event stream sees every answer.
// With the default `--claims auto` the replicas claim through the store's lease table (no claim
// breadcrumb, no claim event); with `--claims breadcrumb` through tool.claim.v1 breadcrumbs.

import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PG_UNAVAILABLE, startPgCluster, type PgCluster } from '../support/pg-cluster.js';
import { openSse } from '../store/helpers.js';
import {
  FAST,
  cleanupAll,
  client,
  putTool,
  request,
  runCli,
  tempDir,
  toolContext,
  waitForResponses,
  type CliProcess,
} from './harness.js';

afterEach(cleanupAll);

let cluster: PgCluster | undefined;
beforeAll(async () => {
  if (PG_UNAVAILABLE === undefined) cluster = await startPgCluster();
}, 120_000);
afterAll(async () => cluster?.stop());

const SECRETS_KEY = '12'.repeat(32);
const ECHO = toolContext('e2e-echo', 'export async function execute(input) { return { i: input.i }; }');

async function replica(db: string, claims: string[]): Promise<{ proc: CliProcess; url: string }> {
  const proc = runCli([
    'start',
    '--port',
    '0',
    '--data-dir',
    tempDir(),
    '--db',
    db,
    '--secrets-key',
    SECRETS_KEY,
    ...FAST,
    ...claims,
  ]);
  const line = await proc.line(/^store listening on /, 60_000);
  await proc.line(/^runner ready$/, 60_000);
  return { proc, url: line.replace('store listening on ', '') };
}

/** Rows of `sql` on `db` (a client of its own, closed at once). */
async function query<T extends pg.QueryResultRow>(db: string, sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: db });
  await c.connect();
  try {
    return (await c.query<T>(sql)).rows;
  } finally {
    await c.end();
  }
}

/** Claim events in the shared event log, and the lease table's rows by state. */
async function claimTraces(db: string): Promise<{ claimEvents: number; leases: Map<string, string> }> {
  const [events] = await query<{ n: number }>(
    db,
    "SELECT count(*)::int AS n FROM events WHERE schema_name = 'tool.claim.v1'",
  );
  const rows = await query<{ name: string; state: string }>(db, 'SELECT name, state FROM leases');
  return { claimEvents: events?.n ?? 0, leases: new Map(rows.map((row) => [row.name, row.state])) };
}

const KINDS = [
  { kind: 'lease (--claims auto)', claims: [] as string[] },
  { kind: 'breadcrumb', claims: ['--claims', 'breadcrumb'] },
];

describe.skipIf(PG_UNAVAILABLE !== undefined).each(KINDS)(
  'three start --db replicas on one PostgreSQL, $kind claims',
  ({ claims }) => {
    it('answers every request exactly once, written round-robin, with one replica SIGKILLed halfway through the writes and PostgreSQL restarted later; every stream sees every answer', async () => {
      const db = await (cluster as PgCluster).database();
      const replicas = await Promise.all([0, 1, 2].map(() => replica(db, claims)));
      const leases = claims.length === 0;
      const clients = replicas.map((r) => client(r.url));
      const streams = await Promise.all(
        replicas.slice(0, 2).map((r) => openSse(r.url, { query: '?x_schema_name=tool.response.v1' })),
      );
      await putTool(clients[0]!, ECHO);
      const rids: string[] = [];
      for (let i = 0; i < 30; i++) {
        if (i === 15) replicas[2]!.proc.signal('SIGKILL');
        if (i === 22) await (cluster as PgCluster).restart();
        const c = clients[i < 15 ? i % 3 : i % 2]!;
        rids.push(await request(c, 'e2e-echo', { i }));
      }
      const responses = await waitForResponses(clients[0]!, rids, 120_000);
      const wrong = rids.filter((rid) => responses.get(rid)?.length !== 1);
      expect(wrong, `requests without exactly one response: ${wrong.slice(0, 5).join(', ')}`).toEqual([]);
      for (const conn of streams) {
        const seen = await conn.waitForEvents(30);
        const answered = new Set(seen.map((frame) => (frame.data.context as { request_id: string }).request_id));
        expect(rids.filter((rid) => !answered.has(rid))).toEqual([]);
      }
      // How they claimed: lease rows and not one claim event, or claim events and no lease row.
      const requestIds = (await clients[0]!.listAll({ schema_name: 'tool.request.v1' })).map((item) => item.id);
      expect(requestIds).toHaveLength(rids.length);
      const traces = await claimTraces(db);
      if (leases) {
        expect(traces.claimEvents).toBe(0);
        expect(requestIds.filter((id) => !traces.leases.has(id))).toEqual([]);
      } else {
        expect(traces.claimEvents).toBeGreaterThanOrEqual(rids.length);
        expect(traces.leases.size).toBe(0);
      }
    }, 240_000);
  },
);

describe.skipIf(PG_UNAVAILABLE !== undefined)('tools-runner store --db', () => {
  it('tools-runner store --db serves on PostgreSQL; a bad --db or a missing --secrets-key fails at start naming it', async () => {
    const db = await (cluster as PgCluster).database();
    const store = runCli(['store', '--port', '0', '--db', db, '--secrets-key', SECRETS_KEY]);
    const url = (await store.line(/^store listening on /, 60_000)).replace('store listening on ', '');
    const created = await fetch(`${url}/breadcrumbs`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: 't', context: {}, tags: ['x'] }),
    });
    expect(created.status).toBe(201);
    const noKey = runCli(['store', '--port', '0', '--db', db]);
    expect(await noKey.exited).toBe(1);
    expect(noKey.stderr.join('')).toContain('a PostgreSQL store needs --secrets-key');
    const badUrl = runCli(['store', '--port', '0', '--db', 'mysql://u:hunter2@h/db', '--secrets-key', SECRETS_KEY]);
    expect(await badUrl.exited).toBe(1);
    expect(badUrl.stderr.join('')).toContain('db must be a postgres:// or postgresql:// URL, got "h/db"');
    expect(badUrl.stderr.join('')).not.toContain('hunter2');
  }, 120_000);
});
