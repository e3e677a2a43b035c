// Enforces a sandbox process's total memory (heap + ArrayBuffers + runtime), beyond the V8 heap flag.
//
// Mode 'cgroup': each process gets its own cgroup v2 with memory.max, set before its job is sent;
// the kernel kills it over the limit and memory.events tells us so (RSS is still sampled, without
// killing, as evidence for heap-OOM deaths: outcome.ts). Mode 'rss-sampling' (cgroup v1
// machines, no delegation): while a process runs tool code or is parked, its RSS is read from /proc
// every SAMPLE_INTERVAL_MS and the process group is SIGKILLed over the limit. An ArrayBuffer loop
// that touches its pages grows at roughly 0.5-5 GB/s, so the overshoot stays in the tens of MB.
// The samples run on the sandbox's one guard clock (guard-clock.ts), in the same wake-up as the
// CPU guards, and only while something is watched.

import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import type { Logger } from '../logger.js';
import {
  createProcessCgroup,
  locateOwnCgroup,
  probeCgroup,
  type CgroupLocation,
  type ProcessCgroup,
} from './cgroup.js';
import { guardClock, TICK_MS } from './guard-clock.js';
import type { MemoryEnforcement } from './types.js';

/** Allowance for the Deno runtime itself (idle RSS is ~32 MB) on top of a tool's memoryMb heap. */
export const RUNTIME_OVERHEAD_MB = 64;
/** RSS sampling period in rss-sampling mode: every tick of the guard clock. */
export const SAMPLE_INTERVAL_MS = TICK_MS;

const MIB = 1024 * 1024;

/** Something whose memory is watched: a live process and how to kill it. */
export interface Watched {
  readonly pid: number;
  readonly limitBytes: number;
  /** Called once when the limit is exceeded (rss-sampling mode; in cgroup mode the kernel kills). */
  overLimit(rssBytes: number): void;
  /** Called with every sample (both modes): the host's own record of the process's memory. */
  sampled?(rssBytes: number): void;
}

/** The active memory enforcement, shared by all processes of a sandbox. */
export interface MemoryGuard {
  readonly mode: MemoryEnforcement;
  /** Total bytes a process with this heap size may use. */
  limitBytes(memoryMb: number): number;
  /** cgroup mode: a memory-limited cgroup holding `pid`; undefined in rss-sampling mode. */
  confine(pid: number, name: string, memoryMb: number): Promise<ProcessCgroup | undefined>;
  /** Starts sampling `target`'s RSS (both modes; only rss-sampling mode kills over the limit). */
  watch(target: Watched): void;
  unwatch(target: Watched): void;
  close(): void;
}

const RSS_LINE = /^VmRSS:\s+(\d+) kB/m;
/** Largest /proc/<pid>/status read (65,536 supplementary groups take ~450 KB). */
const MAX_STATUS_BYTES = 4 * 1024 * 1024;

/** Reads VmRSS of `pid` in bytes; undefined when the process is gone. */
export function readRssBytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const match = RSS_LINE.exec(status);
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** AT_PAGESZ: the auxiliary vector's entry of the page size (the unit of /proc/<pid>/statm). */
const AT_PAGESZ = 6;
let pageSizeMemo: number | null | undefined;

/** This machine's page size from /proc/self/auxv (64-bit entries); null when it cannot be read. */
export function pageSize(): number | null {
  if (pageSizeMemo !== undefined) return pageSizeMemo;
  pageSizeMemo = null;
  try {
    const auxv = readFileSync('/proc/self/auxv');
    for (let at = 0; at + 16 <= auxv.length; at += 16) {
      const type = auxv.readBigUInt64LE(at);
      if (type === 0n) break;
      if (type !== BigInt(AT_PAGESZ)) continue;
      const size = Number(auxv.readBigUInt64LE(at + 8));
      // a power of two of at least 4 KiB, or the vector is not what we think it is
      if (size >= 4096 && (size & (size - 1)) === 0) pageSizeMemo = size;
      break;
    }
  } catch {
    // no /proc/self/auxv: VmRSS from /proc/<pid>/status instead
  }
  return pageSizeMemo;
}

/**
 * A reader of one process's RSS over a file descriptor kept open while the process is watched: each
 * sample is one pread at offset 0 (the kernel renders the file afresh) instead of open, fstat, read
 * and close — the guard samples every running call every SAMPLE_INTERVAL_MS. It reads
 * /proc/<pid>/statm, whose second field is the resident pages (the same count as status's VmRSS,
 * in pages): a few numbers the kernel renders in ~3.5 µs of CPU, where status (some 55 lines)
 * takes ~11 µs. Without a known page size it reads VmRSS from status. The descriptor names the
 * process it was opened for, so a reused pid is never read by mistake.
 */
