// The CPU an idle runner spends: `start` with its embedded store and the shipped tools, a mixed load of
// 1,000 calls at c16 (so its warm pool is full of parked processes), then nothing. Prints JSON: the
// runner's CPU per second of idleness (all its threads), per thread, and how many Deno processes it
// keeps. `--wait-ms=N` (default 3000) waits that long after the load before measuring for
// `--measure-ms=N` (default 20000): past --pool-idle-ms (60 s) the parked processes are retired and
// only the continuous tools' processes remain. Node flags after `--` go to the runner (e.g. --cpu-prof).
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectCaller } from './_caller.mjs';
import { startCli } from './cli-process.mjs';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const WAIT_MS = arg('wait-ms', 3000);
const MEASURE_MS = arg('measure-ms', 20_000);
const dashes = process.argv.indexOf('--');
const nodeArgs = dashes < 0 ? [] : process.argv.slice(dashes + 1);
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-idle-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** utime+stime ms of every thread of `pid`, by "tid:name". */
const threads = (pid) => {
  const out = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    out[`${tid}:${name}`] = (Number(f[11]) + Number(f[12])) * 10;
  }
  return out;
};
/** Deno processes below `pid` (through the spawner helper). */
const denoCount = (pid, depth = 0) => {
  let n = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const kids = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(' ').filter(Boolean);
    for (const kid of kids) {
      try {
        if (readFileSync(`/proc/${kid}/comm`, 'utf8').trim() === 'deno') n++;
        else if (depth < 2) n += denoCount(kid, depth + 1);
      } catch {
        // exited meanwhile
      }
    }
  }
  return n;
};

const procs = new Set();
const runner = startCli(
  [
    'start',
    '--port',
    '0',
    '--data-dir',
    join(dir, 'store'),
    '--admin-port',
    '-1',
    '--bootstrap-dir',
    join(root, 'bootstrap-breadcrumbs'),
  ],
  procs,
  nodeArgs,
  {},
);
try {
  const url = (await runner.line(/^store listening on /)).replace('store listening on ', '');
  await runner.line(/^runner ready$/);
  const c = await connectCaller(url);
  const tools = [
    ['echo', { message: 'hi' }],
    ['slugify', { text: 'Hello World' }],
    ['random', {}],
    ['calculator', { expression: '1+2' }],
    ['json-transform', { data: { a: 1 }, template: { b: '$.a' } }],
  ];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < 1000) {
        const [tool, input] = tools[next++ % tools.length];
        await c.call(tool, input);
      }
    }),
  );
  const pid = runner.proc.pid;
  await sleep(WAIT_MS);
  const before = threads(pid);
  const t0 = performance.now();
  await sleep(MEASURE_MS);
  const after = threads(pid);
  const seconds = (performance.now() - t0) / 1000;
  const perThread = {};
  let total = 0;
  for (const [key, ms] of Object.entries(after)) {
    const used = ms - (before[key] ?? 0);
    total += used;
    if (used > 0) perThread[key] = Math.round((used / seconds) * 10) / 10;
  }
  console.log(
    JSON.stringify({
      wait_ms: WAIT_MS,
      deno_processes: denoCount(pid),
      idle_cpu_ms_per_s: Math.round((total / seconds) * 10) / 10,
      per_thread_ms_per_s: perThread,
    }),
  );
} finally {
  await runner.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
