// Warm pool of pre-spawned, single-use sandbox processes, keyed by permission set (net list + memory).
//
// Per key, processes move: starting (spawned for the pool, harness booting) -> warm (harness waiting
// for its job frame) -> handed out by acquire() -> (the caller runs one job and kills it). After each
// call (release(), or at once when the key ran dry) the key is refilled in the background up to
// `poolSize`, never beyond `poolMax` warm+starting
// processes in total (the least recently used key gives one up when a new key needs room). A warm
// process unused for `poolIdleMs` is retired and not replaced until its key is used again. Spawn
// failures back off exponentially (250 ms .. 30 s) so a broken Deno cannot spin the pool; acquire()
// still spawns directly when nothing is warm, so callers get a clear error per call.
// Warm (reuse) mode: a process that finished a call cleanly may be parked as 'idle' under that tool
// version's key and handed to the next call of the same version (acquireReuse). At poolMax, the
// process parked longest ago under another key gives up its room. A parked
// process must be idle: tool code left running after its call (a busy timer, a setTimeout chain, a
// spinning Worker) shows as CPU time, which is read every CPU_CHECK_MS; a process over the idle
// allowance (cpu.ts) is retired at once, and one is never handed out while busy.

import type { Logger } from '../logger.js';
import { IDLE_CPU_RULE, busyWhileParked, readCpuMs, type IdleCpuRule } from './cpu.js';
import type { MemoryGuard, Watched } from './memory-guard.js';
import type { SandboxProcess } from './process.js';
import { backoffMs } from '../backoff.js';

/** How often the CPU time of parked reuse processes is read. */
export const CPU_CHECK_MS = 100;
const BACKOFF_MIN_MS = 250;
/** A parked process unused this long is fair game for a call that would otherwise wait (waitForReuse). */
const STALE_PARKED_MS = 1000;
const BACKOFF_MAX_MS = 30_000;

/** A permission set: processes with the same key are interchangeable. */
export interface PoolKeySpec {
  key: string;
  net: readonly string[];
  /** The `--deny-net` list (denyNetFor); DENY_NET unless the tool has operator-granted private hosts. */
  deny?: readonly string[];
  /** Extra `--allow-*` permissions (operator-trusted tools only). */
  extra: readonly string[];
  memoryMb: number;
}

/** Bounds and the spawn function of a pool. */
export interface PoolOptions {
  poolSize: number;
  poolMax: number;
  poolIdleMs: number;
  spawn(spec: PoolKeySpec): SandboxProcess;
  guard: MemoryGuard;
  logger: Logger;
  /** A warm (reuse-mode) process serves at most this many calls, then is retired. */
  maxReuseCalls: number;
  /** How much CPU a parked reuse process may use (default IDLE_CPU_RULE). */
  idleCpu?: IdleCpuRule;
  /** Least cost of a spawn waitForReuse assumes (tests: a high floor makes waiting certain); default 0. */
  minSpawnCostMs?: number;
}

/** Counters of the pool (spawned, evicted and retired count since creation). */
export interface PoolStats {
  warm: number;
  busy: number;
  spawned: number;
  /** Processes killed to make room for another key (pool at its maximum). */
  evicted: number;
  /** Processes retired: idle too long, busy while parked, served their maximum, or no room to park. */
  retired: number;
  /** Calls that waited for a busy process of their tool version instead of taking a fresh one. */
  waitedForBusy: number;
}