export function openRssReader(pid: number): { read(): number | undefined; close(): void } {
  const page = pageSize();
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/${page === null ? 'status' : 'statm'}`, 'r');
  } catch {
    fd = undefined;
  }
  let buffer = Buffer.alloc(page === null ? 4096 : 128);
  const readStatm = (descriptor: number, size: number): number | undefined => {
    const n = readSync(descriptor, buffer, 0, buffer.length, 0);
    // "size resident shared text lib data dt": the digits of the second field
    let at = buffer.indexOf(0x20);
    if (at < 0 || at >= n) return undefined;
    let pages = 0;
    let digits = 0;
    for (at++; at < n; at++, digits++) {
      const c = buffer[at] as number;
      if (c < 0x30 || c > 0x39) break;
      pages = pages * 10 + (c - 0x30);
    }
    // a process that exited (a zombie: no memory map any more) shows 0 pages, as status shows no VmRSS
    return digits > 0 && pages > 0 ? pages * size : undefined;
  };
  const readStatus = (descriptor: number): number | undefined => {
    for (;;) {
      const n = readSync(descriptor, buffer, 0, buffer.length, 0);
      const match = RSS_LINE.exec(buffer.toString('latin1', 0, n));
      if (match) return Number(match[1]) * 1024;
      // a long Groups line can push VmRSS past the buffer: read the whole file with a larger one
      if (n < buffer.length || buffer.length >= MAX_STATUS_BYTES) return undefined;
      buffer = Buffer.alloc(buffer.length * 4);
    }
  };
  return {
    read() {
      if (fd === undefined) return undefined;
      try {
        return page === null ? readStatus(fd) : readStatm(fd, page);
      } catch {
        return undefined; // the process is gone
      }
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/** Detects the enforcement mode (logging it once) and creates the guard. */
export async function createMemoryGuard(options: {
  logger: Logger;
  location?: CgroupLocation | null;
}): Promise<MemoryGuard> {
  const location = options.location === undefined ? await locateOwnCgroup() : (options.location ?? undefined);
  const probe = await probeCgroup(location, options.logger);
  const mode: MemoryEnforcement = probe.base ? 'cgroup' : 'rss-sampling';
  options.logger.info('sandbox memory enforcement', {
    mode,
    ...(probe.base ? { cgroup: probe.base } : { reason: probe.reason, sampleIntervalMs: SAMPLE_INTERVAL_MS }),
    runtimeOverheadMb: RUNTIME_OVERHEAD_MB,
  });
  const watched = new Map<Watched, ReturnType<typeof openRssReader> | undefined>();
  // the guard's subscription to the clock, held while anything is watched
  let stopTicks: (() => void) | undefined;
  const forget = (target: Watched): void => {
    watched.get(target)?.close();
    watched.delete(target);
    if (watched.size === 0 && stopTicks) {
      stopTicks();
      stopTicks = undefined;
    }
  };

  const sample = (): void => {
    for (const [target, known] of watched) {
      // opened at the first sample: a call that ends within one interval costs nothing
      let reader = known;
      if (reader === undefined) watched.set(target, (reader = openRssReader(target.pid)));
      const rss = reader.read();
      if (rss !== undefined) target.sampled?.(rss);
      if (mode === 'rss-sampling' && rss !== undefined && rss > target.limitBytes) {
        forget(target);
        target.overLimit(rss);
      }
    }
  };

  return {
    mode,
    limitBytes: (memoryMb) => (memoryMb + RUNTIME_OVERHEAD_MB) * MIB,
    async confine(pid, name, memoryMb) {
      if (!probe.base) return undefined;
      const cgroup = await createProcessCgroup(
        probe.base,
        name,
        (memoryMb + RUNTIME_OVERHEAD_MB) * MIB,
        options.logger,
      );
      try {
        await cgroup.add(pid);
      } catch (err) {
        await cgroup.remove();
        throw err;
      }
      return cgroup;
    },
    watch(target) {
      // in cgroup mode the kernel enforces the limit: sample only for a call's heap-OOM evidence
      if (mode === 'cgroup' && target.sampled === undefined) return;
      if (!watched.has(target)) watched.set(target, undefined);
      // every tick; it holds the event loop open while a process is watched, as its own timer did
      stopTicks ??= guardClock.every(1, sample, true);
    },
    unwatch(target) {
      forget(target);
    },
    close() {
      for (const target of [...watched.keys()]) forget(target);
      stopTicks?.();
      stopTicks = undefined;
    },
  };
}
