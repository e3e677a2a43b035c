// Whole-system figures with real processes: `tools-runner store` + `tools-runner start --store-url`
// (bootstrapped echo tool), driven by a store client in this process.
// Prints { latency_c1_p50_ms, latency_c1_p99_ms, calls_per_sec_saturated, rss_mb_idle,
//          rss_mb_10k_pending_max, pending_at_end, ... }.
//   latency: request breadcrumb created -> its tool.response.v1 event received (concurrency 1)
//   saturation: N requests written at once; calls/s until the last response arrives
//   10k pending: 10,000 requests written while the runner is stopped, then the runner starts;
//                its RSS (the Node process, Deno children not included) is sampled for 20 s
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createStoreClient, openEventStream } from '../dist/breadcrumbs/index.js';
import { silentLogger } from '../dist/logger.js';
import { startCli } from './cli-process.mjs';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const LATENCY_N = arg('latency-n', 300);
const SATURATION_N = arg('saturation-n', 600);
const PENDING_N = arg('pending-n', 10_000);
// --reuse: the operator opts the echo tool into process reuse (see README "Sandbox"); default is strict.
const REUSE = process.argv.includes('--reuse');
// Extra runner flags, e.g. --runner=--pool-size=4
const EXTRA = process.argv.filter((a) => a.startsWith('--runner=')).map((a) => a.slice('--runner='.length));
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-e2e-'));
const procs = new Set();
const log = (msg) => process.stderr.write(`[e2e] ${msg}\n`);

const start = (args) => startCli(args, procs);

const rssMb = (pid) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 100) / 100;
};

async function main() {
  const store = start(['store', '--port', '0', '--data-dir', join(dir, 'store')]);
  const url = (await store.line(/^store listening on /)).replace('store listening on ', '');
  const runnerArgs = ['start', '--store-url', url, '--admin-port', '-1', '--bootstrap-dir', join(root, 'bootstrap-breadcrumbs'), ...(REUSE ? ['--reuse-tools', 'echo'] : []), ...EXTRA];
  let runner = start(runnerArgs);
  await runner.line(/^runner ready$/);
  const logger = silentLogger();
  const client = createStoreClient({ baseUrl: url, logger });
  const controller = new AbortController();
  const answered = new Map();
  const waiting = new Map();
  let connected;
  const ready = new Promise((r) => (connected = r));
  openEventStream({
    client, logger, signal: controller.signal, onConnected: () => connected(),
    onEvent(event) {
      if (event.schema_name !== 'tool.response.v1') return;
      const tag = event.tags?.find((t) => t.startsWith('request:'));
      if (!tag) return;
      const rid = tag.slice(8);
      answered.set(rid, performance.now());
      waiting.get(rid)?.();
    },
  });
  await ready;
  let seq = 0;
  const send = (input = { message: 'hi' }) => {
    const rid = `bench-${process.pid}-${seq++}`;
    return client
      .createBreadcrumb({ title: 'Request: echo', schema_name: 'tool.request.v1', tags: ['tool:request', 'workspace:tools'], context: { tool: 'echo', input, requestId: rid } })
      .then(() => rid);
  };
  const once = async () => {
    const t0 = performance.now();
    const rid = `bench-${process.pid}-${seq++}`;
    const done = new Promise((r) => waiting.set(rid, r));
    await client.createBreadcrumb({ title: 'Request: echo', schema_name: 'tool.request.v1', tags: ['tool:request', 'workspace:tools'], context: { tool: 'echo', input: { message: 'hi' }, requestId: rid } });
    await done;
    waiting.delete(rid);
    return performance.now() - t0;
  };

  log('warm-up');
  for (let i = 0; i < 30; i++) await once();
  const rssIdle = rssMb(runner.proc.pid);
  log(`latency at concurrency 1 (${LATENCY_N} calls)`);
  const lat = [];
  for (let i = 0; i < LATENCY_N; i++) lat.push(await once());

  log(`saturation (${SATURATION_N} requests at once)`);
  const t0 = performance.now();
  const rids = await Promise.all(Array.from({ length: SATURATION_N }, () => send()));
  await Promise.all(rids.map((rid) => (answered.has(rid) ? undefined : new Promise((r) => waiting.set(rid, r)))));
  const saturated = SATURATION_N / ((performance.now() - t0) / 1000);

  log(`10k pending: stopping the runner, writing ${PENDING_N} requests`);
  runner.proc.kill('SIGTERM');
  await new Promise((r) => runner.proc.once('exit', r));
  const pending = [];
  for (let i = 0; i < PENDING_N; i++) pending.push(await send());
  runner = start(runnerArgs);
  await runner.line(/^runner ready$/);
  let rssMax = 0;
  const sampleUntil = performance.now() + 20_000;
  while (performance.now() < sampleUntil) {
    rssMax = Math.max(rssMax, rssMb(runner.proc.pid));
    await new Promise((r) => setTimeout(r, 200));
  }
  const stillPending = pending.filter((rid) => !answered.has(rid)).length;

  controller.abort();
  client.close();
  console.log(JSON.stringify({
    tool: 'echo',
    mode: REUSE ? 'reuse (echo kept warm even under --isolation process)' : EXTRA.some((a) => a.includes('isolation=process') || a.includes('isolation process')) ? 'process (one process per call)' : 'default isolation (warm per tool version)',
    runner_flags: EXTRA,
    latency_c1_p50_ms: pct(lat, 50),
    latency_c1_p99_ms: pct(lat, 99),
    calls_per_sec_saturated: Math.round(saturated * 10) / 10,
    saturation_requests: SATURATION_N,
    rss_mb_idle: Math.round(rssIdle),
    rss_mb_10k_pending_max: Math.round(rssMax),
    pending_written: PENDING_N,
    pending_at_end_of_sampling: stillPending,
  }));
}

try {
  await main();
} finally {
  for (const proc of procs) proc.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
