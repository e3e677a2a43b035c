// Whole-system figures with real processes, in one run, printed as one JSON object:
//   bare_boot:   how many `deno run empty.js` processes/s this machine does at -P<cores*2> (the
//                Deno binary of node_modules): the ceiling of one-process-per-call isolation
//   bare_boot_same_flags: the same with the sandbox's command (its flags, env, import map, DENO_DIR
//                nowhere), which boots cheaper; modes.process.share_of_bare_boot_same_flags is against it
//   modes.warm / modes.process: one `tools-runner start` per isolation mode (embedded store by
//                default; --separate-store: `tools-runner store` + `start --store-url`), echo tool:
//     calls_per_sec_c16     N calls (--calls, default 2000) by 16 concurrent callers, each writing a
//                           request and waiting for its tool.response.v1 event before the next
//     max_latency_ms_c16    the slowest of those calls (target <= 1 s); p50/p99 too
//     spaced_p50/p99_ms     calls 50 ms apart (--spaced, default 200): request written -> response event
//     runner_cpu_ms_per_call  utime+stime of the runner process and its helper (spawner or relay launcher; never the
//                           Deno processes), before/after the c16 run, divided by its calls
//     spawner_cpu_ms_per_call   the helper's share of it (the spawner, or the Deno relay launcher)
//     runner_cpu_ms_per_spawn (process mode) its CPU per call minus warm mode's: one spawn's cost
//     steady_calls_per_sec_c16, steady_runner_cpu_ms_per_call (warm) the same c16 run once more, right after:
//                           the runner's per-call cost once V8 has compiled its path (the first run pays
//                           ~250 first-time compilations, once per process; --steady=0 skips it)
//     paced_*               with --paced-rate=R --paced-calls=N: N more calls started R per second (open
//                           loop); paced_runner_cpu_ms_per_call compares the modes at one call rate
//     stage_p50_ms          per-stage p50 of metadata.timings over the c16 run
//     spaced_stage_p50_ms   the same for the spaced calls; spaced_outside_stages_p50_ms: a spaced call's
//                           latency minus its stages (the bench's write, the request's commit and its
//                           event to the runner, the answer's write and its event back to the bench)
//     spaced_floor_p50_ms   (warm) the same spaced calls against bench/_skeleton.mjs in its own process: the runner's
//                           process topology (this client over HTTP and SSE, a warm Deno process over pipes) and
//                           none of its logic; spaced_floor_with_commits_p50_ms adds two SQLite commits (the
//                           request's, the answer's). What is left of spaced_p50 above them is the runner's work
//     deno_cpu_ms_per_call, bench_client_cpu_ms_per_call: the CPU of the runner's Deno processes and of
//                           this client over the c16 run, per call (with the runner's: the machine's cost);
//                           deno_reaped_cpu_ms_per_call: of the processes that ended (process mode's, as
//                           their launcher reaped them)
//     process_floor         (process) the same c16 run against bench/_skeleton.mjs --process: a fresh Deno
//                           process per call through the relay launcher with the sandbox's command, around a
//                           one-shot echo instead of the harness, two commits, none of the runner's logic;
//                           process_floor_share_of_bare_boot bounds share_of_bare_boot, its cpu_ms_per_call
//                           (skeleton + launcher) bounds runner_cpu_ms_per_call; runner_cpu_above_floor_ms and
//                           deno_cpu_above_floor_ms: what the runner's logic and the harness add (--process-floor=0 skips)
//   pending_10k: 10,000 requests written while the runner is stopped (separate store), then a warm
//                runner starts; its RSS (Node process only) is sampled for 20 s
//   mixed:       the shipped self-contained tools (echo, slugify, random, calculator, json-transform),
//                warm runner: each alone at c16 (--mixed-calls each), then all in rotation at c16;
//                rotation_share_of_slowest = rotation calls/s / the slowest single tool's (target >= 0.8),
//                with the rotation's sandbox_wait p50/p90 (target p90 <= 5 ms)
//   timers:      warm runner: 8 calls of `timer` (3 s) written, then one echo: its latency (target
//                <= 100 ms); then 32 timers (3 s) at once: time until the last answer (target <= 4 s)
//   soak:        warm runner, the mixed rotation at c16 for --soak-minutes (default 10), the runner's
//                RSS sampled every 15 s: rss_mb at the start of the last 5 minutes (or the last half of a
//                shorter soak) and at the end; last_window_growth = end / that - 1 (target < 0.10). Two
//                samples 15 s apart can differ by 30 % at a high call rate (the heap's cycles), so also:
//                last_window_trend_growth (the least-squares line through the window's samples: its
//                rise over the window / their mean) and the medians of the window and of the minutes
//                before it (window_median_growth = the window's median / the earlier one's - 1)
// --scenarios=modes,mixed,timers,pending,soak picks scenarios (default: all but soak).
// Soak: node bench/e2e.mjs --scenarios=soak --soak-minutes=10 --boot-n=0
// Quick run: node bench/e2e.mjs --calls=200 --spaced=40 --boot-n=40 --pending-n=0
// Warm-up: --warmup=N sequential calls (default 30), then --warmup-c16=N at --concurrency (default 80);
// the JIT of the runner and of this client is still optimising the c16 path after the default (for
// steady-state CPU per call: --warmup-c16=3000; bench/journal/2026-11-rounds.md, "Warm-only runs")
// Outlier hunt (fresh runner, no warm-up): --modes=process --calls=100 --spaced=0 --boot-n=0 --pending-n=0 --warmup=0
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { buildDenoCommand, IMPORT_MAP_JSON } from '../dist/sandbox/command.js';
import { resolveDeno } from '../dist/sandbox/deno-binary.js';
import { startCli } from './cli-process.mjs';
import { connectCaller } from './_caller.mjs';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const CALLS = arg('calls', 2000);
const CONCURRENCY = arg('concurrency', 16);
const SPACED_N = arg('spaced', 200);
const SPACING_MS = arg('spacing-ms', 50);
const BOOT_N = arg('boot-n', 200);
const PENDING_N = arg('pending-n', 10_000);
const GIVE_UP_MS = arg('give-up-ms', 60_000);
// --process-floor=0 skips process mode's floor (bench/_skeleton.mjs --process) after each process mode
const PROCESS_FLOOR = arg('process-floor', 1) !== 0;
const WARMUP = arg('warmup', 30);
const WARMUP_C16 = arg('warmup-c16', WARMUP > 0 ? 5 * CONCURRENCY : 0);
// --steady=0 skips warm mode's second c16 run (steady_*: the per-call path already compiled by V8)
const STEADY = arg('steady', 1) !== 0;
const PACED_RATE = arg('paced-rate', 0);
const PACED_CALLS = arg('paced-calls', 0);
// A mode may name the runner's launcher: --modes=process@spawner,process@deno-relay,process@spawner,...
// (A/B alternated in one run; each gets its own key: process@spawner, process@spawner#2, ...)
const MODES = (process.argv.find((a) => a.startsWith('--modes='))?.slice('--modes='.length) ?? 'warm,process').split(
  ',',
);
const SEPARATE_STORE = process.argv.includes('--separate-store');
const SCENARIOS = (
  process.argv.find((a) => a.startsWith('--scenarios='))?.slice('--scenarios='.length) ?? 'modes,mixed,timers,pending'
).split(',');
const MIXED_CALLS = arg('mixed-calls', 600);
const SOAK_MINUTES = arg('soak-minutes', 10);
const SOAK_SAMPLE_MS = 15_000;
const TIMER_MS = arg('timer-ms', 3000);
// Extra runner flags, e.g. --runner=--pool-size=4
const EXTRA = process.argv.filter((a) => a.startsWith('--runner=')).map((a) => a.slice('--runner='.length));
// Extra Node flags for the runner process, e.g. --runner-node=--cpu-prof --runner-node=--cpu-prof-dir=/tmp/prof
const RUNNER_NODE = process.argv
  .filter((a) => a.startsWith('--runner-node='))
  .map((a) => a.slice('--runner-node='.length));