/** The warm pool of one sandbox. */
export interface Pool {
  /** A ready process for `spec`: warm if possible, else an in-flight or fresh spawn. Rejects on spawn failure. */
  acquire(spec: PoolKeySpec): Promise<SandboxProcess>;
  /** An idle reuse-mode process of this tool version, if one is parked. */
  acquireReuse(reuseKey: string): SandboxProcess | undefined;
  /** Parks a reuse-mode process after a clean call (or retires it when over a bound). */
  park(proc: SandboxProcess, reuseKey: string): void;
  /** The call on a process of `spec` ended: refill its key in the background. */
  release(spec: PoolKeySpec): void;
  /** Returns an unused ready process (e.g. the caller was aborted while waiting). */
  giveBack(proc: SandboxProcess): void;
  /**
   * Starts filling `spec`'s key in the background. With `count`: at most that many processes, only
   * into free room (never evicting another key), and the key counts as least recently used.
   */
  prewarm(spec: PoolKeySpec, count?: number): void;
  /** Warm mode: a call of tool version `reuseKey` runs on a process (callEnded follows). */
  callStarted(reuseKey: string): void;
  /** Warm mode: that call ended after `runMs`; `reusable`: its process is being parked. */
  callEnded(reuseKey: string, runMs: number, reusable: boolean): void;
  /**
   * Warm mode, no idle process of `reuseKey`: a promise of the next one a call of that version parks,
   * when waiting for it is cheaper than spawning (no ready spare of `specKey` that the pool has room to
   * refill, its calls run shorter than a spawn on average, and a busy process is free for this
   * waiter); undefined when not. Resolves undefined when the wait
   * ends without a process (then the caller takes a fresh one).
   */
  waitForReuse(reuseKey: string, specKey: string): Promise<SandboxProcess | undefined> | undefined;
  stats(): PoolStats;
  /** Every live process (for shutdown). */
  live(): SandboxProcess[];
  close(): Promise<void>;
}

