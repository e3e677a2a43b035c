// Calls/s and cost per call of `tools-runner start --db postgres://…` replicas on one PostgreSQL
// (issue 25): 1 replica, then 3 replicas on one database, each a fresh database in one throwaway
// cluster (test/support/pg-cluster-core.mjs; durable commits as in production unless --fsync=off;
// pg_stat_statements loaded to count statements). Echo tool, --calls calls (default 2000) by 16
// concurrent callers, client included: each caller writes its request through its replica's store
// API (caller k uses replica k mod R) and waits for the tool.response.v1 event on that replica's
// stream. Per setup (one JSON object printed for the whole run):
//   calls_per_sec, p50_ms, p99_ms       end to end, as the callers see it
//   runner_cpu_ms_per_call              utime+stime of every replica's Node processes (runner and
//                                       spawner helper; as bench/e2e.mjs), summed, per call
//   sandbox_cpu_ms_per_call             the rest of the replicas' process trees (Deno), per call
//   pg_cpu_ms_per_call                  the PostgreSQL server's process tree (postmaster, backends,
//                                       reaped ones included; bench/proc-cpu.mjs), per call
//   client_cpu_ms_per_call              this process (callers, their streams), per call
//   db_statements_per_call              pg_stat_statements calls of the database (BEGIN/COMMIT
//                                       included: every statement is one round trip), per call
//   db_transactions_per_call, db_rollbacks_per_call   pg_stat_database xact_commit/xact_rollback
//                                       deltas (a statement outside BEGIN is a transaction too), per call
//   db_top_statements_per_call          the 12 most called statements (pg_stat_statements), per call
// On a machine shared with other work the figures are noisy: compare the two setups within a run.
//
//   npm run build && nice -n 5 node bench/pg-replicas.mjs --claims=breadcrumb
// Options: --calls=2000 --concurrency=16 --replicas=1,3 --claims=auto|lease|breadcrumb --fsync=on|off
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startPgCluster } from '../test/support/pg-cluster-core.mjs';
import { treeCpuMs } from './proc-cpu.mjs';
import { connectCaller } from './_caller.mjs';

const text = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const CALLS = Number(text('calls', 2000));
const CONCURRENCY = Number(text('concurrency', 16));
const SETUPS = text('replicas', '1,3').split(',').map(Number);
const CLAIMS = text('claims', 'auto');
const FSYNC = text('fsync', 'on');
const WARMUP = 30;
const GIVE_UP_MS = 60_000;
if (!['auto', 'lease', 'breadcrumb'].includes(CLAIMS))
  throw new Error(`--claims must be auto, lease or breadcrumb, got "${CLAIMS}"`);
if (!['on', 'off'].includes(FSYNC)) throw new Error(`--fsync must be on or off, got "${FSYNC}"`);

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const KEY = '3c'.repeat(32);
const WS = 'workspace:tools';
const TOOL = 'pg-echo';
const log = (msg) => process.stderr.write(`[pg-replicas] ${msg}\n`);
const round = (x, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? null : round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))], 1);
};

function startReplica(db, dataDir) {
  const proc = spawn(
    process.execPath,
    [
      cli,
      'start',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--db',
      db,
      '--secrets-key',
      KEY,
      '--claims',
      CLAIMS,
      '--admin-port',
      '-1',
      '--no-bootstrap',
    ],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      // Replicas share the runner secret: claim keys (and the lease key) derive from it.
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TOOLS_RUNNER_LOG_LEVEL: 'error',
        TOOLS_RUNNER_RUNNER_SECRET: 'bench-pg-replicas-runner-secret-0123',
      },
    },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const url = /^store listening on (\S+)$/m.exec(out)?.[1];
      if (url && /^runner ready$/m.test(out)) resolve({ proc, url });
    });
    proc.once('exit', (code, signal) => reject(new Error(`replica exited (${code ?? signal})`)));
  });
}

/** A caller's connection to one replica (bench/_caller.mjs): each call resolves with its latency and outcome. */
async function connect(url) {
  const caller = await connectCaller(url, { ridPrefix: `pgr-${url.slice(-5)}`, giveUpMs: GIVE_UP_MS, workspace: WS });
  const call = async () => {
    const { ms, context } = await caller.call(TOOL, { message: 'hi' });
    return { ms, ok: context?.status === 'success' };
  };
  return { client: caller.client, call, close: caller.close };
}

/** The database's statements since the last reset, most called first: [{ calls, query }]. */
async function topStatements(admin, name) {
  return (
    await admin.query(
      `SELECT calls, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY calls DESC LIMIT 12`,
      [name],
    )
  ).rows.map((row) => ({ calls: Number(row.calls), query: row.query.slice(0, 90) }));
}

async function dbCounters(admin, name) {
  const stats = (
    await admin.query(
      `SELECT (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = d.oid) AS statements,
              s.xact_commit AS commits, s.xact_rollback AS rollbacks
         FROM pg_database d JOIN pg_stat_database s ON s.datid = d.oid WHERE d.datname = $1`,
      [name],
    )
  ).rows[0];
  return { statements: Number(stats.statements), commits: Number(stats.commits), rollbacks: Number(stats.rollbacks) };
}