// every stage the answer carries (metadata.timings: all but respond)
const STAGES = ['queued', 'claim', 'route', 'validate', 'policy', 'secrets', 'sandbox_wait', 'sandbox_run'];
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-e2e-'));
const procs = new Set();
// --runner-stdout=PREFIX: each runner's stdout is copied to PREFIX.<n>, with the bench's phase lines
// ("### <ms since the runner started> <phase>"); with --runner-node=--trace-opt --runner-node=--trace-deopt,
// bench/_jit-trace-summary.mjs counts V8's optimisations and deopts per phase and function
const RUNNER_STDOUT = process.argv.find((a) => a.startsWith('--runner-stdout='))?.slice('--runner-stdout='.length);
const traced = new Set();
const log = (msg) => {
  process.stderr.write(`[e2e] ${msg}\n`);
  for (const t of traced) t.note(`### ${Math.round(performance.now() - t.at)} ${msg}`);
};
// Extra environment of the runner process, e.g. --runner-env=MALLOC_ARENA_MAX=2
const RUNNER_ENV = Object.fromEntries(
  process.argv
    .filter((a) => a.startsWith('--runner-env='))
    .map((a) => a.slice('--runner-env='.length).split(/=(.*)/s).slice(0, 2)),
);
let copies = 0;
const start = (args, nodeArgs) => {
  const copy = nodeArgs && RUNNER_STDOUT ? `${RUNNER_STDOUT}.${++copies}` : undefined;
  const cli = startCli(args, procs, nodeArgs, nodeArgs ? RUNNER_ENV : {}, copy);
  if (copy) {
    const t = { at: performance.now(), note: cli.note };
    traced.add(t);
    cli.proc.on('exit', () => traced.delete(t));
  }
  return cli;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

const rssMb = (pid) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};
const pct = (xs, p) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))], 3);
};

