// Whether the process running a call computes or waits: how a call lends its CPU slot (queue/cpu-slot.ts)
// while it sleeps on a timer, the network or a nested call.
//
// Two signals must agree. The harness hints (a W frame) when the call's promise did not settle within
// its microtasks, i.e. the call waits on the event loop; a call that only computes never hints, and
// neither does one that finished while the runner has not read its result yet (its process sleeps,
// but on us). And the kernel must show the process asleep:
// /proc/<pid>/schedstat holds, in nanoseconds, the time the
// process's main thread (where Deno runs JavaScript) spent on a CPU and the time it spent runnable but
// waiting for one. Over a window, what is neither was spent asleep. A call whose process was asleep for
// more than 90% of the last window, and asleep at that moment (state S in /proc/<pid>/stat), waits: its
// slot goes back to the queue; once its process is on (or wants) a CPU for more than 30% of a window
// again, it computes and counts again. A process starved of CPU by others is runnable, not asleep, so
// it keeps its slot: over-commit cannot feed on itself.
//
// Cost: while calls run, it looks every SAMPLE_MS (every 2nd tick of the guard clock, guard-clock.ts,
// in the same wake-up as the memory guard's samples); it reads /proc (one small read per call) only
// for calls whose slot is contended (another job waits for one) or lent. Its first look at a call is a
// baseline, so a call is judged after one or two windows (20–40 ms).

import { readFileSync } from 'node:fs';
import type { CpuSlot } from '../queue/cpu-slot.js';
import { guardClock, TICK_MS } from './guard-clock.js';

/** Guard clock ticks between two looks. */
const SAMPLE_TICKS = 2;
/** Sampling period while a slot is contended or lent. */
export const SAMPLE_MS = SAMPLE_TICKS * TICK_MS;
/** At most this share of a window on (or waiting for) a CPU: the call waits. */
const WAITING_BELOW = 0.1;
/** At least this share: the call computes (again). */
const COMPUTING_ABOVE = 0.3;

/** Nanoseconds the main thread of `pid` spent on a CPU plus runnable in the run queue; undefined when gone. */
export function readDemandNs(pid: number): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/schedstat`, 'latin1');
    const space = text.indexOf(' ');
    const second = text.indexOf(' ', space + 1);
    const value = Number(text.slice(0, space)) + Number(text.slice(space + 1, second));
    return Number.isFinite(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

interface Tracked {
  pid: number;
  slot: CpuSlot;
  /** The harness said the call waits on its event loop (W frame). */
  hinted: boolean;
  lent: boolean;
  lastNs: number | undefined;
  lastAt: number;
}

/** Watches the processes of running calls and lends their CPU slots while they wait. */
export interface ActivityMonitor {
  /**
   * Starts watching the call running on `pid`. `waiting()`: the harness said the call waits on its
   * event loop (only such a call can lend its slot); `stop()` ends the watch (and a loan).
   */
  track(pid: number, slot: CpuSlot): { waiting(): void; stop(): void };
  /** Calls whose slot is lent now (for tests and stats). */
  lent(): number;
  close(): void;
}

/**
 * Whether the main thread of `pid` is asleep now (state S or I in /proc/<pid>/stat). The kernel adds
 * run-queue time to schedstat only when the thread gets a CPU, so a starved busy process can show no
 * demand for a while: only a thread that is not runnable now counts as waiting.
 */
export function isAsleep(pid: number): boolean {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const state = text.charAt(text.lastIndexOf(')') + 2);
    return state === 'S' || state === 'I';
  } catch {
    return false;
  }
}

/** Creates the monitor; `read` and `asleep` read /proc (tests may substitute them). */
export function createActivityMonitor(
  read: (pid: number) => number | undefined = readDemandNs,
  asleep: (pid: number) => boolean = isAsleep,
): ActivityMonitor {
  const tracked = new Set<Tracked>();
  let stopTicks: (() => void) | undefined;
  let lentCount = 0;

  const tick = (): void => {
    const now = performance.now();
    for (const t of tracked) {
      if (!t.lent && (!t.hinted || !t.slot.contended())) {
        t.lastNs = undefined; // a stale baseline would judge a window nobody asked about
        continue;
      }
      const ns = read(t.pid);
      if (ns === undefined) continue;
      if (t.lastNs !== undefined) {
        const share = (ns - t.lastNs) / 1e6 / Math.max(1, now - t.lastAt);
        if (!t.lent && share < WAITING_BELOW && asleep(t.pid)) {
          t.lent = true;
          lentCount++;
          t.slot.waiting();
        } else if (t.lent && share > COMPUTING_ABOVE) {
          t.lent = false;
          lentCount--;
          t.slot.computing();
        }
      }
      t.lastNs = ns;
      t.lastAt = now;
    }
  };
  const stop = (): void => {
    stopTicks?.();
    stopTicks = undefined;
  };
  const ensure = (): void => {
    if (tracked.size > 0) stopTicks ??= guardClock.every(SAMPLE_TICKS, tick);
  };

  return {
    track(pid, slot) {
      const t: Tracked = { pid, slot, hinted: false, lent: false, lastNs: undefined, lastAt: 0 };
      tracked.add(t);
      ensure();
      return {
        waiting: () => {
          t.hinted = true;
        },
        stop: () => {
          if (!tracked.delete(t)) return;
          if (t.lent) {
            lentCount--;
            t.lent = false;
          }
          if (tracked.size === 0) stop();
        },
      };
    },
    lent: () => lentCount,
    close() {
      stop();
      tracked.clear();
    },
  };
}
