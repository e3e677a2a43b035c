// The CPU the sandbox guards alone cost the service, with no runner around them: `--parked=N`
// (default 16) sleeping processes watched as parked warm processes are (memory guard + parked CPU
// check) and one watched as a continuous call with `cpu_percent: 10` is (memory guard + duty cycle),
// for `--seconds=S` (default 5) after 1 s of warm-up. Prints JSON: this process's CPU per second.
// Compare two builds by running each copy's bench/guards.mjs alternately (it imports ../dist).
// Needs `npm run build`; on a cgroup v2 machine the guards still sample as in rss-sampling mode here.
import { spawn } from 'node:child_process';
import { createMemoryGuard } from '../dist/sandbox/memory-guard.js';
import { startCpuLimit } from '../dist/sandbox/cpu-limit.js';
import { createParkedCpuChecks } from '../dist/sandbox/pool-cpu-check.js';
import { IDLE_CPU_RULE } from '../dist/sandbox/cpu.js';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const PARKED = arg('parked', 16);
const SECONDS = arg('seconds', 5);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const logger = { info() {}, warn() {}, error() {}, debug() {}, child: () => logger };

const kids = Array.from({ length: PARKED + 1 }, () => spawn('sleep', ['600'], { stdio: 'ignore', detached: true }));
try {
  await sleep(300); // every child has exec'd
  const guard = await createMemoryGuard({ logger, location: null });
  const checks = createParkedCpuChecks(IDLE_CPU_RULE, logger, () => {});
  for (const kid of kids.slice(1)) {
    guard.watch({ pid: kid.pid, limitBytes: 2 ** 30, overLimit() {} });
    checks.add({ pid: kid.pid, key: 'parked' });
  }
  const call = kids[0];
  guard.watch({ pid: call.pid, limitBytes: 2 ** 30, overLimit() {}, sampled() {} });
  const limit = await startCpuLimit({ pid: call.pid, percent: 10 });
  await sleep(1000);
  const before = process.cpuUsage();
  const t0 = performance.now();
  await sleep(SECONDS * 1000);
  const used = process.cpuUsage(before);
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    JSON.stringify({
      parked: PARKED,
      guards_cpu_ms_per_s: Math.round(((used.user + used.system) / 1000 / seconds) * 100) / 100,
    }),
  );
  await limit.end();
  guard.close();
  checks.close();
} finally {
  for (const kid of kids) kid.kill('SIGKILL');
}
process.exit(0);