// /proc/<pid>/stat: comm is in parentheses (may hold spaces); utime, stime are fields 14, 15.
const TICK_MS = 1000 / 100; // USER_HZ is 100 on Linux
const statOf = (pid) => {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const comm = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    comm,
    cpuMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS,
    // cutime + cstime: the children it reaped (a relay launcher's or spawner's finished Deno processes)
    reapedMs: (Number(fields[13]) + Number(fields[14])) * TICK_MS,
  };
};
const childrenOf = (pid) => {
  const out = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
    if (text) out.push(...text.split(' ').map(Number));
  }
  return out;
};
/** CPU ms of the Deno processes below `pid` (children of its spawner helper) that are alive now. */
const denoCpuMs = (pid) => {
  let total = 0;
  const walk = (at, depth) => {
    let kids = [];
    try {
      kids = childrenOf(at);
    } catch {
      return; // exited meanwhile
    }
    for (const child of kids) {
      try {
        const s = statOf(child);
        if (s.comm === 'deno' && !isHelper(child, s.comm)) total += s.cpuMs;
        else if (depth < 2) walk(child, depth + 1);
      } catch {
        // exited meanwhile
      }
    }
  };
  walk(pid, 0);
  return total;
};
/** The runner's helper: its Node spawner, or its Deno relay launcher (a `deno` running relay-launcher.js). */
const isHelper = (pid, comm) => {
  if (comm === 'node') return true;
  if (comm !== 'deno') return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('relay-launcher.js');
  } catch {
    return false;
  }
};
/** The sum of `field` of /proc/<pid>/stat (statOf) over the runner's helper children (spawner or relay launcher). */
const overHelpers = (pid, field) => {
  let total = 0;
  for (const child of childrenOf(pid)) {
    try {
      const s = statOf(child);
      if (isHelper(child, s.comm)) total += s[field];
    } catch {
      // exited meanwhile
    }
  }
  return total;
};
/** CPU ms of the finished processes the runner's helpers reaped (process mode's Deno processes). */
const reapedByHelpersMs = (pid) => overHelpers(pid, 'reapedMs');
/** CPU ms of the runner's helper children (the spawner, or the relay launcher). */
const helperCpuMs = (pid) => overHelpers(pid, 'cpuMs');
/** CPU ms of the runner and its helper children (spawner or relay launcher); sandbox Deno processes never count. */
const runnerCpuMs = (pid) => statOf(pid).cpuMs + overHelpers(pid, 'cpuMs');

/**
 * `deno run empty.js` processes per second at -P<cores*2>. `sameFlags`: with the sandbox's own command
 * (flags, environment, import map, DENO_DIR nowhere: buildDenoCommand), which boots an empty file
 * 0.85-1.2 ms of CPU cheaper than the bare command (bench/journal/2026-11-rounds.md, bench/boot-flags.mjs): process mode's
 * share of that rate is the one no flag of ours flatters.
 */
async function bareBoot(sameFlags, n) {
  const deno = (await resolveDeno()).path;
  const cwd = mkdtempSync(join(dir, 'boot-'));
  writeFileSync(join(cwd, 'empty.js'), '');
  let cmd = {
    file: deno,
    args: ['run', '-q', 'empty.js'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DENO_DIR: join(cwd, '.deno') },
  };
  if (sameFlags) {
    const importMapPath = join(cwd, 'import-map.json');
    writeFileSync(importMapPath, IMPORT_MAP_JSON);
    cmd = buildDenoCommand({ denoPath: deno, net: [], memoryMb: 128, cwd, harnessPath: 'empty.js', importMapPath });
  }
  const parallel = availableParallelism() * 2;
  const once = () =>
    new Promise((resolve, reject) => {
      const child = spawn(cmd.file, cmd.args, { cwd, stdio: 'ignore', env: cmd.env });
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`deno exited ${code}`))));
    });
  for (let i = 0; i < parallel; i++) await once(); // warm the page cache and DENO_DIR
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next++ < n) await once();
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { processes: n, parallel, seconds };
}

/**
 * The bare boot and the same-flags one, each in two halves in the order A B B A, so a load that drifts
 * during the measurement weighs on both alike.
 */
async function bareBoots() {
  if (BOOT_N === 0) return [false, true].map(() => ({ processes: 0, per_sec: NaN }));
  const first = Math.ceil(BOOT_N / 2);
  const halves = [];
  for (const sameFlags of [false, true, true, false])
    halves.push({
      sameFlags,
      ...(await bareBoot(sameFlags, halves.some((h) => h.sameFlags === sameFlags) ? BOOT_N - first : first)),
    });
  return [false, true].map((sameFlags) => {
    const mine = halves.filter((h) => h.sameFlags === sameFlags);
    const seconds = mine.reduce((sum, h) => sum + h.seconds, 0);
    return {
      processes: BOOT_N,
      parallel: mine[0].parallel,
      seconds: round(seconds, 3),
      per_sec: round(BOOT_N / seconds, 1),
    };
  });
}

/** A client of `url` that resolves each call with its response context (bench/_caller.mjs). */
const connect = (url) => connectCaller(url, { giveUpMs: GIVE_UP_MS });

