// Sandbox benchmark: an echo tool through the real sandbox (compiled dist/), printing ONE JSON object.
//   node bench/sandbox.mjs                    pooled mode and spawn-per-call mode, side by side
//   node bench/sandbox.mjs --spawn-per-call   only the spawn-per-call mode (one fresh process per call)
//   node bench/sandbox.mjs --pooled           only the pooled mode
// Figures: cold_spawn_ms (p50 spawn -> result, no pool), latency p50/p99 at concurrency 1 (pooled,
// `isolation: process`: the pool refilled between calls, i.e. a pre-spawned process is waiting, as
// for sporadic requests), calls/s at concurrency 4 (saturated), RSS per idle pooled process, and
// warm-isolation figures (`isolation: warm`, the default: one process per tool version, a fresh
// module instance per call; `warm_*`, and `reuse_*` as the same figures under their older name).
// `warm_ts_*`: warm calls of a tool with real TypeScript (types, interfaces), transpiled once on the
// host; `warm_ts_deno_transpile_*`: the same with the host transpiler off (Deno transpiles every call).
import { readFileSync, readdirSync } from 'node:fs';
import { defaultConfig } from '../dist/config/index.js';
import { silentLogger } from '../dist/logger.js';
import * as sandboxModule from '../dist/sandbox/index.js';

const { createSandbox } = sandboxModule;

const args = new Set(process.argv.slice(2));
const modes = args.has('--spawn-per-call')
  ? ['spawn_per_call']
  : args.has('--pooled')
    ? ['pooled']
    : ['pooled', 'spawn_per_call'];
const N_LATENCY = Number(process.env.BENCH_N ?? 200);
const N_COLD = 40;
const N_THROUGHPUT = Number(process.env.BENCH_N_THROUGHPUT ?? 400);
const CONCURRENCY = 4;
const POOL_SIZE = 4;

const tool = {
  name: 'echo',
  version: '1.0.0',
  source: 'export async function execute(input: unknown) {\n  return input;\n}\n',
  net: [],
  api: false,
  timeoutMs: 30_000,
  memoryMb: 128,
};
const typedTool = {
  ...tool,
  name: 'echo-typed',
  source: [
    'interface Input { i: number; text: string }',
    'type Output = { i: number; text: string; length: number };',
    'enum Kind { A = 1, B = 2 }',
    // ~200 lines of typed helpers, as a real tool has: transpiling them is what code caching saves
    ...Array.from({ length: 40 }, (_, n) => [
      `interface Row${n}<T extends string | number> { id: T; label: string; tags?: readonly string[] }`,
      `function helper${n}<T extends string | number>(row: Row${n}<T>, scale: number = ${n}): Row${n}<T> & { score: number } {`,
      `  const score: number = (row.tags?.length ?? 0) * scale + (row.label as string).length;`,
      '  return { ...row, score };',
      '}',
    ]).flat(),
    'export async function execute(input: Input): Promise<Output> {',
    '  const kind: Kind = input.i % 2 === 0 ? Kind.A : Kind.B;',
    '  const extra = helper0<number>({ id: input.i, label: input.text }).score - helper39({ id: "x", label: input.text }, 0).score;',
    '  return { i: input.i, text: input.text, length: input.text.length * kind + extra };',
    '}',
  ].join('\n'),
};
const job = (i, t = tool) => ({
  tool: t,
  input: { i, text: 'hello' },
  secrets: {},
  request: { id: `bench-${i}`, workspace: 'workspace:tools' },
});

const log = (...parts) => process.stderr.write(parts.join(' ') + '\n');
const round = (n) => Math.round(n * 100) / 100;
function pct(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(condition, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('bench: timed out waiting for the pool');
    await sleep(1);
  }
}

async function timed(sandbox, i, t) {
  const t0 = performance.now();
  const result = await sandbox.run(job(i, t));
  const ms = performance.now() - t0;
  if (!result.ok) throw new Error(`bench call failed: ${result.error.code} ${result.error.message}`);
  return ms;
}

async function throughput(sandbox, total, t = tool) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < total) await timed(sandbox, next++, t);
    }),
  );
  return round(total / ((performance.now() - t0) / 1000));
}

function parentOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

// Deno processes are children of the spawner helper, itself a child of this process.
function idleRssMb() {
  const values = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = parentOf(entry);
      const ours = ppid === process.pid || parentOf(ppid) === process.pid;
      if (!ours || !readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('harness.ts')) continue;
      const rss = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'));
      if (rss) values.push(Number(rss[1]) / 1024);
    } catch {
      // process went away
    }
  }
  return values.length ? round(values.reduce((a, b) => a + b, 0) / values.length) : null;
}

