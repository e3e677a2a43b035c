// What a change to the sandbox process's command (V8 flags, Deno flags, environment) does to one sandbox
// Deno process: CPU (utime+stime, and the kernel's share), minor page faults, RSS; per variant and per
// workload, in alternated rounds. Prints one JSON object.
//   empty:     an empty file as the entry (Deno's own boot with the variant's command)
//   harness:   the entry the service writes (prepareHarness), stdin at EOF: boot, hello, exit
//   echo:      the harness with one echo job on stdin, as a process-mode call (reuse false); the tool
//              as its module factory, as the service sends it
//   echo_import: the same, the tool loaded by a data: import (the service before 7e33923)
//   json:      the same with a CPU-heavy tool (JSON.stringify/parse of a 200-item document, --json-n times)
//   json_warm: one process serving --warm-calls calls of that tool one after another, as warm mode
//              (the module factory, compiled once): CPU per call and the median wall time of a call
// tool_work_ms: the median time the JSON tool measured for its own work (performance.now() around it),
// the latency a CPU-heavy call sees apart from the boot.
// CPU and faults of the batch entries are the reaped children's totals of this process (/proc/self/stat
// cutime+cstime, cminflt: exact sums, CPU read in 10 ms ticks), so each batch of --runs processes is
// timed at once; RSS is the median of 5 runs under /usr/bin/time (max RSS), taken after the rounds.
// node bench/boot-flags.mjs [--runs=40] [--rounds=4] [--variants=base,single_threaded] [--entries=empty,echo]
//                           [--json-n=400] [--warm-calls=30]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sandboxCommand } from './_boot-cpu.mjs';
import { resolveDeno } from '../dist/sandbox/deno-binary.js';
import { prepareHarness } from '../dist/sandbox/harness-file.js';
import { createToolCompiler } from '../dist/sandbox/transpile.js';