let runs = 0;
async function startRunner(spec) {
  const [mode, launcher] = spec.split('@');
  const dataDir = join(dir, `store-${mode}-${++runs}`);
  const base = [
    '--admin-port',
    '-1',
    '--bootstrap-dir',
    join(root, 'bootstrap-breadcrumbs'),
    '--isolation',
    mode,
    ...(launcher ? ['--sandbox-launcher', launcher] : []),
    ...EXTRA,
  ];
  if (!SEPARATE_STORE) {
    const runner = start(['start', '--port', '0', '--data-dir', dataDir, ...base], RUNNER_NODE);
    const url = (await runner.line(/^store listening on /)).replace('store listening on ', '');
    await runner.line(/^runner ready$/);
    return { runner, url, stop: runner.stop };
  }
  const store = start(['store', '--port', '0', '--data-dir', dataDir]);
  const url = (await store.line(/^store listening on /)).replace('store listening on ', '');
  const runner = start(['start', '--store-url', url, ...base], RUNNER_NODE);
  await runner.line(/^runner ready$/);
  return {
    runner,
    url,
    store,
    stop: async () => {
      await runner.stop();
      await store.stop();
    },
  };
}

/**
 * `n` calls by CONCURRENCY callers, each starting its next call when its last is answered; call `i`
 * is `pick(i)` ([tool, input]; default echo). Resolves with the results in answer order and the seconds taken.
 */
async function atConcurrency(c, n, pick = () => []) {
  const results = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const [tool, input] = pick(next++);
        results.push(await c.call(tool, input));
      }
    }),
  );
  return { results, seconds: (performance.now() - t0) / 1000 };
}

/** SPACED_N echo calls, each SPACING_MS after the last one's answer (nothing else in flight). */
async function spacedCalls(c) {
  const results = [];
  for (let i = 0; i < SPACED_N; i++) {
    await sleep(SPACING_MS);
    results.push(await c.call());
  }
  return results;
}

async function measureMode(mode) {
  log(`${mode}: starting a runner`);
  const { runner, url, stop } = await startRunner(mode);
  const c = await connect(url);
  try {
    log(`${mode}: warm-up`);
    for (let i = 0; i < WARMUP; i++) await c.call();
    // then WARMUP_C16 calls at CONCURRENCY (default 80, 5 per caller)
    await atConcurrency(c, WARMUP_C16);

    log(`${mode}: ${SPACED_N} calls ${SPACING_MS} ms apart`);
    const spacedResults = await spacedCalls(c);
    const spaced = spacedResults.map((r) => r.ms);

    log(`${mode}: ${CALLS} calls at ${CONCURRENCY} concurrent`);
    const pid = runner.proc.pid;
    const cpuBefore = runnerCpuMs(pid);
    const denoBefore = denoCpuMs(pid);
    const benchBefore = process.cpuUsage();
    const helperBefore = helperCpuMs(pid);
    const reapedBefore = reapedByHelpersMs(pid);
    const { results, seconds } = await atConcurrency(c, CALLS);
    log(`${mode}: c${CONCURRENCY} run done`);
    const reapedAfter = reapedByHelpersMs(pid);
    const cpuAfter = runnerCpuMs(pid);
    const denoAfter = denoCpuMs(pid);
    const benchUsage = process.cpuUsage(benchBefore);
    const helperAfter = helperCpuMs(pid);
    const lat = results.map((r) => r.ms);
    const gaveUp = results.filter((r) => r.context === undefined);
    const stageP50 = {};
    for (const stage of STAGES) {
      const values = results.map((r) => r.context?.metadata?.timings?.[stage]).filter((v) => typeof v === 'number');
      stageP50[stage] = pct(values, 50);
    }
    // Where a spaced call's time went: the runner's stages (its answer's metadata) and the rest
    // (the bench's write and the store's commit before the runner learns of the request, the
    // answer's write and its event back to the bench).
    const spacedStageP50 = {};
    for (const stage of STAGES) {
      const values = spacedResults
        .map((r) => r.context?.metadata?.timings?.[stage])
        .filter((v) => typeof v === 'number');
      spacedStageP50[stage] = pct(values, 50);
    }
    const spacedOutside = spacedResults
      .filter((r) => r.context?.metadata?.timings)
      .map((r) => r.ms - Object.values(r.context.metadata.timings).reduce((a, b) => a + b, 0));
    const slowest = [...results].sort((a, b) => b.ms - a.ms)[0];
    // Warm mode: the same c16 run again, now that V8 has compiled the per-call path (~250 first-time
    // TurboFan compilations fall in the first run: bench/journal/2026-11-rounds.md, "JIT and shapes")
    let steady = {};
    if (STEADY && mode.startsWith('warm')) {
      log(`${mode}: ${CALLS} more calls at ${CONCURRENCY} concurrent (steady state)`);
      const steadyCpuBefore = runnerCpuMs(pid);
      const { results: steadyResults, seconds: steadySeconds } = await atConcurrency(c, CALLS);
      steady = {
        steady_calls_per_sec_c16: round(CALLS / steadySeconds, 1),
        steady_runner_cpu_ms_per_call: round((runnerCpuMs(pid) - steadyCpuBefore) / CALLS, 3),
        steady_max_latency_ms_c16: round(Math.max(...steadyResults.map((r) => r.ms)), 1),
        steady_gave_up: steadyResults.filter((r) => r.context === undefined).length,
      };
    }
    // --paced-rate=R --paced-calls=N: N calls started R per second (open loop), whatever the answers
    // do: the runner's CPU per call at one rate in every mode (what a call costs where nothing batches)
    let paced = {};
    if (PACED_RATE > 0 && PACED_CALLS > 0) {
      log(`${mode}: ${PACED_CALLS} calls at ${PACED_RATE} calls/s`);
      const pacedCpuBefore = runnerCpuMs(pid);
      const pacedHelperBefore = helperCpuMs(pid);
      const p0 = performance.now();
      const calls = [];
      for (let i = 0; i < PACED_CALLS; i++) {
        const due = p0 + (i * 1000) / PACED_RATE;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        calls.push(c.call());
      }
      const pacedResults = await Promise.all(calls);
      paced = {
        paced_rate: PACED_RATE,
        paced_calls_per_sec: round(PACED_CALLS / ((performance.now() - p0) / 1000), 1),
        paced_runner_cpu_ms_per_call: round((runnerCpuMs(pid) - pacedCpuBefore) / PACED_CALLS, 3),
        paced_helper_cpu_ms_per_call: round((helperCpuMs(pid) - pacedHelperBefore) / PACED_CALLS, 3),
        paced_p50_ms: pct(
          pacedResults.map((r) => r.ms),
          50,
        ),
        paced_gave_up: pacedResults.filter((r) => r.context === undefined).length,
      };
    }
    return {
      calls_per_sec_c16: round(CALLS / seconds, 1),
      c16_calls: CALLS,
      c16_p50_ms: pct(lat, 50),
      c16_p99_ms: pct(lat, 99),
      max_latency_ms_c16: round(Math.max(...lat), 1),
      slowest_call_timings: slowest?.context?.metadata?.timings ?? null,
      slowest_call: slowest
        ? {
            rid: slowest.rid,
            ms: round(slowest.ms, 1),
            total_ms: slowest.context?.metadata?.total_ms ?? null,
            attempt: slowest.context?.metadata?.attempt ?? null,
          }
        : null,
      gave_up: gaveUp.length,
      spaced_p50_ms: pct(spaced, 50),
      spaced_p99_ms: pct(spaced, 99),
      spaced_calls: SPACED_N,
      spaced_stage_p50_ms: spacedStageP50,
      spaced_outside_stages_p50_ms: pct(spacedOutside, 50),
      runner_cpu_ms_per_call: round((cpuAfter - cpuBefore) / CALLS, 3),
      // every process of the c16 run: the runner (with its embedded store), its Deno processes, this bench client
      deno_cpu_ms_per_call: round((denoAfter - denoBefore) / CALLS, 3),
      // the Deno processes that ended during the run, as their launcher reaped them (process mode's)
      deno_reaped_cpu_ms_per_call: round((reapedAfter - reapedBefore) / CALLS, 3),
      bench_client_cpu_ms_per_call: round((benchUsage.user + benchUsage.system) / 1000 / CALLS, 3),
      // of which the spawner helper's (the rest is the service process's own)
      spawner_cpu_ms_per_call: round((helperAfter - helperBefore) / CALLS, 3),
      stage_p50_ms: stageP50,
      ...steady,
      ...paced,
      rss_mb_after: Math.round(rssMb(pid)),
    };
  } finally {
    c.close();
    await stop();
  }
}

