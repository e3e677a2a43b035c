// Retention soak (issue 25): one `tools-runner start` with a short retention, echo calls at full
// speed for N minutes, and two questions answered:
//   1. does the data stay within a bound? Every 30 s it samples the database size (SQLite: the data
//      directory's files, WAL included; PostgreSQL: pg_database_size) and the calls/s of that window;
//   2. does an answered request ever lose its answer before its retention ended? Throughout the run
//      it re-reads sampled answered calls (request and answer) and counts a violation when one is
//      gone although it was answered less than --retention-ms ago (measured from before the request
//      was written, so a late removal is never blamed on the store: updated_at >= that time).
// Options: --minutes=10 --retention-ms=60000 --concurrency=16 [--db=postgres://…|--db=throwaway]
//   [--event-retention=N] (the store's; default 100,000 events)
//   --db=throwaway starts a PostgreSQL cluster in a temp dir (Debian's initdb/pg_ctl) for the run.
// Prints one JSON object: samples, max/first/last sizes, calls total, violations.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startCli } from './cli-process.mjs';
import { startPgCluster } from '../test/support/pg-cluster-core.mjs';
import { connectCaller } from './_caller.mjs';

const option = (name, dflt) =>
  process.argv
    .find((a) => a.startsWith(`--${name}=`))
    ?.split('=')
    .slice(1)
    .join('=') ?? dflt;
const MINUTES = Number(option('minutes', 10));
const RETENTION_MS = Number(option('retention-ms', 60_000));
const CONCURRENCY = Number(option('concurrency', 16));
const SAMPLE_MS = Number(option('sample-ms', 30_000));
const DB = option('db', '');
// Events kept for resume (the store's --event-retention; its default 100,000 is a constant in the bound).
const EVENT_RETENTION = option('event-retention', '');
const SECRETS_KEY = 'cd'.repeat(32);
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-soak-'));
const log = (msg) => process.stderr.write(`[soak] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const procs = new Set();

for (const [name, value] of [
  ['minutes', MINUTES],
  ['retention-ms', RETENTION_MS],
  ['concurrency', CONCURRENCY],
  ['sample-ms', SAMPLE_MS],
]) {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number, got ${value}`);
}
if (DB !== '' && DB !== 'throwaway' && !/^postgres(ql)?:\/\//.test(DB))
  throw new Error(`--db must be a postgres:// URL or "throwaway", got ${JSON.stringify(DB)}`);

/** Bytes of every file under `path`. */
function dirBytes(path) {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) total += dirBytes(full);
    else if (entry.isFile()) total += statSync(full).size;
  }
  return total;
}

/** The largest files under `path` (relative name → bytes). */
function largestFiles(path, top = 6, prefix = '') {
  const out = [];
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) out.push(...Object.entries(largestFiles(full, top, `${prefix}${entry.name}/`)));
    else if (entry.isFile()) out.push([`${prefix}${entry.name}`, statSync(full).size]);
  }
  return Object.fromEntries(out.sort((a, b) => b[1] - a[1]).slice(0, top));
}

/** A client of `url` (bench/_caller.mjs): each call resolves with its request and answer ids. */
const connect = (url) => connectCaller(url, { ridPrefix: 'soak' });

