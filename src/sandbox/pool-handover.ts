// Hand-over to waiting calls (pool.ts, warm mode): when every process of a tool version is busy, a
// call may wait for the next one that version parks instead of taking a fresh process, when that is
// cheaper than a spawn. Per tool version: calls running now, the running average of their run time,
// and the calls waiting for one of them to finish.

import type { SandboxProcess } from './process.js';
import type { PoolState } from './pool-state.js';

/** The waiting calls of a pool. */
export interface HandOver {
  callStarted(reuseKey: string): void;
  callEnded(reuseKey: string, runMs: number, reusable: boolean): void;
  /** Pool.waitForReuse; `spawnCostMs` is what a spawn costs now, `spare` whether a spare may be taken at once. */
  waitForReuse(reuseKey: string, spawnCostMs: number, spare: boolean): Promise<SandboxProcess | undefined> | undefined;
  /**
   * A call of `reuseKey` that waits gets `proc` when `serve()` says it can take it (true); a waiter
   * it cannot serve is told to spawn (false). False when nobody waits.
   */
  handTo(reuseKey: string, serve: () => boolean, proc: SandboxProcess): boolean;
}

export function createHandOver(state: PoolState): HandOver {
  const busyCalls = new Map<string, number>();
  const runAvgMs = new Map<string, number>();
  const waiters = new Map<string, Array<(proc: SandboxProcess | undefined) => void>>();

  return {
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
      if (!reusable) waiters.get(reuseKey)?.shift()?.(undefined);
      if (waiters.get(reuseKey)?.length === 0) waiters.delete(reuseKey);
    },
    handTo(reuseKey, serve, proc) {
      const waiter = waiters.get(reuseKey)?.shift();
      if (!waiter) return false;
      if (serve()) {
        waiter(proc);
        return true;
      }
      waiter(undefined);
      return false;
    },
    waitForReuse(reuseKey, spawnCostMs, spare) {
      if (spare) return undefined;
      // every waiter has a busy process ahead of it that will finish, on average, sooner than a spawn
      const busy = busyCalls.get(reuseKey) ?? 0;
      const waiting = waiters.get(reuseKey)?.length ?? 0;
      const avg = runAvgMs.get(reuseKey);
      if (state.closed || busy <= waiting || avg === undefined || avg > spawnCostMs) return undefined;
      state.counts.waitedForBusy++;
      return new Promise<SandboxProcess | undefined>((resolve) => {
        let queue = waiters.get(reuseKey);
        if (!queue) waiters.set(reuseKey, (queue = []));
        const own = queue;
        // (a waiter is called at most once: handTo/callEnded shift it off, the timer splices it out)
        const done = (proc: SandboxProcess | undefined): void => {
          clearTimeout(timer);
          resolve(proc);
        };
        // never longer than a spawn plus the expected run: then the caller takes a fresh process
        const timer = setTimeout(
          () => {
            const at = own.indexOf(done);
            if (at !== -1) own.splice(at, 1);
            done(undefined);
          },
          Math.ceil(spawnCostMs + avg),
        );
        own.push(done);
      });
    },
  };
}
