// Enforces a sandbox process's total memory (heap + ArrayBuffers + runtime), beyond the V8 heap flag.
//
// Mode 'cgroup': each process gets its own cgroup v2 with memory.max, set before its job is sent;
// the kernel kills it over the limit and memory.events tells us so (RSS is still sampled, without
// killing, as evidence for heap-OOM deaths: outcome.ts). Mode 'rss-sampling' (cgroup v1
// machines, no delegation): while a process runs tool code, its VmRSS is read from /proc every
// SAMPLE_INTERVAL_MS and the process group is SIGKILLed over the limit. An ArrayBuffer loop that
// touches its pages grows at roughly 0.5-5 GB/s, so the overshoot stays in the tens of MB.

import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import type { Logger } from '../logger.js';
import {
  createProcessCgroup,
  locateOwnCgroup,
  probeCgroup,
  type CgroupLocation,
  type ProcessCgroup,
} from './cgroup.js';
import type { MemoryEnforcement } from './types.js';

/** Allowance for the Deno runtime itself (idle RSS is ~32 MB) on top of a tool's memoryMb heap. */
export const RUNTIME_OVERHEAD_MB = 64;
/** RSS sampling period in rss-sampling mode. */
export const SAMPLE_INTERVAL_MS = 10;

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

/**
 * A reader of one process's VmRSS over a file descriptor kept open while the process is watched:
 * each sample is one pread of /proc/<pid>/status (the kernel renders it afresh at offset 0) instead of
 * open, fstat, read and close — the guard samples every running call every SAMPLE_INTERVAL_MS. The
 * descriptor names the process it was opened for, so a reused pid is never read by mistake.
 */
export function openRssReader(pid: number): { read(): number | undefined; close(): void } {
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/status`, 'r');
  } catch {
    fd = undefined;
  }
  let buffer = Buffer.alloc(4096);
  return {
    read() {
      if (fd === undefined) return undefined;
      try {
        for (;;) {
          const n = readSync(fd, buffer, 0, buffer.length, 0);
          const match = RSS_LINE.exec(buffer.toString('latin1', 0, n));
          if (match) return Number(match[1]) * 1024;
          // a long Groups line can push VmRSS past the buffer: read the whole file with a larger one
          if (n < buffer.length || buffer.length >= MAX_STATUS_BYTES) return undefined;
          buffer = Buffer.alloc(buffer.length * 4);
        }
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
  let timer: NodeJS.Timeout | undefined;
  const forget = (target: Watched): void => {
    watched.get(target)?.close();
    watched.delete(target);
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
    if (watched.size === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
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
      timer ??= setInterval(sample, SAMPLE_INTERVAL_MS);
    },
    unwatch(target) {
      forget(target);
    },
    close() {
      for (const target of [...watched.keys()]) forget(target);
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
