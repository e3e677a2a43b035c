// `limits.cpu_percent`: the share of one core a sandbox process may use while a call runs.
//
// Two mechanisms, chosen per process:
// - cgroup: the process has its own cgroup v2 with the cpu controller (memory-guard.ts delegation):
//   `cpu.max` is set to `<percent * period> <period>` when the call starts; the kernel's CFS bandwidth
//   control enforces it. It is left in place after the call: the process either exits or, warm,
//   serves only calls of the same tool version with the same limits (the warm key includes them).
// - duty cycle (everywhere else, e.g. cgroup v1 machines): the process's CPU time (utime + stime of all
//   its threads, /proc/<pid>/stat) is sampled every SAMPLE_MS (every 2nd tick of the guard clock,
//   guard-clock.ts: in the same wake-up as the memory guard's samples); when it runs ahead of
//   `percent% x wall time since the call started` by more than BURST_MS, the process (its group, if it
//   leads one) is stopped (SIGSTOP) until wall time has caught up, then continued (SIGCONT). Tool code
//   cannot catch or ignore SIGSTOP. The long-run share converges to the limit; /proc counts CPU time in 10 ms ticks,
//   so the share over short windows (under a second) is coarse.
// A running process is not read while it cannot have run ahead: its CPU time grows at most as fast
// as all the machine's CPUs together (CORES ms per wall ms) while the allowance grows at `percent`%,
// so after a look that leaves `slack` ms of allowance no stop is possible for slack / (CORES - share)
// ms of wall time; the looks in between would only confirm it. The decisions (and their moments, on
// the 20 ms grid) are those of a look every 20 ms, at a fraction of the reads: a continuous tool that
// mostly waits (the shipped scheduler) is read about once a second instead of 50 times.
// States: running -> (stopped <-> running) -> ended. end() always leaves the process continued (a
// warm process is parked afterwards and must not stay stopped) and is idempotent.

import { availableParallelism, cpus } from 'node:os';
import { signalProcess } from '../process-group.js';
import type { ProcessCgroup } from './cgroup.js';
import { openCpuReader } from './cpu.js';
import { guardClock, TICK_MS } from './guard-clock.js';

/** Guard clock ticks between two samples of the duty-cycle mode. */
const SAMPLE_TICKS = 2;
/** Sampling period of the duty-cycle mode. */
export const SAMPLE_MS = SAMPLE_TICKS * TICK_MS;
/** CPU ms a process may run ahead of its share before it is stopped (absorbs the 10 ms /proc tick). */
export const BURST_MS = 30;
/** CPU ms a process can use per wall ms at most: every CPU of the machine (at least the affinity's count). */
const CORES = Math.max(cpus().length, availableParallelism(), 1);
/** cgroup `cpu.max` period in microseconds. */
export const CPU_MAX_PERIOD_US = 100_000;

/** A running CPU limit; end() lifts it (continues a stopped process). */
export interface CpuLimit {
  readonly mode: 'cgroup' | 'duty-cycle';
  /** CPU ms the process used since the limit started (as sampled; after end() the last sample), and wall ms stopped by the limit. */
  stats(): { cpuMs: number; wallMs: number; stoppedMs: number };
  end(): Promise<void>;
}

/**
 * Limits `pid` to `percent` % of one core until end(): cgroup `cpu.max` when `cgroup` supports it,
 * else the duty cycle. `now`, `readCpu` and `cores` are injectable for tests of the arithmetic.
 */
export async function startCpuLimit(options: {
  pid: number;
  /** The process leads a process group of its own (SandboxProcess.grouped): the group is stopped. Default: true. */
  grouped?: boolean;
  percent: number;
  cgroup?: ProcessCgroup | undefined;
  now?: () => number;
  readCpu?: (pid: number) => number | undefined;
  cores?: number;
}): Promise<CpuLimit> {
  const { pid, percent } = options;
  const grouped = options.grouped !== false;
  const now = options.now ?? performance.now.bind(performance);
  // one descriptor of /proc/<pid>/stat for the limit's life (closed by end())
  const reader = options.readCpu ? undefined : openCpuReader(pid);
  const readCpu = options.readCpu ?? ((): number | undefined => reader?.read());
  const share = Math.min(1, Math.max(0.01, percent / 100));
  const startedAt = now();
  const baseCpu = readCpu(pid) ?? 0;
  let lastCpu = 0;
  const used = (): number => {
    const cpu = readCpu(pid);
    if (cpu !== undefined) lastCpu = cpu - baseCpu;
    return lastCpu;
  };

  if (
    options.cgroup?.setCpuMax &&
    (await options.cgroup.setCpuMax(Math.max(1000, Math.round(share * CPU_MAX_PERIOD_US)), CPU_MAX_PERIOD_US))
  ) {
    return {
      mode: 'cgroup',
      stats: () => ({ cpuMs: used(), wallMs: now() - startedAt, stoppedMs: 0 }),
      end: async () => reader?.close(),
    };
  }

  let stopped = false;
  let stoppedAt = 0;
  let stoppedMs = 0;
  let ended = false;
  const cores = options.cores ?? CORES;
  // no look before this moment (now()) can find the running process ahead of its share
  let nextLookAt = startedAt;
  const tick = (): void => {
    if (ended) return;
    const at = now();
    if (!stopped && at < nextLookAt) return;
    const cpu = used();
    const wall = at - startedAt;
    if (!stopped && cpu > share * wall + BURST_MS) {
      stopped = true;
      stoppedAt = now();
      signalProcess(pid, grouped, 'SIGSTOP');
    } else if (stopped && cpu <= share * wall) {
      stopped = false;
      stoppedMs += now() - stoppedAt;
      signalProcess(pid, grouped, 'SIGCONT');
    }
    if (!stopped) nextLookAt = at + Math.max(0, share * wall + BURST_MS - cpu) / Math.max(cores - share, 0.01);
  };
  const stopTicks = guardClock.every(SAMPLE_TICKS, tick);
  return {
    mode: 'duty-cycle',
    stats: () => ({
      cpuMs: used(),
      wallMs: now() - startedAt,
      stoppedMs: stoppedMs + (stopped ? now() - stoppedAt : 0),
    }),
    async end() {
      if (ended) return;
      ended = true;
      stopTicks();
      reader?.close();
      if (stopped) {
        stopped = false;
        stoppedMs += now() - stoppedAt;
        signalProcess(pid, grouped, 'SIGCONT');
      }
    },
  };
}
