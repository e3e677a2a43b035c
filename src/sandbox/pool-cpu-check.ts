// CPU checks of parked reuse processes (pool.ts): a parked process must be idle. Tool code left
// running after its call (a busy timer, a setTimeout chain, a spinning Worker) shows as CPU time,
// read every CPU_CHECK_MS (every 10th tick of the guard clock, guard-clock.ts: in the same wake-up
// as the memory guard's samples); a process over the idle allowance (cpu.ts) is reported busy at
// once, and one is never handed out while busy.

import type { Logger } from '../logger.js';
import { busyWhileParked, openCpuReader, type IdleCpuRule } from './cpu.js';
import { guardClock, TICK_MS } from './guard-clock.js';
import type { SandboxProcess } from './process.js';

/** Guard clock ticks between two CPU checks of the parked processes. */
const CPU_CHECK_TICKS = 10;
/** How often the CPU time of parked reuse processes is read. */
export const CPU_CHECK_MS = CPU_CHECK_TICKS * TICK_MS;

/** The parked processes whose CPU time is watched. */
export interface ParkedCpuChecks {
  /** Starts watching a process parked now. */
  add(proc: SandboxProcess): void;
  /** Stops watching it (handed out, retired or gone). */
  delete(proc: SandboxProcess): void;
  /** When `proc` was parked (performance.now()), if it is watched. */
  parkedSince(proc: SandboxProcess): number | undefined;
  /**
   * Whether `proc` used more CPU than an idle process may; then `onBusy` has been called. At hand-out
   * (`atAcquire`) CPU since the first periodic look counts; a process not yet looked at is idle.
   */
  busy(proc: SandboxProcess, now: number, atAcquire: boolean): boolean;
  close(): void;
}

/** `onBusy` retires a process found busy (it must also delete it from the checks). */
export function createParkedCpuChecks(
  rule: IdleCpuRule,
  logger: Logger,
  onBusy: (proc: SandboxProcess) => void,
): ParkedCpuChecks {
  // per parked process: when parked, CPU ms at the first check after that, and when the grace ended;
  // its /proc/<pid>/stat is opened at that first check (like the memory guard's readers: a process
  // handed out again before any check, as in back-to-back reuse, costs no open and close per call)
  // and stays open while it is parked (one pread per check)
  const parked = new Map<
    SandboxProcess,
    {
      since: number;
      atFirst: number | undefined;
      atGrace: number | undefined;
      cpu: ReturnType<typeof openCpuReader> | undefined;
    }
  >();
  let stopTicks: (() => void) | undefined;

  // The periodic check (atAcquire false) records the CPU time at its first look after parking and
  // after the grace, and judges from there. Nothing is read on the hot path of back-to-back reuse.
  const busy = (proc: SandboxProcess, now: number, atAcquire: boolean): boolean => {
    const entry = parked.get(proc);
    if (!entry || proc.pid === undefined || (atAcquire && entry.atFirst === undefined)) return false;
    entry.cpu ??= openCpuReader(proc.pid);
    const cpu = entry.cpu.read();
    if (cpu === undefined) return false;
    const parkedMs = now - entry.since;
    let from: number;
    if (atAcquire) from = entry.atFirst as number;
    else if (entry.atFirst === undefined) {
      entry.atFirst = cpu;
      return false;
    } else if (entry.atGrace === undefined) {
      if (parkedMs >= rule.graceMs) entry.atGrace = cpu;
      return false;
    } else from = entry.atGrace;
    if (!busyWhileParked(rule, cpu - from, atAcquire ? parkedMs + rule.graceMs : parkedMs)) return false;
    logger.warn('retired a parked reuse process that kept running after its call', {
      key: proc.key,
      pid: proc.pid,
      cpuMs: Math.round(cpu - from),
      parkedMs: Math.round(parkedMs),
    });
    onBusy(proc);
    return true;
  };
  const check = (): void => {
    const now = performance.now();
    for (const proc of [...parked.keys()]) busy(proc, now, false);
  };
  const stop = (): void => {
    stopTicks?.();
    stopTicks = undefined;
  };

  return {
    add(proc) {
      parked.get(proc)?.cpu?.close();
      parked.set(proc, { since: performance.now(), atFirst: undefined, atGrace: undefined, cpu: undefined });
      stopTicks ??= guardClock.every(CPU_CHECK_TICKS, check);
    },
    delete(proc) {
      parked.get(proc)?.cpu?.close();
      parked.delete(proc);
      if (parked.size === 0) stop();
    },
    parkedSince: (proc) => parked.get(proc)?.since,
    busy,
    close() {
      for (const entry of parked.values()) entry.cpu?.close();
      parked.clear();
      stop();
    },
  };
}
