// Spares of the warm pool (pool.ts): per permission set, processes spawned ahead of the calls
// (starting -> warm), handed out by acquire() and refilled in the background up to `poolSize`, never
// beyond `poolMax` processes in total (the least recently used key gives one up when a new key needs
// room). Spawn failures back off exponentially (250 ms .. 30 s) so a broken Deno cannot spin the
// pool; acquire() still spawns directly when nothing is warm, so callers get a clear error per call.

import { backoffMs } from '../backoff.js';
import type { Parking } from './pool-parked.js';
import { hasRoom, list, remove, take, type PoolState } from './pool-state.js';
import type { PoolKeySpec, PoolOptions } from './pool-types.js';
import type { SandboxProcess } from './process.js';

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 30_000;

/** The spares of a pool. */
export interface Spares {
  acquire(spec: PoolKeySpec): Promise<SandboxProcess>;
  prewarm(spec: PoolKeySpec, count?: number): void;
  /** Refills `key` after the current I/O callbacks. */
  refillSoon(key: string): void;
  giveBack(proc: SandboxProcess): void;
  /** A prewarmed spare of the least recently used key gives up its room for `key` (true if there is room). */
  makeRoom(key: string): boolean;
  /** The running average of spawn -> ready: what a call that does not wait costs the machine. */
  spawnAvgMs(): number;
  close(): void;
}

export function createSpares(state: PoolState, options: PoolOptions, parking: Parking): Spares {
  const { poolSize } = options;
  const { warm, starting, specs } = state;
  let spawnAvgMs = 25;
  let failures = 0;
  let backoffUntil = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  const spawn = (spec: PoolKeySpec): SandboxProcess => {
    const proc = options.spawn(spec);
    state.counts.spawned++;
    const from = performance.now();
    proc.ready.then(
      () => {
        spawnAvgMs += (performance.now() - from - spawnAvgMs) / 8;
      },
      () => undefined,
    );
    state.all.add(proc);
    void proc.exited.then(() => {
      state.all.delete(proc);
      remove(warm, proc);
      remove(starting, proc);
      remove(state.idle, proc);
      parking.unpark(proc);
    });
    return proc;
  };

  const onSpawnFailure = (key: string, err: Error): void => {
    failures++;
    const delay = backoffMs({ initialMs: BACKOFF_MIN_MS, maxMs: BACKOFF_MAX_MS }, failures - 1);
    backoffUntil = Date.now() + delay;
    options.logger.warn('sandbox spawn failed', { key, failures, retryInMs: delay, error: err });
    if (!retryTimer && !state.closed) {
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        fill(key);
      }, delay);
      retryTimer.unref();
    }
  };

  const makeRoom = (key: string): boolean => {
    if (hasRoom(state)) return true;
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
    parking.unpark(victim);
    state.counts.evicted++;
    victim.kill('retired');
    return true;
  };

  const fill = (key: string, target = poolSize, evict = true): void => {
    const spec = specs.get(key);
    if (state.closed || !spec || poolSize === 0) return;
    if (Date.now() < backoffUntil) return;
    const room = (): boolean => (evict ? makeRoom(key) : hasRoom(state));
    while (list(warm, key).length + list(starting, key).length < Math.min(target, poolSize) && room()) {
      const proc = spawn(spec);
      list(starting, key).push(proc);
      proc.ready.then(
        () => {
          failures = 0;
          if (!remove(starting, proc)) return; // claimed by acquire() while starting
          if (state.closed) return proc.kill('closed');
          list(warm, key).push(proc);
          parking.retireAfterIdle(proc, warm);
        },
        (err: Error) => {
          remove(starting, proc);
          if (!state.closed) onSpawnFailure(key, err);
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
        parking.unpark(ready);
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
    prewarm(spec, count) {
      if (count === undefined) {
        touch(spec);
        return fill(spec.key);
      }
      if (!specs.has(spec.key)) specs.set(spec.key, { ...spec, lastUsed: 0 });
      fill(spec.key, count, false);
    },
    refillSoon,
    giveBack(proc) {
      if (state.closed || proc.state !== 'ready') return proc.kill('retired');
      list(warm, proc.key).push(proc);
      parking.retireAfterIdle(proc, warm);
    },
    makeRoom,
    spawnAvgMs: () => spawnAvgMs,
    close() {
      clearTimeout(retryTimer);
    },
  };
}