async function pending10k() {
  log(`10k pending: writing ${PENDING_N} requests while no runner runs`);
  const store = start(['store', '--port', '0', '--data-dir', join(dir, 'store-pending')]);
  const url = (await store.line(/^store listening on /)).replace('store listening on ', '');
  const c = await connect(url);
  const answered = new Set();
  const client = c.client;
  const rids = [];
  for (let i = 0; i < PENDING_N; i++) {
    const rid = `pending-${i}`;
    await client.createBreadcrumb({
      title: 'Request: echo',
      schema_name: 'tool.request.v1',
      tags: ['tool:request', 'workspace:tools'],
      context: { tool: 'echo', input: { message: 'hi' }, requestId: rid },
    });
    rids.push(rid);
  }
  const runner = start([
    'start',
    '--store-url',
    url,
    '--admin-port',
    '-1',
    '--bootstrap-dir',
    join(root, 'bootstrap-breadcrumbs'),
    ...EXTRA,
  ]);
  await runner.line(/^runner ready$/);
  let rssMax = 0;
  const sampleUntil = performance.now() + 20_000;
  while (performance.now() < sampleUntil) {
    rssMax = Math.max(rssMax, rssMb(runner.proc.pid));
    await sleep(200);
  }
  const responses = await client.listAll({ schema_name: 'tool.response.v1', tag: 'workspace:tools' });
  for (const r of responses) for (const t of r.tags) if (t.startsWith('request:')) answered.add(t.slice(8));
  c.close();
  await runner.stop();
  await store.stop();
  return {
    written: PENDING_N,
    rss_mb_max: Math.round(rssMax),
    answered_within_20s: rids.filter((rid) => answered.has(rid)).length,
  };
}

