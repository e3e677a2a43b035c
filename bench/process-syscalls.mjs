// Syscalls and CPU per process-mode call of the runner and its Deno relay launcher, counted rather
// than timed (the counts do not depend on the machine's load): one `tools-runner start --isolation
// process` (embedded store, echo tool), --warmup calls, then `strace -c` attached to every thread of the
// service and of the launcher (not their children) during --calls calls at --concurrency, printed as
// one JSON object of per-call counts of the interesting syscalls (each side's frames are its reads and
// writes of the other's pipe; epoll waits are its wake-ups), and a second run of the same calls without
// strace for the CPU (utime+stime) per call of each (strace slows the processes it traces).
// --root=DIR runs another checkout's build (DIR/dist, DIR/sandbox: a copy of a base commit for an A/B).
// Run: npm run build && node bench/process-syscalls.mjs [--calls=400] [--concurrency=1] [--warmup=300]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { statOf } from './proc-cpu.mjs';

const arg = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const CALLS = Number(arg('calls', 400));
const CONCURRENCY = Number(arg('concurrency', 1));
const WARMUP = Number(arg('warmup', 300));
const root = arg('root', fileURLToPath(new URL('..', import.meta.url)));
const { startCli } = await import(join(root, 'bench/cli-process.mjs'));
const { connectCaller } = await import(join(root, 'bench/_caller.mjs'));
const COUNTED = ['read', 'write', 'writev', 'epoll_pwait', 'epoll_wait', 'futex', 'kill', 'clone3', 'wait4'];

const dir = mkdtempSync(join(tmpdir(), 'bench-process-syscalls-'));
const runner = startCli([
  'start',
  ...['--port', '0', '--data-dir', join(dir, 'data'), '--admin-port', '-1'],
  ...['--bootstrap-dir', join(root, 'bootstrap-breadcrumbs'), '--isolation', 'process'],
]);
try {
  const url = (await runner.line(/^store listening on /)).replace('store listening on ', '');
  await runner.line(/^runner ready$/);
  const caller = await connectCaller(url);
  const calls = async (n) => {
    let started = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (started++ < n) await caller.call();
      }),
    );
  };
  await calls(WARMUP);
  const service = runner.proc.pid;
  const launcher = readdirSync(`/proc/${service}/task`)
    .flatMap((tid) => readFileSync(`/proc/${service}/task/${tid}/children`, 'utf8').trim().split(' '))
    .filter(Boolean)
    .map(Number)
    .find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('relay-launcher'));
  if (launcher === undefined) throw new Error('no relay launcher under the runner');
  const cpu = () => ({ service: statOf(service).selfMs, launcher: statOf(launcher).selfMs });

  const before = cpu();
  await calls(CALLS);
  const after = cpu();

  const tracers = [];
  for (const [name, pid] of [
    ['service', service],
    ['launcher', launcher],
  ]) {
    const out = join(dir, `${name}.strace`);
    const tids = readdirSync(`/proc/${pid}/task`).flatMap((tid) => ['-p', tid]);
    const tracer = spawn('strace', ['-c', '-o', out, ...tids], { stdio: 'ignore' });
    tracers.push({ name, out, tracer, exited: new Promise((resolve) => tracer.once('exit', resolve)) });
  }
  await new Promise((resolve) => setTimeout(resolve, 1500)); // (strace attaches)
  await calls(CALLS);
  const counts = {};
  for (const { name, out, tracer, exited } of tracers) {
    tracer.kill('SIGINT');
    await exited;
    counts[name] = {};
    for (const line of readFileSync(out, 'utf8').split('\n')) {
      const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$/.exec(line);
      if (m && COUNTED.includes(m[2])) counts[name][m[2]] = Math.round((Number(m[1]) / CALLS) * 100) / 100;
    }
  }
  const perCall = (key) => Math.round(((after[key] - before[key]) / CALLS) * 1000) / 1000;
  console.log(
    JSON.stringify({
      root,
      calls: CALLS,
      concurrency: CONCURRENCY,
      cpu_ms_per_call: { service: perCall('service'), launcher: perCall('launcher') },
      syscalls_per_call: counts,
    }),
  );
} finally {
  await runner.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
