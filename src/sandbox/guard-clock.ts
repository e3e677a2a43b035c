// One timer for every guard of the sandbox processes: the memory guard's RSS samples (every tick),
// the duty-cycle CPU limits of running calls and the activity monitor (every 2nd tick) and the parked
// processes' CPU checks (every 10th tick) all run in the same wake-up of the service, one pass over
// the watched processes' /proc files. A wake-up of the event loop costs far more than a read of /proc
// (measured on the 2-core VM: an empty 10 ms interval 7.5-8 ms of CPU per second, plus 3.5 ms/s for a
// 20 ms one whose phase differs; a pread of /proc/<pid>/statm ~3.5 µs), so separate timers paid their
// own wake-ups unless their phases happened to line up.
// The clock runs only while something subscribes to it: with no process watched there is no timer.

/** The clock's period: the memory guard's sampling interval, the finest any guard needs. */
export const TICK_MS = 10;

/** A subscriber's handle; stop() is idempotent. */
export type StopTicks = () => void;

export interface GuardClock {
  /**
   * Calls `onTick` every `ticks`-th tick (`ticks` x TICK_MS ms) from the next tick on, until stopped;
   * the first call comes `ticks` ticks after subscribing. `keepAlive` holds the event loop open
   * while the subscription lasts (the clock's timer is otherwise unref'd).
   */
  every(ticks: number, onTick: () => void, keepAlive?: boolean): StopTicks;
  /** Subscriptions now. */
  readonly size: number;
  /** Whether the timer is armed: false when nothing subscribes (no wake-ups at all). */
  readonly running: boolean;
  /** Wake-ups since the clock was created. */
  readonly wakeUps: number;
  /** Whether the timer holds the event loop open (some subscription asked to keep it alive). */
  readonly keepsAlive: boolean;
}

interface Subscription {
  readonly period: number;
  left: number;
  /** The wake-up count when it subscribed: a subscription made during a tick first counts the next one. */
  readonly since: number;
  readonly onTick: () => void;
  readonly keepAlive: boolean;
}

export function createGuardClock(tickMs = TICK_MS): GuardClock {
  if (!Number.isInteger(tickMs) || tickMs < 1)
    throw new Error(`guard clock tick must be a whole ms >= 1, got ${tickMs}`);
  const subscriptions = new Set<Subscription>();
  let timer: NodeJS.Timeout | undefined;
  let keptAlive = 0;
  let wakeUps = 0;

  const tick = (): void => {
    const now = ++wakeUps;
    // a Set visits entries added during the loop and skips deleted ones: both are what a guard expects
    for (const s of subscriptions) {
      if (s.since === now) continue;
      if (--s.left > 0) continue;
      s.left = s.period;
      s.onTick();
    }
  };
  const arm = (): void => {
    if (subscriptions.size === 0) {
      if (timer) clearInterval(timer);
      timer = undefined;
      return;
    }
    timer ??= setInterval(tick, tickMs);
    if (keptAlive > 0) timer.ref();
    else timer.unref();
  };

  return {
    every(ticks, onTick, keepAlive = false) {
      if (!Number.isInteger(ticks) || ticks < 1)
        throw new Error(`guard clock period must be a whole number of ticks >= 1, got ${ticks}`);
      // subscribed during a tick (since = the current count): skipped until the next wake-up
      const s: Subscription = { period: ticks, left: ticks, since: wakeUps, onTick, keepAlive };
      subscriptions.add(s);
      if (keepAlive) keptAlive++;
      arm();
      return () => {
        if (!subscriptions.delete(s)) return;
        if (s.keepAlive) keptAlive--;
        arm();
      };
    },
    get size() {
      return subscriptions.size;
    },
    get running() {
      return timer !== undefined;
    },
    get wakeUps() {
      return wakeUps;
    },
    get keepsAlive() {
      return timer?.hasRef() ?? false;
    },
  };
}

/** The service's one guard clock, shared by every sandbox in the process. */
export const guardClock: GuardClock = createGuardClock();