// The shipped self-contained tools of the mixed workload, each with an input from its own examples.
const MIXED_TOOLS = [
  ['echo', { message: 'hello, world' }],
  ['slugify', { text: 'Héllo, Wörld! Ça va?' }],
  ['random', { min: 1, max: 6, count: 5 }],
  ['calculator', { expression: '2 + 3 * 4' }],
  [
    'json-transform',
    {
      data: {
        items: [
          { name: 'pen', price: 2 },
          { name: 'lamp', price: 30 },
          { name: 'mug', price: 8 },
        ],
      },
      operations: [{ op: 'get', path: 'items' }],
    },
  ],
];

/** N calls at c16 of `pick(i)` ([tool, input]); calls/s, latencies and stage p50/p90. */
async function burst(c, n, pick) {
  const { results, seconds } = await atConcurrency(c, n, pick);
  const stage = (name, p) =>
    pct(
      results.map((r) => r.context?.metadata?.timings?.[name]).filter((v) => typeof v === 'number'),
      p,
    );
  const failed = results.filter((r) => r.context?.status !== 'success').length;
  return {
    calls_per_sec: round(n / seconds, 1),
    calls: n,
    failed,
    p50_ms: pct(
      results.map((r) => r.ms),
      50,
    ),
    max_ms: round(Math.max(...results.map((r) => r.ms)), 1),
    sandbox_wait_p50_ms: stage('sandbox_wait', 50),
    sandbox_wait_p90_ms: stage('sandbox_wait', 90),
    sandbox_run_p50_ms: stage('sandbox_run', 50),
  };
}

async function mixed() {
  log('mixed: starting a warm runner');
  const { runner, url, stop } = await startRunner('warm');
  const c = await connect(url);
  try {
    for (const [tool, input] of MIXED_TOOLS) for (let i = 0; i < 10; i++) await c.call(tool, input);
    const single = {};
    for (const [tool, input] of MIXED_TOOLS) {
      log(`mixed: ${tool} alone, ${MIXED_CALLS} calls at c${CONCURRENCY}`);
      single[tool] = await burst(c, MIXED_CALLS, () => [tool, input]);
    }
    log(`mixed: rotation, ${MIXED_CALLS * 2} calls at c${CONCURRENCY}`);
    const cpuBefore = runnerCpuMs(runner.proc.pid);
    const rotation = await burst(c, MIXED_CALLS * 2, (i) => MIXED_TOOLS[i % MIXED_TOOLS.length]);
    rotation.runner_cpu_ms_per_call = round((runnerCpuMs(runner.proc.pid) - cpuBefore) / (MIXED_CALLS * 2), 3);
    const slowest = Math.min(...Object.values(single).map((r) => r.calls_per_sec));
    return {
      single,
      rotation,
      slowest_single_calls_per_sec: slowest,
      rotation_share_of_slowest: round(rotation.calls_per_sec / slowest, 3),
      rss_mb_after: Math.round(rssMb(runner.proc.pid)),
    };
  } finally {
    c.close();
    await stop();
  }
}

async function timers() {
  log('timers: starting a warm runner');
  const { url, stop } = await startRunner('warm');
  const c = await connect(url);
  try {
    for (let i = 0; i < 5; i++) await c.call('echo', { message: 'warm-up' });
    await c.call('timer', { ms: 0 });
    log(`timers: 8 x timer ${TIMER_MS} ms, then one echo`);
    const t0 = performance.now();
    const eight = Array.from({ length: 8 }, () => c.call('timer', { ms: TIMER_MS }));
    await sleep(50); // the 8 requests are written and claimed
    const echo = await c.call('echo', { message: 'behind the timers' });
    const eightDone = await Promise.all(eight);
    const eightMs = performance.now() - t0;
    log('timers: 32 x timer at once');
    const t1 = performance.now();
    const many = await Promise.all(Array.from({ length: 32 }, () => c.call('timer', { ms: TIMER_MS })));
    const manyMs = performance.now() - t1;
    return {
      timer_ms: TIMER_MS,
      echo_behind_8_timers_ms: round(echo.ms, 1),
      echo_status: echo.context?.status ?? null,
      eight_timers_all_done_ms: round(eightMs, 0),
      eight_failed: eightDone.filter((r) => r.context?.status !== 'success').length,
      thirty_two_timers_all_done_ms: round(manyMs, 0),
      thirty_two_failed: many.filter((r) => r.context?.status !== 'success').length,
    };
  } finally {
    c.close();
    await stop();
  }
}

