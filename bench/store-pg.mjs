// Store writes on PostgreSQL against SQLite: C concurrent HTTP writers (keep-alive fetch) creating
// breadcrumbs for a fixed count, against one SQLite store, one PostgreSQL replica, and three
// PostgreSQL replicas on the same database (writers round-robin over them). All stores run in this
// process, so "cpu_ms_per_write" is this process's CPU (every replica's) per write; PostgreSQL's own
// CPU is not in it. Uses BENCH_PG_URL (an empty database) when set, else starts a throwaway cluster
// with Debian's initdb/pg_ctl in a temp dir (as the `postgres` user when run as root).
// Prints one JSON line per setup: { setup, writes, writes_per_sec, cpu_ms_per_write, db_round_trips_per_write }.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '../dist/logger.js';
import { createStore } from '../dist/store/index.js';
import { startPgCluster } from '../test/support/pg-cluster-core.mjs';

const n = Number(process.argv.find((a) => a.startsWith('--n='))?.slice(4) ?? 3000);
const concurrency = Number(process.argv.find((a) => a.startsWith('--c='))?.slice(4) ?? 16);
const KEY = 'ab'.repeat(32);
const base = {
  host: '127.0.0.1',
  port: 0,
  maxBodyBytes: 1024 * 1024,
  authSecret: undefined,
  adminKey: undefined,
  pingIntervalMs: 5000,
  eventRetention: 100_000,
  logger: silentLogger(),
};

async function database(cluster, name) {
  return process.env.BENCH_PG_URL ?? cluster.database(name);
}

async function measure(setup, urls) {
  let next = 0;
  const writer = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const response = await fetch(`${urls[i % urls.length]}/breadcrumbs`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ title: 'bench', context: { i, text: 'x'.repeat(200) }, tags: ['bench', `b:${i % 50}`] }),
      });
      if (response.status !== 201) throw new Error(`create answered ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, writer));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // Round trips of one create without an Idempotency-Key: BEGIN, the database's clock, event insert,
  // row+tags insert, COMMIT; plus the relay and the pump's read of new events, shared by every write they catch.
  console.log(
    JSON.stringify({
      setup,
      writes: n,
      concurrency,
      writes_per_sec: Math.round(n / seconds),
      cpu_ms_per_write: Number(((cpu.user + cpu.system) / 1000 / n).toFixed(3)),
      db_round_trips_per_write: setup === 'sqlite' ? 0 : '5 + relay and pump reads (shared)',
    }),
  );
}

const sqliteDir = mkdtempSync(join(tmpdir(), 'bench-sqlite-'));
const sqlite = await createStore({ ...base, dataDir: sqliteDir, secretsKey: undefined });
await measure('sqlite', [sqlite.url]);
await sqlite.close();
rmSync(sqliteDir, { recursive: true, force: true });

// Durable commits (the server's defaults), as in production.
const cluster = process.env.BENCH_PG_URL ? undefined : await startPgCluster({ durable: true });
try {
  const one = await createStore({
    ...base,
    dataDir: ':memory:',
    db: await database(cluster, 'bench_one'),
    secretsKey: KEY,
  });
  await measure('postgres x1', [one.url]);
  await one.close();
  const db = await database(cluster, 'bench_three');
  const three = await Promise.all(
    [0, 1, 2].map(() => createStore({ ...base, dataDir: ':memory:', db, secretsKey: KEY })),
  );
  await measure(
    'postgres x3',
    three.map((s) => s.url),
  );
  await Promise.all(three.map((s) => s.close()));
} finally {
  await cluster?.stop();
}
