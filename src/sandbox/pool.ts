// Warm pool of pre-spawned, single-use sandbox processes, keyed by permission set (net list + memory).
//
// Per key, processes move: starting (spawned for the pool, harness booting) -> warm (harness waiting
// for its job frame) -> handed out by acquire() -> (the caller runs one job and kills it). After each
// call (release(), or at once when the key ran dry) the key is refilled in the background up to
// `poolSize`, never beyond `poolMax` warm+starting processes in total (pool-spares.ts). A warm process
// unused for `poolIdleMs` is retired and not replaced until its key is used again.
// Warm (reuse) mode: a process that finished a call cleanly may be parked as 'idle' under that tool
// version's key and handed to the next call of the same version (acquireReuse, pool-parked.ts). At
// poolMax, the process parked longest ago under another key gives up its room. A parked process must
// be idle (pool-cpu-check.ts). When every process of a version is busy, a call may wait for the next
// one parked instead of spawning (pool-handover.ts).
//
// The parts share one state (pool-state.ts); this module wires them and keeps the rules that span them.

import { createHandOver } from './pool-handover.js';
import { createParking } from './pool-parked.js';
import { createSpares } from './pool-spares.js';
import { createPoolState, hasRoom, list } from './pool-state.js';
import type { Pool, PoolOptions } from './pool-types.js';

export type { Pool, PoolKeySpec, PoolOptions, PoolStats } from './pool-types.js';

/** Creates the pool; processes are only spawned on prewarm/acquire. */
export function createPool(options: PoolOptions): Pool {
  const { poolSize } = options;
  const state = createPoolState(options.poolMax);
  const parking = createParking(state, options);
  const spares = createSpares(state, options, parking);
  const handOver = createHandOver(state);

  return {
    acquire: (spec) => spares.acquire(spec),
    acquireReuse: (reuseKey) => parking.take(reuseKey),
    park(proc, reuseKey) {
      const parked = list(state.idle, reuseKey);
      // a call of the same tool version waits for exactly this: hand the process over
      const served = handOver.handTo(
        reuseKey,
        () => !state.closed && proc.jobsServed < options.maxReuseCalls && proc.park(),
        proc,
      );
      if (served) return;
      let room = hasRoom(state);
      // A process that just served a call is worth more than an idle one of another version, or a
      // prewarmed one of a key used less recently than this process's own (makeRoom's rule).
      if (!room && parked.length < Math.max(1, poolSize))
        room = parking.evictParked(reuseKey) || spares.makeRoom(proc.key);
      if (
        state.closed ||
        proc.jobsServed >= options.maxReuseCalls ||
        parked.length >= Math.max(1, poolSize) ||
        !room ||
        !proc.park()
      ) {
        if (!state.closed) state.counts.retired++;
        proc.kill('retired');
        return;
      }
      parking.add(proc, reuseKey);
    },
    release(spec) {
      spares.refillSoon(spec.key);
    },
    callStarted: (reuseKey) => handOver.callStarted(reuseKey),
    callEnded: (reuseKey, runMs, reusable) => handOver.callEnded(reuseKey, runMs, reusable),
    waitForReuse(reuseKey, specKey) {
      // A ready spare of the permission set costs no wait, and its refill no eviction while the pool
      // has room: take it (room counts busy processes too: they come back to be parked; a process of
      // another version parked for over a second is room too: evicting what nobody uses is no thrashing).
      const spare = state.warm.get(specKey)?.some((proc) => proc.state === 'ready') ?? false;
      const takeSpare = spare && (state.all.size < state.poolMax || parking.staleParked(reuseKey));
      const spawnCostMs = Math.max(spares.spawnAvgMs(), options.minSpawnCostMs ?? 0);
      return handOver.waitForReuse(reuseKey, spawnCostMs, takeSpare);
    },
    giveBack: (proc) => spares.giveBack(proc),
    prewarm: (spec, count) => spares.prewarm(spec, count),
    stats() {
      let busy = 0;
      for (const proc of state.all) if (proc.state === 'busy') busy++;
      let ready = 0;
      for (const entries of [...state.warm.values(), ...state.idle.values()]) {
        for (const proc of entries) if (proc.state === 'ready' || proc.state === 'idle') ready++;
      }
      return { warm: ready, busy, ...state.counts };
    },
    live: () => [...state.all],
    async close() {
      state.closed = true;
      spares.close();
      parking.close();
      const exits = [...state.all].map((proc) => {
        proc.kill('closed');
        return proc.exited;
      });
      await Promise.all(exits);
    },
  };
}