/** The mixed rotation at c16 for SOAK_MINUTES; the runner's RSS every 15 s. */
async function soak() {
  log(`soak: starting a warm runner, rotation at c${CONCURRENCY} for ${SOAK_MINUTES} min`);
  const { runner, url, stop, store } = await startRunner('warm');
  const c = await connect(url);
  try {
    for (const [tool, input] of MIXED_TOOLS) for (let i = 0; i < 10; i++) await c.call(tool, input);
    const pid = runner.proc.pid;
    // --separate-store: the store's RSS too (is a growth the runner's or the store's?)
    const storeRss = () => (store ? { store_rss_mb: round(rssMb(store.proc.pid), 1) } : {});
    const durationMs = SOAK_MINUTES * 60_000;
    // the window judged: the last 5 minutes, or the last half of a shorter soak
    const windowMs = Math.min(5 * 60_000, durationMs / 2);
    const samples = [{ s: 0, rss_mb: round(rssMb(pid), 1) }];
    let calls = 0;
    let failed = 0;
    const errors = [];
    let next = 0;
    const t0 = performance.now();
    const end = t0 + durationMs;
    const sampler = setInterval(() => {
      const sample = {
        s: Math.round((performance.now() - t0) / 1000),
        rss_mb: round(rssMb(pid), 1),
        ...storeRss(),
        calls,
      };
      samples.push(sample);
      log(
        `soak: ${sample.s} s, ${calls} calls, rss ${sample.rss_mb} MB${store ? `, store ${sample.store_rss_mb} MB` : ''}`,
      );
    }, SOAK_SAMPLE_MS);
    const cpuBefore = runnerCpuMs(pid);
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < end) {
          const [tool, input] = MIXED_TOOLS[next++ % MIXED_TOOLS.length];
          // a store that does not answer in time is counted, not fatal: the soak goes on
          const r = await c.call(tool, input).catch((err) => {
            errors.push(String(err?.message ?? err));
            return undefined;
          });
          calls++;
          if (r?.context?.status !== 'success') failed++;
        }
      }),
    );
    clearInterval(sampler);
    const seconds = (performance.now() - t0) / 1000;
    const last = { s: Math.round(seconds), rss_mb: round(rssMb(pid), 1), ...storeRss(), calls };
    samples.push(last);
    // the sample nearest the start of the window
    const windowStartS = (durationMs - windowMs) / 1000;
    const atWindow = samples.reduce((best, x) =>
      Math.abs(x.s - windowStartS) < Math.abs(best.s - windowStartS) ? x : best,
    );
    const inWindow = samples.filter((x) => x.s >= windowStartS).map((x) => [x.s, x.rss_mb]);
    const before = samples.filter((x) => x.s > 0 && x.s < windowStartS).map((x) => x.rss_mb);
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const meanOf = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const ms = meanOf(inWindow.map(([t]) => t));
    const mr = meanOf(inWindow.map(([, r]) => r));
    const slope =
      inWindow.reduce((a, [t, r]) => a + (t - ms) * (r - mr), 0) / inWindow.reduce((a, [t]) => a + (t - ms) ** 2, 0);
    const windowMedian = median(inWindow.map(([, r]) => r));
    return {
      minutes: SOAK_MINUTES,
      calls,
      failed,
      errors: errors.length,
      first_errors: [...new Set(errors)].slice(0, 3),
      calls_per_sec: round(calls / seconds, 1),
      runner_cpu_ms_per_call: round((runnerCpuMs(pid) - cpuBefore) / calls, 3),
      window_minutes: round(windowMs / 60_000, 2),
      rss_mb_at_window_start: atWindow.rss_mb,
      rss_mb_at_end: last.rss_mb,
      rss_mb_max: Math.max(...samples.map((x) => x.rss_mb)),
      last_window_growth: round(last.rss_mb / atWindow.rss_mb - 1, 3),
      last_window_trend_growth: round((slope * (windowMs / 1000)) / mr, 3),
      rss_mb_median_before_window: before.length > 0 ? median(before) : null,
      rss_mb_median_window: windowMedian,
      window_median_growth: before.length > 0 ? round(windowMedian / median(before) - 1, 3) : null,
      samples,
    };
  } finally {
    c.close();
    await stop();
  }
}

/** Runs `use(client, skeleton)` against a bench/_skeleton.mjs started with `flags`, then stops it. */
async function withSkeleton(flags, use) {
  const deno = (await resolveDeno()).path;
  const skeleton = startCli([deno, ...flags], procs, [], {}, undefined, join(root, 'bench', '_skeleton.mjs'));
  const url = (await skeleton.line(/^skeleton listening on /)).replace('skeleton listening on ', '');
  const c = await connect(url);
  try {
    return await use(c, skeleton);
  } finally {
    c.close();
    await skeleton.stop();
  }
}

/** Throws when a call against the skeleton got no answer. */
const allAnswered = (results) => {
  const lost = results.find((r) => r.context === undefined);
  if (lost) throw new Error(`skeleton: no answer to ${lost.rid}`);
};

/**
 * Spaced calls (as measureMode's) against bench/_skeleton.mjs: the floor of the spaced p50 on this
 * machine now, for this process topology, with and without the two commits.
 */
const spacedFloor = (commits) =>
  withSkeleton(commits ? ['--commits'] : [], async (c) => {
    for (let i = 0; i < Math.max(WARMUP, 30); i++) await c.call();
    const results = await spacedCalls(c);
    allAnswered(results);
    const ms = results.map((r) => r.ms);
    return { p50: pct(ms, 50), p99: pct(ms, 99) };
  });

/**
 * Process mode's floor: CALLS calls at CONCURRENCY against bench/_skeleton.mjs --process --commits — a
 * fresh Deno process per call through the product's relay launcher, with the sandbox's command around a
 * one-shot echo script, the bench's HTTP and SSE and two commits, and none of the runner's logic nor the
 * harness. Its calls/s against the bare boot bound process mode's share; its CPU per call (the skeleton
 * and its launcher), process mode's runner CPU.
 */