async function measure(cluster, admin, replicas) {
  const name = `pgr_x${replicas}`;
  const db = await cluster.database(name);
  const dir = mkdtempSync(join(tmpdir(), 'bench-pg-replicas-'));
  const procs = [];
  const conns = [];
  try {
    log(`x${replicas}: starting replicas`);
    for (let i = 0; i < replicas; i++) procs.push(await startReplica(db, join(dir, `r${i}`)));
    for (const r of procs) conns.push(await connect(r.url));
    await conns[0].client.createBreadcrumb({
      title: TOOL,
      schema_name: 'tool.code.v1',
      tags: ['tool', `tool:${TOOL}`, WS],
      context: {
        name: TOOL,
        description: 'echoes its message',
        version: '1.0.0',
        code: {
          language: 'typescript',
          source: 'export async function execute(input) { return { message: input.message }; }',
        },
        input_schema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
        output_schema: { type: 'object' },
        permissions: { net: false },
        limits: { timeout_ms: 10_000, memory_mb: 64 },
        examples: [{ description: 'echoes', input: { message: 'x' }, output: { message: 'x' } }],
      },
    });
    await new Promise((r) => setTimeout(r, 1000));
    log(`x${replicas}: warm-up`);
    for (let i = 0; i < WARMUP; i++) await conns[i % replicas].call();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, k) => {
        for (let i = 0; i < 5; i++) await conns[k % replicas].call();
      }),
    );
    log(`x${replicas}: ${CALLS} calls at c${CONCURRENCY}`);
    const pgPid = cluster.postmasterPid();
    const before = {
      runners: procs.map((r) => treeCpuMs(r.proc.pid)),
      pg: treeCpuMs(pgPid).total,
      client: process.cpuUsage(),
      db: await dbCounters(admin, name),
    };
    await admin.query('SELECT pg_stat_statements_reset()');
    const results = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, k) => {
        while (next++ < CALLS) results.push(await conns[k % replicas].call());
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const after = {
      runners: procs.map((r) => treeCpuMs(r.proc.pid)),
      pg: treeCpuMs(pgPid).total,
      client: process.cpuUsage(before.client),
      db: await dbCounters(admin, name),
      top: await topStatements(admin, name),
    };
    const perCall = (x) => round(x / CALLS);
    const runnerMs = after.runners.map((a, i) => a.node - before.runners[i].node);
    const sandboxMs = after.runners.map(
      (a, i) => a.total - a.node - (before.runners[i].total - before.runners[i].node),
    );
    const sum = (xs) => xs.reduce((a, b) => a + b, 0);
    return {
      replicas,
      calls: CALLS,
      concurrency: CONCURRENCY,
      failed_or_gave_up: results.filter((r) => !r.ok).length,
      calls_per_sec: round(CALLS / seconds, 1),
      p50_ms: pct(
        results.map((r) => r.ms),
        50,
      ),
      p99_ms: pct(
        results.map((r) => r.ms),
        99,
      ),
      runner_cpu_ms_per_call: perCall(sum(runnerMs)),
      runner_cpu_ms_per_call_by_replica: runnerMs.map((ms) => round(ms / CALLS)),
      sandbox_cpu_ms_per_call: perCall(sum(sandboxMs)),
      pg_cpu_ms_per_call: perCall(after.pg - before.pg),
      client_cpu_ms_per_call: perCall((after.client.user + after.client.system) / 1000),
      // Since the reset at the start of the window; the reads of the counters themselves are in
      // these figures (a few statements and transactions in all): negligible.
      db_statements_per_call: perCall(after.db.statements),
      db_transactions_per_call: perCall(after.db.commits - before.db.commits),
      db_rollbacks_per_call: perCall(after.db.rollbacks - before.db.rollbacks),
      db_top_statements_per_call: after.top.map((t) => ({ per_call: round(t.calls / CALLS, 2), query: t.query })),
    };
  } finally {
    for (const c of conns) c.close();
    await Promise.all(
      procs.map(
        ({ proc }) =>
          new Promise((r) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return r();
            proc.once('exit', r);
            proc.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  }
}

const cluster = await startPgCluster({
  durable: FSYNC === 'on',
  settings: ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'],
});
const admin = new pg.Client({ connectionString: cluster.url('postgres') });
let exitCode = 1;
try {
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const setups = [];
  for (const replicas of SETUPS) setups.push(await measure(cluster, admin, replicas));
  console.log(
    JSON.stringify(
      {
        bench: 'pg-replicas',
        claims: CLAIMS,
        fsync: FSYNC,
        cores: availableParallelism(),
        loadavg_1m_at_end: round(loadavg()[0], 2),
        setups,
      },
      null,
      1,
    ),
  );
  exitCode = setups.every((s) => s.failed_or_gave_up === 0) ? 0 : 1;
} finally {
  await admin.end().catch(() => {});
  await cluster.stop();
}
process.exit(exitCode);