const option = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const count = (name, fallback) => {
  const raw = option(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got ${raw}`);
  return value;
};
const RUNS = count('runs', 40);
const ROUNDS = count('rounds', 4);
const JSON_N = count('json-n', 400);
const WARM_CALLS = count('warm-calls', 30);
const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Each variant changes the command buildDenoCommand returns: V8 flags added, Deno flags added/removed, env. */
const VARIANTS = {
  base: {},
  single_threaded: { v8: ['--single-threaded'] },
  single_threaded_gc: { v8: ['--single-threaded-gc'] },
  no_concurrent_recompilation: { v8: ['--no-concurrent-recompilation'] },
  semi_space_1: { v8: ['--max-semi-space-size=1'] },
  semi_space_min_1: { v8: ['--min-semi-space-size=1'] },
  initial_heap_4: { v8: ['--initial-heap-size=4'] },
  no_opt: { v8: ['--no-opt'] },
  max_lazy: { v8: ['--max-lazy'] },
  stack_size_500: { v8: ['--stack-size=500'] },
  deno_flags: { args: ['--node-modules-dir=none', '--cached-only', '--no-check'], env: { DENO_NO_PROMPT: '1' } },
  code_cache_on: { drop: ['--no-code-cache'] },
  // bench/e2e.mjs's bare boot (the reference of process mode's target): `deno run -q <entry>`, no flags,
  // a DENO_DIR of its own (it caches there)
  bare: { bare: true },
  // not candidates (the import map and the deny list are security): what they cost
  no_import_map: { drop: ['--import-map'] },
  no_deny_net: { drop: ['--deny-net'] },
  no_tls_ca_env: { unset: ['DENO_TLS_CA_STORE'] },
  malloc_arena_1: { env: { MALLOC_ARENA_MAX: '1' } },
  thp_malloc: { env: { GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' } },
};

const ECHO = readFileSync(new URL('../bootstrap-breadcrumbs/tools-self-contained/echo.json', import.meta.url), 'utf8');
const echoSource = JSON.parse(ECHO).context.code.source;
const jsonSource = `
export async function execute(input: { n: number }) {
  const doc = { items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: 'item ' + i, tags: ['a', 'b', 'c'], score: i * 1.5 })) };
  let total = 0;
  const t0 = performance.now();
  for (let i = 0; i < input.n; i++) total += JSON.parse(JSON.stringify(doc)).items.length;
  return { total, ms: performance.now() - t0 };
}
`;

const deno = (await resolveDeno()).path;
const harness = await prepareHarness();
const compiler = await createToolCompiler();
const dir = mkdtempSync(join(tmpdir(), 'boot-flags-'));
const emptyPath = join(dir, 'empty.js');
writeFileSync(emptyPath, '');

// A job as the service sends it: the tool's module factory (compiled by the harness as a script) when the
// tool can be one; `imported` sends the module itself, loaded by a data: import (before 7e33923).
const jobLine = (source, input, reuse, seq = 1, imported = false) => {
  const tool = compiler.compile(source);
  const factory = !imported && tool.factory ? { id: tool.factory.id, code: tool.factory.code } : undefined;
  return `${JSON.stringify({
    // the host's nonce, in a process's first job only (src/sandbox/process.ts)
    ...(seq === 1 ? { nonce: randomBytes(16).toString('hex') } : {}),
    t: 'job',
    seq,
    source64: factory ? '' : tool.source64,
    lang: tool.lang,
    ...(factory ? { factory: seq === 1 ? factory : { id: factory.id } } : {}),
    input,
    secrets: {},
    request: { id: `bench-${seq}`, workspace: 'workspace:tools' },
    maxResultBytes: 1 << 20,
    reuse,
  })}\n`;
};
const ENTRIES = {
  empty: { path: emptyPath, input: '' },
  harness: { path: harness.path, input: '' },
  echo: { path: harness.path, input: jobLine(echoSource, { message: 'hello' }, false) },
  echo_import: { path: harness.path, input: jobLine(echoSource, { message: 'hello' }, false, 1, true) },
  json: { path: harness.path, input: jobLine(jsonSource, { n: JSON_N }, false) },
  json_warm: { path: harness.path, warm: true },
};

function commandOf(variant, entryPath) {
  if (variant.bare) {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DENO_DIR: join(dir, 'bare-deno-dir') };
    return { file: deno, args: ['run', '-q', entryPath], env, cwd: dir };
  }
  const cmd = sandboxCommand(deno, harness, entryPath);
  let args = cmd.args.filter((a) => !(variant.drop ?? []).some((d) => a === d || a.startsWith(`${d}=`)));
  if (variant.v8) args = args.map((a) => (a.startsWith('--v8-flags=') ? [a, ...variant.v8].join(',') : a));
  if (variant.args) args.splice(args.indexOf(entryPath), 0, ...variant.args);
  const env = { ...cmd.env, ...(variant.env ?? {}) };
  for (const name of variant.unset ?? []) delete env[name];
  return { ...cmd, args, env };
}

/** Reaped children's CPU (user, system, ms) and minor faults of this process. */
function reaped() {
  const text = readFileSync('/proc/self/stat', 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { user: Number(f[13]) * 10, sys: Number(f[14]) * 10, faults: Number(f[8]) };
}

function check(name, run) {
  if (run.status !== 0) throw new Error(`${name}: deno exited ${run.status}: ${String(run.stderr).slice(0, 300)}`);
  const out = String(run.stdout);
  if (name !== 'empty' && !out.startsWith('TRH2')) throw new Error(`${name}: no harness hello: ${out.slice(0, 80)}`);
  if (ENTRIES[name].input !== '' && !/R1 \{/.test(out)) throw new Error(`${name}: no result: ${out}`);
  return toolMs(out, 1);
}

/** The `ms` the JSON tool reports for its own work (the call's result frame `R<seq> {...}`), if any. */
function toolMs(out, seq) {
  const at = out.indexOf(`R${seq} {`);
  if (at === -1) return undefined;
  const json = out.slice(at + `R${seq} `.length, out.indexOf('\n', at));
  return JSON.parse(json).ms;
}

/**
 * One process, its stdin kept open until it exits (as the service does: EOF before the result makes the
 * harness exit); resolves with what check() reads.
 */
function runOnce(cmd, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd.file, cmd.args, { env: cmd.env, cwd: cmd.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdin.on('error', () => undefined);
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    if (input === '') child.stdin.end();
    else child.stdin.write(input);
  });
}

/** One batch of RUNS processes in turn: per process CPU (user, sys), faults, wall. */
async function batch(variant, name) {
  const entry = ENTRIES[name];
  const cmd = commandOf(variant, entry.path);
  const before = reaped();
  const t0 = performance.now();
  const work = [];
  for (let i = 0; i < RUNS; i++) work.push(check(name, await runOnce(cmd, entry.input)));
  const wall = (performance.now() - t0) / RUNS;
  const after = reaped();
  const user = (after.user - before.user) / RUNS;
  const sys = (after.sys - before.sys) / RUNS;
  const toolWork = work.filter((ms) => ms !== undefined);
  return {
    cpu: user + sys,
    sys,
    faults: (after.faults - before.faults) / RUNS,
    wall,
    tool: toolWork.length > 0 ? median(toolWork) : undefined,
  };
}

/** One warm process serving WARM_CALLS calls in turn: CPU per call, median wall per call, VmHWM. */
async function warm(variant) {
  const cmd = commandOf(variant, harness.path);
  const before = reaped();
  const child = spawn(cmd.file, cmd.args, { env: cmd.env, cwd: cmd.cwd, stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  let out = '';
  let waiting;
  child.stdout.on('data', (chunk) => {
    out += chunk;
    waiting?.();
  });
  const until = async (test) => {
    while (!test()) await new Promise((resolve) => (waiting = resolve));
  };
  await until(() => out.startsWith('TRH2'));
  const walls = [];
  const work = [];
  for (let seq = 1; seq <= WARM_CALLS; seq++) {
    const t0 = performance.now();
    child.stdin.write(jobLine(jsonSource, { n: JSON_N }, true, seq));
    await until(() => out.includes(`R${seq} {`) && out.indexOf('\n', out.indexOf(`R${seq} {`)) !== -1);
    walls.push(performance.now() - t0);
    work.push(toolMs(out, seq));
  }
  const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024;
  child.stdin.end();
  await exited;
  const after = reaped();
  const calls = WARM_CALLS;
  return {
    cpu: (after.user - before.user + after.sys - before.sys) / calls,
    sys: (after.sys - before.sys) / calls,
    faults: (after.faults - before.faults) / calls,
    wall: median(walls),
    tool: median(work),
    rss: hwm,
  };
}

/** Median max RSS (MB) of 5 runs under /usr/bin/time. */
async function rssOf(variant, name) {
  const entry = ENTRIES[name];
  const cmd = commandOf(variant, entry.path);
  const xs = [];
  for (let i = 0; i < 5; i++) {
    const run = await runOnce(
      { ...cmd, file: '/usr/bin/time', args: ['-f', 'RSS %M', cmd.file, ...cmd.args] },
      entry.input,
    );
    const m = /RSS (\d+)/.exec(run.stderr);
    if (m) xs.push(Number(m[1]) / 1024);
  }
  return xs.length > 0 ? median(xs) : NaN;
}

const pick = (raw, all, what) => {
  const names = raw === undefined ? Object.keys(all) : raw.split(',');
  for (const n of names) if (!(n in all)) throw new Error(`unknown ${what} ${JSON.stringify(n)}`);
  return names;
};
const variantNames = pick(option('variants'), VARIANTS, 'variant');
const entryNames = pick(option('entries') ?? 'empty,harness,echo', ENTRIES, 'entry');

try {
  const load = [loadavg()[0]];
  const figures = {};
  for (const v of variantNames) figures[v] = Object.fromEntries(entryNames.map((e) => [e, []]));
  for (const e of entryNames) if (!ENTRIES[e].warm) await batch(VARIANTS.base, e); // page cache, and a check
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? variantNames : [...variantNames].reverse();
    for (const e of entryNames)
      for (const v of order)
        figures[v][e].push(ENTRIES[e].warm ? await warm(VARIANTS[v]) : await batch(VARIANTS[v], e));
    load.push(loadavg()[0]);
    process.stderr.write(`round ${r + 1}/${ROUNDS} done, load ${loadavg()[0].toFixed(2)}\n`);
  }
  const out = {
    runs_per_round: RUNS,
    rounds: ROUNDS,
    json_n: JSON_N,
    warm_calls: WARM_CALLS,
    load_average: { min: round(Math.min(...load)), max: round(Math.max(...load)) },
    variants: {},
  };
  for (const v of variantNames) {
    out.variants[v] = {};
    for (const e of entryNames) {
      const xs = figures[v][e];
      const baseCpu = mean(figures[variantNames[0]][e].map((x) => x.cpu));
      out.variants[v][e] = {
        cpu_ms: round(mean(xs.map((x) => x.cpu))),
        vs_first: round(mean(xs.map((x) => x.cpu)) - baseCpu),
        cpu_rounds: xs.map((x) => round(x.cpu)),
        sys_ms: round(mean(xs.map((x) => x.sys))),
        faults: Math.round(mean(xs.map((x) => x.faults))),
        wall_ms: round(ENTRIES[e].warm ? median(xs.map((x) => x.wall)) : mean(xs.map((x) => x.wall))),
        ...(xs[0].tool !== undefined ? { tool_work_ms: round(median(xs.map((x) => x.tool))) } : {}),
        rss_mb: round(ENTRIES[e].warm ? median(xs.map((x) => x.rss)) : await rssOf(VARIANTS[v], e), 1),
      };
    }
  }
  // one line per variant and workload
  const lines = JSON.stringify(out, null, 1)
    .replace(/\n {3,}/g, ' ')
    .replace(/\n {2}\]/g, ']')
    .replace(/\n {2}\}/g, ' }');
  console.log(lines);
} finally {
  rmSync(dir, { recursive: true, force: true });
  await harness.remove();
}
