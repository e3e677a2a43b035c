// A replica cut off from PostgreSQL in the middle of a write, and what the other replica's writes
// feel: two store replicas on one database, one of them behind a proxy (test/support/pg-cut-proxy.mjs)
// that stops forwarding its bytes right after its first write statement in a transaction. With the
// cut open, a writer creates breadcrumbs through the other replica one after another for --seconds
// (default 8); it reports the longest write and when PostgreSQL ended the cut session (its
// idle-in-transaction timeout, --idle-ms, default the store's 5000; 0 turns it off).
// Uses BENCH_PG_URL (an empty database) when set, else a throwaway cluster.
// Prints one JSON line: { writes, longest_write_ms, p99_write_ms, cut_session_ended_after_ms } (and
// longest_write_unfinished: true when a write was still waiting a second after the window).
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { silentLogger } from '../dist/logger.js';
import { createStore } from '../dist/store/index.js';
import { startPgCluster } from '../test/support/pg-cluster-core.mjs';
import { idleInTransaction, startCutProxy } from '../test/support/pg-cut-proxy.mjs';

const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const seconds = arg('seconds', 8);
const idleMs = arg('idle-ms', 5000);
const base = {
  host: '127.0.0.1',
  port: 0,
  dataDir: ':memory:',
  maxBodyBytes: 1024 * 1024,
  authSecret: undefined,
  adminKey: undefined,
  pingIntervalMs: 5000,
  eventRetention: 100_000,
  secretsKey: 'ab'.repeat(32),
  logger: silentLogger(),
};
const create = (url, body) =>
  fetch(`${url}/breadcrumbs`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });

const cluster = process.env.BENCH_PG_URL ? undefined : await startPgCluster();
const dbUrl = process.env.BENCH_PG_URL ?? (await cluster.database('bench_cut'));
const url = new URL(dbUrl);
const proxy = await startCutProxy(url);
const viaProxy = new URL(url);
viaProxy.port = String(proxy.port);
viaProxy.searchParams.set('application_name', 'bench-cut');
const cut = await createStore({ ...base, db: viaProxy.toString(), dbIdleInTransactionTimeoutMs: idleMs });
const other = await createStore({ ...base, db: dbUrl });
const watcher = new pg.Client({ connectionString: dbUrl });
await watcher.connect();
try {
  const armed = proxy.arm();
  const stuck = create(cut.url, { title: 'cut off', context: {}, tags: ['bench'] }).catch(() => undefined);
  await armed;
  await idleInTransaction(pg, dbUrl, 'bench-cut', 10_000);
  const cutAt = performance.now();
  let endedAfterMs = null;
  const times = [];
  const until = cutAt + seconds * 1000;
  let unfinished = false;
  while (performance.now() < until) {
    const t0 = performance.now();
    // A write still waiting when the window is over is reported as such (it may wait for as long as the cut lasts).
    let timer;
    const late = new Promise((resolve) => (timer = setTimeout(resolve, until - t0 + 1000, 'late')));
    const response = await Promise.race([
      create(other.url, { title: 'bench', context: { i: times.length }, tags: ['bench'] }),
      late,
    ]);
    clearTimeout(timer);
    if (response === 'late') {
      times.push(performance.now() - t0);
      unfinished = true;
      break;
    }
    if (response.status !== 201) throw new Error(`create answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
    times.push(performance.now() - t0);
    if (endedAfterMs === null) {
      const open = await watcher.query(
        "SELECT 1 FROM pg_stat_activity WHERE application_name = 'bench-cut' AND state = 'idle in transaction'",
      );
      if (open.rows.length === 0) endedAfterMs = Math.round(performance.now() - cutAt);
    }
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      writes: times.length,
      seconds,
      idle_in_transaction_timeout_ms: idleMs,
      longest_write_ms: Number((sorted.at(-1) ?? 0).toFixed(1)),
      p99_write_ms: Number((sorted[Math.floor(sorted.length * 0.99)] ?? 0).toFixed(1)),
      cut_session_ended_after_ms: endedAfterMs,
      ...(unfinished ? { longest_write_unfinished: true } : {}),
    }),
  );
  proxy.close();
  await stuck;
} finally {
  proxy.close();
  await watcher.end();
  await cut.close();
  await other.close();
  await cluster?.stop();
}