async function main() {
  // The server's durability defaults (fsync on), as an operator would run it.
  const cluster = DB === 'throwaway' ? await startPgCluster({ durable: true }) : undefined;
  const dbUrl = cluster ? await cluster.database('soak') : DB || undefined;
  const dataDir = join(dir, 'store');
  const args = [
    'start',
    '--port',
    '0',
    '--admin-port',
    '-1',
    '--data-dir',
    dataDir,
    '--bootstrap-dir',
    join(root, 'bootstrap-breadcrumbs'),
    '--retention-ms',
    String(RETENTION_MS),
    ...(dbUrl ? ['--db', dbUrl, '--secrets-key', SECRETS_KEY] : []),
    ...(EVENT_RETENTION ? ['--event-retention', EVENT_RETENTION] : []),
  ];
  const runner = startCli(args, procs);
  const url = (await runner.line(/^store listening on /)).replace('store listening on ', '');
  await runner.line(/^runner ready$/);
  const sizeClient = dbUrl ? new pg.Client({ connectionString: dbUrl }) : undefined;
  await sizeClient?.connect();
  const size = async () =>
    sizeClient
      ? Number((await sizeClient.query('SELECT pg_database_size(current_database()) AS b')).rows[0].b)
      : dirBytes(dataDir);
  const c = await connect(url);
  log(`${dbUrl ? 'postgres' : 'sqlite'}: ${MINUTES} min at c${CONCURRENCY}, retention ${RETENTION_MS} ms`);

  const answered = []; // { request, answer, sentAt }
  let calls = 0;
  let gaveUp = 0;
  const errors = [];
  let checks = 0;
  const violations = [];
  const t0 = performance.now();
  const endAt = Date.now() + MINUTES * 60_000;

  const status = async (id) =>
    await fetch(`${url}/breadcrumbs/${id}`).then(async (r) => (await r.arrayBuffer(), r.status));
  // Re-reads a call that should still be there; a 404 before its retention ended is a violation.
  const check = async (entry) => {
    for (const id of [entry.answer, entry.request]) {
      const code = await status(id);
      const age = Date.now() - entry.sentAt;
      checks++;
      if (code === 404 && age < RETENTION_MS) violations.push({ id, age_ms: age, sentAt: entry.sentAt });
    }
  };
  const checker = (async () => {
    while (Date.now() < endAt) {
      await sleep(250);
      const now = Date.now();
      // A few random calls answered less than the retention ago, favouring the oldest of them.
      let lo = 0;
      while (lo < answered.length && now - answered[lo].sentAt >= RETENTION_MS) lo++;
      if (lo > 10_000) (answered.splice(0, lo - 1000), (lo = 1000));
      const live = answered.length - lo;
      if (live === 0) continue;
      const picks = [lo, ...Array.from({ length: 7 }, () => lo + Math.floor(Math.random() * live))];
      for (const i of picks) await check(answered[i]);
    }
  })();

  const samples = [];
  let windowCalls = 0;
  let windowStart = performance.now();
  const sampler = setInterval(() => {
    const seconds = (performance.now() - windowStart) / 1000;
    const calls_per_sec = Math.round((windowCalls / seconds) * 10) / 10;
    windowCalls = 0;
    windowStart = performance.now();
    void size().then((bytes) => {
      samples.push({ t_s: Math.round((performance.now() - t0) / 1000), bytes, calls_per_sec });
      log(`t=${samples.at(-1).t_s}s ${(bytes / 1e6).toFixed(1)} MB ${calls_per_sec} calls/s`);
    });
  }, SAMPLE_MS);

  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < endAt) {
        let result;
        try {
          result = await c.call();
        } catch (error) {
          // A failed write (e.g. the client's 10 s timeout) is counted and reported, not fatal.
          errors.push(String(error?.message ?? error));
          continue;
        }
        calls++;
        windowCalls++;
        if (result.answer === undefined) gaveUp++;
        else answered.push(result);
      }
    }),
  );
  clearInterval(sampler);
  await checker;
  // Final pass: every call answered less than the retention ago must still be there.
  const now = Date.now();
  for (const entry of answered) if (now - entry.sentAt < RETENTION_MS - 5_000) await check(entry);
  const seconds = (performance.now() - t0) / 1000;
  samples.push({ t_s: Math.round(seconds), bytes: await size(), calls_per_sec: null });
  const files = dbUrl ? undefined : largestFiles(dataDir);
  c.close();
  await sizeClient?.end();
  await runner.stop();
  await cluster?.stop();

  const bytes = samples.map((s) => s.bytes);
  const half = seconds / 2;
  const lastWindow = Math.min(300, half);
  const firstPart = samples.filter((s) => s.t_s <= seconds - lastWindow).map((s) => s.bytes);
  const lastPart = samples.filter((s) => s.t_s > seconds - lastWindow).map((s) => s.bytes);
  const mb = (b) => Math.round((b / 1e6) * 10) / 10;
  console.log(
    JSON.stringify({
      backend: dbUrl ? 'postgres' : 'sqlite',
      minutes: MINUTES,
      retention_ms: RETENTION_MS,
      event_retention: EVENT_RETENTION ? Number(EVENT_RETENTION) : 'default (100000)',
      concurrency: CONCURRENCY,
      calls_total: calls,
      calls_per_sec: Math.round((calls / seconds) * 10) / 10,
      gave_up: gaveUp,
      write_errors: errors.length,
      write_error_examples: errors.slice(0, 3),
      samples: samples.map((s) => ({ ...s, mb: mb(s.bytes) })),
      max_mb: mb(Math.max(...bytes)),
      first_mb: mb(bytes[0]),
      last_window_s: Math.round(lastWindow),
      max_mb_before_last_window: firstPart.length ? mb(Math.max(...firstPart)) : null,
      max_mb_last_window: lastPart.length ? mb(Math.max(...lastPart)) : null,
      ...(files ? { largest_files_at_end: files } : {}),
      checks,
      violations: violations.length,
      violation_examples: violations.slice(0, 5),
    }),
  );
}

try {
  await main();
} finally {
  for (const proc of procs) proc.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
