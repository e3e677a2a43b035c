// CPU time of sandbox processes, read from /proc: how the pool notices a parked reuse process that
// still runs tool code (a busy timer, a setTimeout chain, a spinning Worker) after its call ended.

import { readFileSync } from 'node:fs';

/** Linux USER_HZ: the unit of utime/stime in /proc/<pid>/stat (100 on every mainstream build). */
const TICKS_PER_SECOND = 100;

/** User + system CPU time of `pid` (all its threads) in ms; undefined when the process is gone. */
export function readCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // fields after the parenthesised command name: state is field 3, utime 14, stime 15
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : undefined;
  } catch {
    return undefined;
  }
}

/** How a parked process's CPU use is judged (see parkedCpuVerdict). */
export interface IdleCpuRule {
  /** CPU used in the first graceMs after parking is not counted (GC and finalisers of the call). */
  graceMs: number;
  /** CPU ms a parked process may use after the grace... */
  allowanceMs: number;
  /** ...plus this fraction of the time it has been parked (rare timers of an idle runtime). */
  allowanceFraction: number;
}

/** Measured: an idle parked Deno uses 0 ticks; a `setTimeout(f, 0)` chain doing little work ~5%. */
export const IDLE_CPU_RULE: IdleCpuRule = { graceMs: 200, allowanceMs: 30, allowanceFraction: 0.01 };

/** Whether a process parked for `parkedMs` that used `usedMs` CPU since the grace ended is busy. */
export function busyWhileParked(rule: IdleCpuRule, usedMs: number, parkedMs: number): boolean {
  return usedMs > rule.allowanceMs + rule.allowanceFraction * Math.max(0, parkedMs - rule.graceMs);
}
