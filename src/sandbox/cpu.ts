// CPU time of sandbox processes, read from /proc: how the pool notices a parked reuse process that
// still runs tool code (a busy timer, a setTimeout chain, a spinning Worker) after its call ended.

import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

/** Linux USER_HZ: the unit of utime/stime in /proc/<pid>/stat (100 on every mainstream build). */
const TICKS_PER_SECOND = 100;

/** User + system CPU time of `pid` (all its threads) in ms; undefined when the process is gone. */
export function readCpuMs(pid: number): number | undefined {
  try {
    return cpuMsOfStat(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return undefined;
  }
}

/** utime + stime in ms from the text of /proc/<pid>/stat; undefined when it is not such a text. */
function cpuMsOfStat(stat: string): number | undefined {
  // fields after the parenthesised command name: state is field 3, utime 14, stime 15
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = stat.slice(close + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : undefined;
}

/** Fields of /proc/<pid>/stat after the command name's ')': utime is the 12th (state is the 1st). */
const UTIME_AFTER_NAME = 12;

/**
 * utime + stime in ms from the first `n` bytes of /proc/<pid>/stat, read as bytes (no strings: this
 * runs for every limited call every 20 ms and every parked process every 100 ms); undefined when it
 * is not such a text.
 */
function cpuMsOfStatBytes(buffer: Buffer, n: number): number | undefined {
  // the command name may hold spaces and parentheses: the fields start after its last ')'
  let at = buffer.lastIndexOf(0x29, n - 1);
  if (at < 0) return undefined;
  at += 2; // ") "
  for (let field = 1; field < UTIME_AFTER_NAME; field++) {
    at = buffer.indexOf(0x20, at);
    if (at < 0 || at >= n) return undefined;
    at++;
  }
  let ticks = 0;
  for (let field = 0; field < 2; field++, at++) {
    let value = 0;
    let digits = 0;
    for (; at < n; at++, digits++) {
      const c = buffer[at] as number;
      if (c < 0x30 || c > 0x39) break;
      value = value * 10 + (c - 0x30);
    }
    if (digits === 0 || at >= n || buffer[at] !== 0x20) return undefined;
    ticks += value;
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** Longest /proc/<pid>/stat line: 52 numeric fields and a command name of at most 64 bytes. */
const MAX_STAT_BYTES = 2048;

/**
 * A reader of one process's CPU time over a descriptor of /proc/<pid>/stat kept open while it is
 * watched: each sample is one pread at offset 0 (the kernel renders the file afresh) instead of
 * open, fstat, read and close. The duty-cycle CPU limit samples a running call every 20 ms for as
 * long as it runs (a continuous tool: for ever), so this is most of what a limited call costs the
 * service. The descriptor names the process it was opened for: a reused pid is never read by mistake
 * (reads of an exited process fail, and give undefined).
 */
export function openCpuReader(pid: number): { read(): number | undefined; close(): void } {
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/stat`, 'r');
  } catch {
    fd = undefined;
  }
  const buffer = Buffer.alloc(MAX_STAT_BYTES);
  return {
    read() {
      if (fd === undefined) return undefined;
      try {
        return cpuMsOfStatBytes(buffer, readSync(fd, buffer, 0, buffer.length, 0));
      } catch {
        return undefined; // the process is gone
      }
    },
    close() {
      if (fd === undefined) return;
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
      fd = undefined;
    },
  };
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