async function pooled() {
  const reuseTool = { ...tool, name: 'echo-reuse' };
  const config = defaultConfig({
    poolSize: POOL_SIZE,
    poolMax: 16,
    isolation: 'process',
    reuseTools: ['echo-reuse', 'echo-typed'],
    logLevel: 'silent',
  });
  const sandbox = await createSandbox({ config, logger: silentLogger() });
  try {
    await until(() => sandbox.stats().warm === POOL_SIZE);
    const rss = idleRssMb();
    log('pooled: warm, idle RSS per process', rss, 'MB');
    for (let i = 0; i < 10; i++) await timed(sandbox, i);
    const latencies = [];
    for (let i = 0; i < N_LATENCY; i++) {
      await until(() => sandbox.stats().warm === POOL_SIZE);
      latencies.push(await timed(sandbox, i));
    }
    log('pooled: c1 p50', pct(latencies, 50), 'ms');
    await until(() => sandbox.stats().warm === POOL_SIZE);
    const callsPerSecond = await throughput(sandbox, N_THROUGHPUT);
    log('pooled: c4', callsPerSecond, 'calls/s');
    const reuse = [];
    for (let i = 0; i < N_LATENCY; i++) reuse.push(await timed(sandbox, i, reuseTool));
    log('warm: c1 p50', pct(reuse.slice(1), 50), 'ms');
    const reuseCallsPerSecond = await throughput(sandbox, N_THROUGHPUT * 4, reuseTool);
    log('warm: c4', reuseCallsPerSecond, 'calls/s');
    const typed = [];
    for (let i = 0; i < N_LATENCY; i++) typed.push(await timed(sandbox, i, typedTool));
    log('warm typed: c1 p50', pct(typed.slice(1), 50), 'ms');
    const typedCallsPerSecond = await throughput(sandbox, N_THROUGHPUT * 4, typedTool);
    log('warm typed: c4', typedCallsPerSecond, 'calls/s');
    let denoTranspile = {};
    if (sandboxModule.createToolCompiler) {
      const plain = await createSandbox({
        config,
        logger: silentLogger(),
        compiler: await sandboxModule.createToolCompiler(null),
      });
      try {
        const viaDeno = [];
        for (let i = 0; i < N_LATENCY; i++) viaDeno.push(await timed(plain, i, typedTool));
        const viaDenoPerSecond = await throughput(plain, N_THROUGHPUT * 4, typedTool);
        log(
          'warm typed, Deno transpiles per call: c1 p50',
          pct(viaDeno.slice(1), 50),
          'ms; c4',
          viaDenoPerSecond,
          'calls/s',
        );
        denoTranspile = {
          warm_ts_deno_transpile_latency_c1_p50_ms: pct(viaDeno.slice(1), 50),
          warm_ts_deno_transpile_calls_per_s_c4: viaDenoPerSecond,
        };
      } finally {
        await plain.close();
      }
    }
    return {
      ...denoTranspile,
      pool_size: POOL_SIZE,
      latency_c1_p50_ms: pct(latencies, 50),
      latency_c1_p99_ms: pct(latencies, 99),
      calls_per_s_c4: callsPerSecond,
      idle_rss_mb_per_process: rss,
      reuse_latency_c1_p50_ms: pct(reuse.slice(1), 50),
      reuse_latency_c1_p99_ms: pct(reuse.slice(1), 99),
      reuse_calls_per_s_c4: reuseCallsPerSecond,
      warm_latency_c1_p50_ms: pct(reuse.slice(1), 50),
      warm_latency_c1_p99_ms: pct(reuse.slice(1), 99),
      warm_calls_per_s_c4: reuseCallsPerSecond,
      warm_ts_latency_c1_p50_ms: pct(typed.slice(1), 50),
      warm_ts_calls_per_s_c4: typedCallsPerSecond,
      spawned: sandbox.stats().spawned,
    };
  } finally {
    await sandbox.close();
  }
}

async function spawnPerCall() {
  const config = defaultConfig({ poolSize: 0, isolation: 'process', logLevel: 'silent' });
  const sandbox = await createSandbox({ config, logger: silentLogger() });
  try {
    await timed(sandbox, -1);
    const cold = [];
    for (let i = 0; i < N_COLD; i++) cold.push(await timed(sandbox, i));
    log('spawn-per-call: cold p50', pct(cold, 50), 'ms');
    const callsPerSecond = await throughput(sandbox, Math.round(N_THROUGHPUT / 2));
    log('spawn-per-call: c4', callsPerSecond, 'calls/s');
    return {
      cold_spawn_ms: pct(cold, 50),
      latency_c1_p50_ms: pct(cold, 50),
      latency_c1_p99_ms: pct(cold, 99),
      calls_per_s_c4: callsPerSecond,
    };
  } finally {
    await sandbox.close();
  }
}

const out = { tool: 'echo', concurrency: CONCURRENCY };
if (modes.includes('spawn_per_call')) {
  out.spawn_per_call = await spawnPerCall();
  out.cold_spawn_ms = out.spawn_per_call.cold_spawn_ms;
}
if (modes.includes('pooled')) out.pooled = await pooled();
process.stdout.write(JSON.stringify(out) + '\n');