/** Creates the pool; processes are only spawned on prewarm/acquire. */
export function createPool(options: PoolOptions): Pool {
  const { poolSize, poolMax, poolIdleMs, logger, guard } = options;
  const all = new Set<SandboxProcess>();
  const warm = new Map<string, SandboxProcess[]>();
  const starting = new Map<string, SandboxProcess[]>();
  const idle = new Map<string, SandboxProcess[]>();
  const specs = new Map<string, PoolKeySpec & { lastUsed: number }>();
  const idleTimers = new Map<SandboxProcess, NodeJS.Timeout>();
  const idleWatches = new Map<SandboxProcess, Watched>();
  const idleCpu = options.idleCpu ?? IDLE_CPU_RULE;
  // parked reuse processes: when parked, CPU ms at the first check after that, and when the grace ended
  const parkedCpu = new Map<
    SandboxProcess,
    { since: number; atFirst: number | undefined; atGrace: number | undefined }
  >();
  let cpuTimer: NodeJS.Timeout | undefined;
  let spawned = 0;
  let evicted = 0;
  let retired = 0;
  let waitedForBusy = 0;
  let closed = false;
  // warm mode: per tool version, calls running now, the running average of their run time, and the
  // calls waiting for one of them to finish (see waitForReuse)
  const busyCalls = new Map<string, number>();
  const runAvgMs = new Map<string, number>();
  const reuseWaiters = new Map<string, Array<(proc: SandboxProcess | undefined) => void>>();
  // the running average of spawn -> ready: what a call that does not wait costs the machine
  let spawnAvgMs = 25;
  let failures = 0;
  let backoffUntil = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  const list = <K>(map: Map<K, SandboxProcess[]>, key: K): SandboxProcess[] => {
    let entries = map.get(key);
    if (!entries) map.set(key, (entries = []));
    return entries;
  };
  const remove = (map: Map<string, SandboxProcess[]>, proc: SandboxProcess): boolean => {
    for (const entries of map.values()) {
      const at = entries.indexOf(proc);
      if (at !== -1) {
        entries.splice(at, 1);
        return true;
      }
    }
    return false;
  };
  const count = (map: Map<string, SandboxProcess[]>): number => [...map.values()].reduce((n, e) => n + e.length, 0);
  // A killed process stays listed until its exit is fully handled; never hand one out.
  const take = (
    entries: SandboxProcess[] | undefined,
    state: 'ready' | 'idle',
    from: 'head' | 'tail',
  ): SandboxProcess | undefined => {
    while (entries && entries.length > 0) {
      const proc = from === 'head' ? entries.shift() : entries.pop();
      if (proc?.state === state) return proc;
    }
    return undefined;
  };
  const unpark = (proc: SandboxProcess): void => {
    parkedCpu.delete(proc);
    if (parkedCpu.size === 0 && cpuTimer) {
      clearInterval(cpuTimer);
      cpuTimer = undefined;
    }
    clearTimeout(idleTimers.get(proc));
    idleTimers.delete(proc);
    const watched = idleWatches.get(proc);
    if (watched) guard.unwatch(watched);
    idleWatches.delete(proc);
  };
  const retireAfterIdle = (proc: SandboxProcess, map: Map<string, SandboxProcess[]>): void => {
    const timer = setTimeout(() => {
      if (remove(map, proc)) {
        unpark(proc);
        retired++;
        proc.kill('retired');
      }
    }, poolIdleMs);
    timer.unref();
    idleTimers.set(proc, timer);
  };

  // A parked process that uses CPU still runs tool code: retire it (true when it was retired). The
  // periodic check (atAcquire false) records the CPU time at its first look after parking and after
  // the grace, and judges from there; at hand-out (atAcquire true) CPU since the first look counts.
  // Nothing is read on the hot path of back-to-back reuse: a process not yet looked at is handed out.
  const retireIfBusy = (proc: SandboxProcess, now: number, atAcquire: boolean): boolean => {
    const entry = parkedCpu.get(proc);
    if (!entry || proc.pid === undefined || (atAcquire && entry.atFirst === undefined)) return false;
    const cpu = readCpuMs(proc.pid);
    if (cpu === undefined) return false;
    const parkedMs = now - entry.since;
    let from: number;
    if (atAcquire) from = entry.atFirst as number;
    else if (entry.atFirst === undefined) {
      entry.atFirst = cpu;
      return false;
    } else if (entry.atGrace === undefined) {
      if (parkedMs >= idleCpu.graceMs) entry.atGrace = cpu;
      return false;
    } else from = entry.atGrace;
    if (!busyWhileParked(idleCpu, cpu - from, atAcquire ? parkedMs + idleCpu.graceMs : parkedMs)) return false;
    logger.warn('retired a parked reuse process that kept running after its call', {
      key: proc.key,
      pid: proc.pid,
      cpuMs: Math.round(cpu - from),
      parkedMs: Math.round(parkedMs),
    });
    remove(idle, proc);
    unpark(proc);
    retired++;
    proc.kill('busy_idle');
    return true;
  };
  const checkParkedCpu = (): void => {
    const now = performance.now();
    for (const proc of [...parkedCpu.keys()]) retireIfBusy(proc, now, false);
  };

  // Whether a process of another tool version has been parked, unused, for over STALE_PARKED_MS.
  const staleParked = (reuseKey: string): boolean => {
    const now = performance.now();
    for (const [key, entries] of idle) {
      if (key === reuseKey) continue;
      for (const proc of entries) {
        const since = parkedCpu.get(proc)?.since;
        if (since !== undefined && now - since > STALE_PARKED_MS) return true;
      }
    }
    return false;
  };

  // The process parked longest ago under another tool version's key gives up its room (true if one did).
  const evictParked = (reuseKey: string): boolean => {
    let victim: SandboxProcess | undefined;
    let since = Infinity;
    for (const [key, entries] of idle) {
      if (key === reuseKey) continue;
      for (const proc of entries) {
        const parkedSince = parkedCpu.get(proc)?.since ?? -1;
        if (parkedSince < since) {
          victim = proc;
          since = parkedSince;
        }
      }
    }
    if (!victim) return false;
    remove(idle, victim);
    unpark(victim);
    evicted++;
    victim.kill('retired');
    return true;
  };

  const spawn = (spec: PoolKeySpec): SandboxProcess => {
    const proc = options.spawn(spec);
    spawned++;
    const from = performance.now();
    proc.ready.then(
      () => {
        spawnAvgMs += (performance.now() - from - spawnAvgMs) / 8;
      },
      () => undefined,
    );
    all.add(proc);
    void proc.exited.then(() => {
      all.delete(proc);
      remove(warm, proc);
      remove(starting, proc);
      remove(idle, proc);
      unpark(proc);
    });
    return proc;
  };

  const onSpawnFailure = (key: string, err: Error): void => {
    failures++;
    const delay = backoffMs({ initialMs: BACKOFF_MIN_MS, maxMs: BACKOFF_MAX_MS }, failures - 1);
    backoffUntil = Date.now() + delay;
    logger.warn('sandbox spawn failed', { key, failures, retryInMs: delay, error: err });
    if (!retryTimer && !closed) {
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        fill(key);
      }, delay);
      retryTimer.unref();
    }
  };

  const makeRoom = (key: string): boolean => {
    if (count(warm) + count(starting) + count(idle) < poolMax) return true;
    const ownLastUsed = specs.get(key)?.lastUsed ?? 0;
    let victim: SandboxProcess | undefined;
    let victimUsed = Infinity;
    for (const [other, entries] of warm) {
      const used = specs.get(other)?.lastUsed ?? 0;
      if (other !== key && entries.length > 0 && used < victimUsed && used < ownLastUsed) {
        victim = entries[0];
        victimUsed = used;
      }
    }
    if (!victim) return false;
    remove(warm, victim);
    unpark(victim);
    evicted++;
    victim.kill('retired');
    return true;
  };

  const fill = (key: string, target = poolSize, evict = true): void => {
    const spec = specs.get(key);
    if (closed || !spec || poolSize === 0) return;
    if (Date.now() < backoffUntil) return;
    const room = (): boolean => (evict ? makeRoom(key) : count(warm) + count(starting) + count(idle) < poolMax);
    while (list(warm, key).length + list(starting, key).length < Math.min(target, poolSize) && room()) {
      const proc = spawn(spec);
      list(starting, key).push(proc);
      proc.ready.then(
        () => {
          failures = 0;
          if (!remove(starting, proc)) return; // claimed by acquire() while starting
          if (closed) return proc.kill('closed');
          list(warm, key).push(proc);
          retireAfterIdle(proc, warm);
        },
        (err: Error) => {
          remove(starting, proc);
          if (!closed) onSpawnFailure(key, err);
        },
      );
    }
  };

  // Refills run off the calls' path: after the current I/O callbacks (a call's job frame is sent, a
  // finished call's answer is on its way), once per key however many calls asked for it.
  const refillKeys = new Set<string>();
  const refillSoon = (key: string): void => {
    if (refillKeys.size === 0) {
      setImmediate(() => {
        const keys = [...refillKeys];
        refillKeys.clear();
        for (const k of keys) fill(k);
      });
    }
    refillKeys.add(key);
  };

  const touch = (spec: PoolKeySpec): void => {
    specs.set(spec.key, { ...spec, lastUsed: Date.now() });
  };

  return {
    async acquire(spec) {
      touch(spec);
      const ready = take(list(warm, spec.key), 'ready', 'head');
      if (ready) {
        unpark(ready);
        // While other warm processes remain, refill only after this call (release()), so that a
        // booting Deno does not compete for the CPU with the call it is meant to speed up.
        if (list(warm, spec.key).length === 0) refillSoon(spec.key);
        return ready;
      }
      // Nothing warm: this call takes a booting process, or spawns its own first; the refill queues
      // up behind it (it never boots ahead of the process the call waits for).
      const inFlight = list(starting, spec.key).shift();
      if (inFlight) {
        refillSoon(spec.key);
        try {
          await inFlight.ready;
          return inFlight;
        } catch {
          // fall through to a fresh spawn
        }
      }
      const fresh = spawn(spec);
      refillSoon(spec.key);
      await fresh.ready;
      return fresh;
    },
    acquireReuse(reuseKey) {
      for (;;) {
        const proc = take(idle.get(reuseKey), 'idle', 'tail');
        if (!proc) return undefined;
        // never hand out a process still busy with its previous call's leftovers
        if (retireIfBusy(proc, performance.now(), true)) continue;
        unpark(proc);
        return proc;
      }
    },
    park(proc, reuseKey) {
      const parked = list(idle, reuseKey);
      const waiter = reuseWaiters.get(reuseKey)?.shift();
      if (waiter) {
        // a call of the same tool version waits for exactly this: hand the process over
        if (!closed && proc.jobsServed < options.maxReuseCalls && proc.park()) return waiter(proc);
        waiter(undefined);
      }
      let room = count(warm) + count(starting) + count(idle) < poolMax;
      // A process that just served a call is worth more than an idle one of another version, or a
      // prewarmed one of a key used less recently than this process's own (makeRoom's rule).
      if (!room && parked.length < Math.max(1, poolSize)) room = evictParked(reuseKey) || makeRoom(proc.key);
      if (
        closed ||
        proc.jobsServed >= options.maxReuseCalls ||
        parked.length >= Math.max(1, poolSize) ||
        !room ||
        !proc.park()
      ) {
        if (!closed) retired++;
        proc.kill('retired');
        return;
      }
      parked.push(proc);
      const watched: Watched = {
        pid: proc.pid ?? -1,
        limitBytes: proc.limitBytes,
        overLimit: () => proc.kill('memory_limit'),
      };
      idleWatches.set(proc, watched);
      guard.watch(watched);
      retireAfterIdle(proc, idle);
      parkedCpu.set(proc, { since: performance.now(), atFirst: undefined, atGrace: undefined });
      if (!cpuTimer) {
        cpuTimer = setInterval(checkParkedCpu, CPU_CHECK_MS);
        cpuTimer.unref();
      }
    },
    release(spec) {
      refillSoon(spec.key);
    },
    callStarted(reuseKey) {
      busyCalls.set(reuseKey, (busyCalls.get(reuseKey) ?? 0) + 1);
    },
    callEnded(reuseKey, runMs, reusable) {
      const busy = (busyCalls.get(reuseKey) ?? 1) - 1;
      if (busy > 0) busyCalls.set(reuseKey, busy);
      else busyCalls.delete(reuseKey);
      const avg = runAvgMs.get(reuseKey);
      runAvgMs.set(reuseKey, avg === undefined ? runMs : avg + (runMs - avg) / 8);
      if (runAvgMs.size > 4096) runAvgMs.delete(runAvgMs.keys().next().value as string);
      // a process that will not come back cannot serve a waiter: let one go spawn instead
      if (!reusable) reuseWaiters.get(reuseKey)?.shift()?.(undefined);
      if (reuseWaiters.get(reuseKey)?.length === 0) reuseWaiters.delete(reuseKey);
    },
    waitForReuse(reuseKey, specKey) {
      // A ready spare of the permission set costs no wait, and its refill no eviction while the pool
      // has room: take it. Otherwise wait for a busy process of this version when that is cheaper
      // than starting one: every waiter has a busy process ahead of it that will finish, on average,
      // sooner than a spawn.
      const spare = warm.get(specKey)?.some((proc) => proc.state === 'ready') ?? false;
      // (room counts busy processes too: they come back to be parked; a process of another version
      // parked for over STALE_PARKED_MS is room too: evicting what nobody uses is no thrashing)
      if (spare && (all.size < poolMax || staleParked(reuseKey))) return undefined;
      const busy = busyCalls.get(reuseKey) ?? 0;
      const waiting = reuseWaiters.get(reuseKey)?.length ?? 0;
      const avg = runAvgMs.get(reuseKey);
      const spawnCostMs = Math.max(spawnAvgMs, options.minSpawnCostMs ?? 0);
      if (closed || busy <= waiting || avg === undefined || avg > spawnCostMs) return undefined;
      waitedForBusy++;
      return new Promise<SandboxProcess | undefined>((resolve) => {
        let waiters = reuseWaiters.get(reuseKey);
        if (!waiters) reuseWaiters.set(reuseKey, (waiters = []));
        const queue = waiters;
        // (a waiter is called at most once: park/callEnded shift it off, the timer splices it out)
        const done = (proc: SandboxProcess | undefined): void => {
          clearTimeout(timer);
          resolve(proc);
        };
        // never longer than a spawn plus the expected run: then the caller takes a fresh process
        const timer = setTimeout(
          () => {
            const at = queue.indexOf(done);
            if (at !== -1) queue.splice(at, 1);
            done(undefined);
          },
          Math.ceil(spawnCostMs + avg),
        );
        queue.push(done);
      });
    },
    giveBack(proc) {
      if (closed || proc.state !== 'ready') return proc.kill('retired');
      list(warm, proc.key).push(proc);
      retireAfterIdle(proc, warm);
    },
    prewarm(spec, count) {
      if (count === undefined) {
        touch(spec);
        return fill(spec.key);
      }
      if (!specs.has(spec.key)) specs.set(spec.key, { ...spec, lastUsed: 0 });
      fill(spec.key, count, false);
    },
    stats() {
      let busy = 0;
      for (const proc of all) if (proc.state === 'busy') busy++;
      let ready = 0;
      for (const entries of [...warm.values(), ...idle.values()]) {
        for (const proc of entries) if (proc.state === 'ready' || proc.state === 'idle') ready++;
      }
      return { warm: ready, busy, spawned, evicted, retired, waitedForBusy };
    },
    live: () => [...all],
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      for (const proc of [...idleTimers.keys()]) unpark(proc);
      const exits = [...all].map((proc) => {
        proc.kill('closed');
        return proc.exited;
      });
      await Promise.all(exits);
    },
  };
}
