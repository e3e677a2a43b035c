// Parked processes of the warm pool (pool.ts): a reuse-mode process that finished a call cleanly is
// parked under its tool version's key and handed to the next call of that version. Every idle process
// (a parked one, or a spare of a permission set) is retired after `poolIdleMs` unused; a parked one is
// watched for memory and CPU (pool-cpu-check.ts) and gives up its room to a process that just served a
// call when the pool is at its maximum.

import type { Logger } from '../logger.js';
import { IDLE_CPU_RULE, type IdleCpuRule } from './cpu.js';
import type { MemoryGuard, Watched } from './memory-guard.js';
import { createParkedCpuChecks } from './pool-cpu-check.js';
import { list, remove, take, type PoolState, type ProcLists } from './pool-state.js';
import type { SandboxProcess } from './process.js';

/** A parked process unused this long is fair game for a call that would otherwise wait (waitForReuse). */
const STALE_PARKED_MS = 1000;

/** The idle processes of a pool. */
export interface Parking {
  /** Retires `proc` from `map` once it has been idle for poolIdleMs. */
  retireAfterIdle(proc: SandboxProcess, map: ProcLists): void;
  /** Ends every watch of `proc` (handed out, retired or gone). */
  unpark(proc: SandboxProcess): void;
  /** Parks `proc` (already in the idle state) under `reuseKey`. */
  add(proc: SandboxProcess, reuseKey: string): void;
  /** An idle process of `reuseKey` that is really idle, taken off the list. */
  take(reuseKey: string): SandboxProcess | undefined;
  /** Whether a process of another tool version has been parked, unused, for over STALE_PARKED_MS. */
  staleParked(reuseKey: string): boolean;
  /** The process parked longest ago under another tool version's key gives up its room (true if one did). */
  evictParked(reuseKey: string): boolean;
  close(): void;
}

export function createParking(
  state: PoolState,
  options: { poolIdleMs: number; guard: MemoryGuard; logger: Logger; idleCpu?: IdleCpuRule },
): Parking {
  const { idle } = state;
  const idleTimers = new Map<SandboxProcess, NodeJS.Timeout>();
  const idleWatches = new Map<SandboxProcess, Watched>();
  const cpu = createParkedCpuChecks(options.idleCpu ?? IDLE_CPU_RULE, options.logger, (proc) => {
    remove(idle, proc);
    unpark(proc);
    state.counts.retired++;
    proc.kill('busy_idle');
  });

  const unpark = (proc: SandboxProcess): void => {
    cpu.delete(proc);
    clearTimeout(idleTimers.get(proc));
    idleTimers.delete(proc);
    const watched = idleWatches.get(proc);
    if (watched) options.guard.unwatch(watched);
    idleWatches.delete(proc);
  };
  const retireAfterIdle = (proc: SandboxProcess, map: ProcLists): void => {
    const timer = setTimeout(() => {
      if (remove(map, proc)) {
        unpark(proc);
        state.counts.retired++;
        proc.kill('retired');
      }
    }, options.poolIdleMs);
    timer.unref();
    idleTimers.set(proc, timer);
  };

  return {
    retireAfterIdle,
    unpark,
    add(proc, reuseKey) {
      list(idle, reuseKey).push(proc);
      const watched: Watched = {
        pid: proc.pid ?? -1,
        limitBytes: proc.limitBytes,
        overLimit: () => proc.kill('memory_limit'),
      };
      idleWatches.set(proc, watched);
      options.guard.watch(watched);
      retireAfterIdle(proc, idle);
      cpu.add(proc);
    },
    take(reuseKey) {
      for (;;) {
        const proc = take(idle.get(reuseKey), 'idle', 'tail');
        if (!proc) return undefined;
        // never hand out a process still busy with its previous call's leftovers
        if (cpu.busy(proc, performance.now(), true)) continue;
        unpark(proc);
        return proc;
      }
    },
    staleParked(reuseKey) {
      const now = performance.now();
      for (const [key, entries] of idle) {
        if (key === reuseKey) continue;
        for (const proc of entries) {
          const since = cpu.parkedSince(proc);
          if (since !== undefined && now - since > STALE_PARKED_MS) return true;
        }
      }
      return false;
    },
    evictParked(reuseKey) {
      let victim: SandboxProcess | undefined;
      let since = Infinity;
      for (const [key, entries] of idle) {
        if (key === reuseKey) continue;
        for (const proc of entries) {
          const parkedSince = cpu.parkedSince(proc) ?? -1;
          if (parkedSince < since) {
            victim = proc;
            since = parkedSince;
          }
        }
      }
      if (!victim) return false;
      remove(idle, victim);
      unpark(victim);
      state.counts.evicted++;
      victim.kill('retired');
      return true;
    },
    close() {
      for (const proc of [...idleTimers.keys()]) unpark(proc);
      cpu.close();
    },
  };
}
