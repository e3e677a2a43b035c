// How responsive the service stays while tool code burns CPU: a sandbox (dist/sandbox, the service's
// own) runs --busy calls of a tool that spins for --busy-ms each, at once, over and over; meanwhile
// this process (standing in for the service: the sandbox lives in it) measures
//   lag:   its event loop's delay: --probes times, a 5 ms timer, then 0.5 ms of work; how late the
//          timer fired (ms), p50/p90/p99/max
//   echo:  an echo call every 50 ms (warm: its own warm process), latency p50/p90/max
// and the sessions the busy processes run in (one per process, or shared). With the sandbox processes
// each in a session of its own, a kernel with autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled)
// weighs each as much as the whole service, whatever their niceness.
// --root=DIR runs another checkout's build (an A/B against a copy of a base commit).
// node bench/priority.mjs [--isolation=warm|process] [--busy=8] [--busy-ms=400] [--probes=400] [--root=DIR]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childrenOf, statOf } from './proc-cpu.mjs';

const arg = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const ISOLATION = arg('isolation', 'warm');
const BUSY = Number(arg('busy', 8));
const BUSY_MS = Number(arg('busy-ms', 400));
const PROBES = Number(arg('probes', 400));
const root = arg('root', fileURLToPath(new URL('..', import.meta.url)));
const { createSandbox } = await import(join(root, 'dist/sandbox/index.js'));
const { defaultConfig } = await import(join(root, 'dist/config/index.js'));
const { silentLogger } = await import(join(root, 'dist/logger.js'));

const tool = (name, source) => ({
  name,
  version: '1.0.0',
  source,
  net: [],
  api: false,
  timeoutMs: 60_000,
  memoryMb: 128,
});
const busy = tool(
  'busy',
  'export async function execute(input) { const end = Date.now() + input.ms; let x = 0; while (Date.now() < end) x++; return { x }; }',
);
const echo = tool('echo', 'export async function execute(input) { return input; }');
const job = (t, input) => ({ tool: t, input, secrets: {}, request: { id: 'bench', workspace: 'workspace:tools' } });
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 100) / 100;
};
const autogroup = (() => {
  try {
    return readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';
  } catch {
    return false;
  }
})();

const sandbox = await createSandbox({
  config: defaultConfig({ isolation: ISOLATION, poolSize: 2, logLevel: 'silent' }),
  logger: silentLogger(),
});
await sandbox.run(job(echo, { warm: true }));
await sandbox.run(job(busy, { ms: 1 }));

let stop = false;
const sessions = new Set();
const busyLoops = Array.from({ length: BUSY }, async () => {
  while (!stop) await sandbox.run(job(busy, { ms: BUSY_MS }));
});
const echoes = [];
const echoLoop = (async () => {
  while (!stop) {
    const t0 = performance.now();
    const result = await sandbox.run(job(echo, { hi: 1 }));
    if (result.ok) echoes.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
})();
// the sessions of our sandbox processes (Deno processes running the harness, under our launchers), once mid-run
setTimeout(() => {
  const stack = childrenOf(process.pid);
  while (stack.length > 0) {
    const pid = stack.pop();
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('harness')) sessions.add(statOf(pid).session);
    } catch {
      continue; // exited meanwhile
    }
    stack.push(...childrenOf(pid));
  }
}, 1000);

await new Promise((resolve) => setTimeout(resolve, 500));
const lags = [];
for (let i = 0; i < PROBES; i++) {
  const t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 5));
  const late = performance.now() - t0 - 5;
  const w = performance.now();
  while (performance.now() - w < 0.5);
  lags.push(late);
}
stop = true;
await Promise.all([...busyLoops, echoLoop]);
await sandbox.close();

console.log(
  JSON.stringify({
    isolation: ISOLATION,
    busy: BUSY,
    busy_ms: BUSY_MS,
    autogroup,
    busy_sessions_seen: sessions.size,
    lag_ms: { p50: pct(lags, 50), p90: pct(lags, 90), p99: pct(lags, 99), max: pct(lags, 100) },
    echo_ms: { calls: echoes.length, p50: pct(echoes, 50), p90: pct(echoes, 90), max: pct(echoes, 100) },
  }),
);