const processFloor = () =>
  withSkeleton(['--commits', '--process'], async (c, skeleton) => {
    await atConcurrency(c, Math.max(WARMUP_C16, 100));
    const pid = skeleton.proc.pid;
    const cpuBefore = runnerCpuMs(pid);
    const helperBefore = helperCpuMs(pid);
    const reapedBefore = reapedByHelpersMs(pid);
    const benchBefore = process.cpuUsage();
    const { results, seconds } = await atConcurrency(c, CALLS);
    const benchUsage = process.cpuUsage(benchBefore);
    allAnswered(results);
    return {
      calls_per_sec: round(CALLS / seconds, 1),
      cpu_ms_per_call: round((runnerCpuMs(pid) - cpuBefore) / CALLS, 3),
      launcher_cpu_ms_per_call: round((helperCpuMs(pid) - helperBefore) / CALLS, 3),
      deno_reaped_cpu_ms_per_call: round((reapedByHelpersMs(pid) - reapedBefore) / CALLS, 3),
      bench_client_cpu_ms_per_call: round((benchUsage.user + benchUsage.system) / 1000 / CALLS, 3),
    };
  });

async function main() {
  log(`bare boot: ${BOOT_N} deno processes`);
  const [bare, bareSameFlags] = await bareBoots();
  const modes = {};
  if (SCENARIOS.includes('modes'))
    for (const mode of MODES) {
      let key = mode;
      for (let n = 2; modes[key]; n++) key = `${mode}#${n}`;
      modes[key] = await measureMode(mode);
      if (mode.startsWith('warm') && SPACED_N > 0) {
        log(`${mode}: the spaced floor (bench/_skeleton.mjs), without and with two commits`);
        const [bareFloor, withCommits] = [await spacedFloor(false), await spacedFloor(true)];
        Object.assign(modes[key], {
          spaced_floor_p50_ms: bareFloor.p50,
          spaced_floor_p99_ms: bareFloor.p99,
          spaced_floor_with_commits_p50_ms: withCommits.p50,
          spaced_above_floor_p50_ms: round(modes[key].spaced_p50_ms - withCommits.p50, 3),
        });
      }
      if (mode.startsWith('process')) {
        modes[key].share_of_bare_boot = round(modes[key].calls_per_sec_c16 / bare.per_sec, 3);
        modes[key].share_of_bare_boot_same_flags = round(modes[key].calls_per_sec_c16 / bareSameFlags.per_sec, 3);
        if (PROCESS_FLOOR) {
          log(
            `${mode}: the process floor (bench/_skeleton.mjs --process): ${CALLS} calls at ${CONCURRENCY} concurrent`,
          );
          const floor = await processFloor();
          Object.assign(modes[key], {
            process_floor: floor,
            process_floor_share_of_bare_boot: round(floor.calls_per_sec / bare.per_sec, 3),
            // what the runner's logic and the harness cost above the floor, per call, in CPU
            runner_cpu_above_floor_ms: round(modes[key].runner_cpu_ms_per_call - floor.cpu_ms_per_call, 3),
            deno_cpu_above_floor_ms: round(
              modes[key].deno_reaped_cpu_ms_per_call - floor.deno_reaped_cpu_ms_per_call,
              3,
            ),
          });
        }
      }
    }
  // every process-mode call consumes one spawn: what it costs the runner beyond a warm call
  if (modes.process && modes.warm)
    modes.process.runner_cpu_ms_per_spawn = round(
      modes.process.runner_cpu_ms_per_call - modes.warm.runner_cpu_ms_per_call,
      3,
    );
  const mixedFigures = SCENARIOS.includes('mixed') ? await mixed() : null;
  const timerFigures = SCENARIOS.includes('timers') ? await timers() : null;
  const pending = PENDING_N > 0 && SCENARIOS.includes('pending') ? await pending10k() : null;
  const soakFigures = SCENARIOS.includes('soak') ? await soak() : null;
  console.log(
    JSON.stringify({
      tool: 'echo',
      cores: availableParallelism(),
      layout: SEPARATE_STORE ? 'tools-runner store + start --store-url' : 'start with its embedded store',
      runner_flags: EXTRA,
      bare_boot: bare,
      bare_boot_same_flags: bareSameFlags,
      modes,
      mixed: mixedFigures,
      timers: timerFigures,
      pending_10k: pending,
      soak: soakFigures,
      targets: {
        warm: 'calls/s >= 600, spaced p50 <= 2 ms, cpu/call <= 1.5 ms',
        process: 'calls/s >= 0.8 x bare boot, spaced p50 <= 5 ms, cpu/call <= 3 ms',
        all: 'max latency c16 <= 1000 ms, rss 10k pending < 300 MB',
        mixed: 'rotation >= 0.8 x slowest single tool, sandbox_wait p90 <= 5 ms',
        timers: 'echo behind 8 timers <= 100 ms, 32 timers done <= 4 s',
        soak: 'runner RSS grows < 10 % over the last 5 minutes of a 10-minute rotation',
      },
    }),
  );
}

try {
  await main();
} finally {
  for (const proc of procs) proc.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
