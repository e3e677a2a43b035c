// The scheduler (docs/autonomy.md "The scheduler"): turns `schedule.definition.v1` records into one
// `schedule.tick.v1` per due time. Every replica keeps the table of definitions (read in pages at
// start, then on definition events and every RESYNC_MS); the replica holding the scheduler's lease
// (lease.ts) publishes, waking at the next due time. Each tick is sealed (`context.seal`, a MAC under
// the runner secret over the schedule and due time) and written with an Idempotency-Key derived from
// the same, so no writer can pre-empt or forge one and a new holder never doubles one. Writers
// (`created_by`) are served in turns and each may have `scheduleMaxPerOwner` enabled schedules.
// After downtime the newest `scheduleCatchUp` missed ticks are published late and one
// `schedule.missed.v1` record counts the rest.

import { isConflict, type RequestKeys } from '../breadcrumbs/index.js';
import type { BreadcrumbCreate, StoreEvent } from '../breadcrumbs/messages.js';
import type { ExtensionContext } from '../extension.js';
import type { Logger } from '../logger.js';
import { missedSince, p99, type DueTimes } from './due.js';
import { createLeaseClaims, whileLeased } from './lease.js';
import { createScheduleTable, DEFINITION, type Entry, type ScheduleStatus } from './schedule-table.js';

export type { ScheduleStatus };

/** What the scheduler counts for /metrics. */
export interface SchedulerFigures {
  ticks: { on_time: number; late: number; missed: number };
  /** Lags (seconds) of ticks published since the last read. */
  drainLags(): number[];
}

export interface Scheduler {
  handleEvent(event: StoreEvent): void;
  onReconnect(): void;
  status(): { holder?: string; replaced_by?: string; schedules: ScheduleStatus[] };
  figures: SchedulerFigures;
  /** Health warnings: schedules lagging more than their period. */
  warnings(): string[];
  stop(): Promise<void>;
}

const TICK = 'schedule.tick.v1';
/** Longest a wait lasts, so a clock jump or a lost timer heals. */
const MAX_WAIT_MS = 10_000;
const MINUTE = 60_000;

/** The seal of the tick of `scheduleId` due at `dueMs`. */
export function tickSeal(keys: Pick<RequestKeys, 'stateMac'>, scheduleId: string, dueMs: number): string {
  return keys.stateMac('schedule-tick', JSON.stringify([scheduleId, dueMs])).slice(0, 32);
}

/** Whether `context` is a tick the scheduler wrote (its seal verifies). */
export function isSealedTick(keys: Pick<RequestKeys, 'stateMac'>, context: Record<string, unknown> | undefined) {
  const id = context?.['schedule_id'];
  const due = context?.['due_ms'];
  return typeof id === 'string' && Number.isSafeInteger(due) && context?.['seal'] === tickSeal(keys, id, due as number);
}

/** The definition's interval as ticks repeat it (a writer's oversized one is cut to its type). */
const details = (entry: Entry): Record<string, unknown> =>
  JSON.stringify(entry.interval).length <= 1024 ? entry.interval : { type: entry.interval['type'] };

/** Creates the scheduler of `context`'s store; it serves while `context.signal` is live. */
export function createScheduler(context: ExtensionContext): Scheduler {
  const { client, keys, config, replica } = context;
  const log: Logger = context.logger.child({ component: 'scheduler' });
  const figures = { on_time: 0, late: 0, missed: 0 };
  let lagsSinceRead: number[] = [];
  let holder: string | undefined;
  let wake: () => void = () => {};
  const stop = new AbortController();
  const signal = AbortSignal.any([stop.signal, context.signal]);
  // An operator who deploys a continuous tool named "scheduler" (upstream's) runs that one instead.
  const replaced = (): boolean => {
    const route = context.catalog.resolve('scheduler');
    return route?.kind === 'code' && route.tool.bootstrap?.mode === 'continuous';
  };
  const table = createScheduleTable({ client, config, log, signal });
  const { entries } = table;

  /** The newest due time a sealed tick of `entry` records, if any. */
  const recover = async (entry: Entry): Promise<number | undefined> => {
    const ticks = await client.listBreadcrumbs(
      { schema_name: TICK, tag: `schedule:${entry.status.id}`, limit: 50, include_context: true },
      { signal },
    );
    let newest: number | undefined;
    for (const t of ticks) {
      if (!isSealedTick(keys, t.context) || t.context?.['schedule_id'] !== entry.status.id) continue;
      const due = t.context['due_ms'] as number;
      if (newest === undefined || due > newest) newest = due;
    }
    return newest;
  };

  const write = async (body: BreadcrumbCreate, key: string): Promise<boolean> => {
    try {
      await client.createBreadcrumb(body, { idempotencyKey: key, signal });
      return true;
    } catch (error) {
      if (isConflict(error)) return false; // written before (another holder, or before a restart)
      throw error;
    }
  };

  /** Writes the tick of `due`; `recovering`: a catch-up after a takeover or restart (its lag is no warning). */
  const publish = async (entry: Entry, due: number, late: boolean, recovering: boolean): Promise<void> => {
    const s = entry.status;
    const seal = tickSeal(keys, s.id, due);
    const following = entry.due?.next(due) ?? due;
    const now = Date.now();
    const written = await write(
      {
        schema_name: TICK,
        title: `Schedule Tick: ${s.title}`.slice(0, 200),
        tags: ['schedule:tick', `schedule:${s.id}`, ...s.labels],
        context: {
          schedule_id: s.id,
          schedule_title: s.title,
          due_at: new Date(due).toISOString(),
          due_ms: due,
          fired_at: new Date(now).toISOString(),
          late,
          interval_type: entry.interval['type'],
          interval_details: details(entry),
          seal,
        },
        // A tick lives at least an hour, so a restart within it resumes from the tick.
        ttl: new Date(now + Math.max(60 * MINUTE, 3 * (following - due))).toISOString(),
      },
      `schedule-tick-${seal}`,
    );
    entry.last = due;
    s.last_tick_at = new Date(due).toISOString();
    if (!written) return;
    s.published++;
    const lag = now - due;
    s.lag_ms = lag;
    if (late) {
      s.late++;
      figures.late++;
    } else {
      figures.on_time++;
      entry.lags.push(lag);
      if (entry.lags.length > 1000) entry.lags.shift();
    }
    lagsSinceRead.push(lag / 1000);
    if (lagsSinceRead.length > 10_000) lagsSinceRead.shift();
    if (recovering) return;
    const lagging = lag > (entry.due?.periodMs ?? MINUTE);
    if (lagging && !s.lagging) log.warn('schedule lagging more than its period', { schedule: s.id, lagMs: lag });
    s.lagging = lagging;
  };

  /** Counts the due times skipped beyond the catch-up in one sealed record. */
  const reportMissed = async (entry: Entry, skipped: number, from: number, to: number): Promise<void> => {
    const s = entry.status;
    s.missed += skipped;
    figures.missed += skipped;
    log.warn('schedule missed ticks while no replica served it', { schedule: s.id, skipped });
    const seal = keys.stateMac('schedule-missed', JSON.stringify([s.id, from, to])).slice(0, 32);
    await write(
      {
        schema_name: 'schedule.missed.v1',
        title: `Schedule missed ${skipped} ticks: ${s.title}`.slice(0, 200),
        tags: ['schedule:missed', `schedule:${s.id}`],
        context: {
          schedule_id: s.id,
          schedule_title: s.title,
          skipped,
          first_skipped_at: new Date(from).toISOString(),
          last_skipped_at: new Date(to).toISOString(),
          interval_type: entry.interval['type'],
          interval_details: details(entry),
          seal,
        },
      },
      `schedule-missed-${seal}`,
    );
  };

  /** The publications due now of one schedule (recovering its last tick first). */
  /** The publications due now of one schedule, in order (recovering its last tick first); undefined when none. */
  const dueWork = async (entry: Entry, now: number): Promise<(() => Promise<void>) | undefined> => {
    const due = entry.due as DueTimes;
    const recovering = entry.last === undefined;
    // First sight without any tick: nothing before this moment is owed.
    if (recovering) entry.last = (await recover(entry)) ?? now;
    const last = entry.last as number;
    const { count, newest } = missedSince(due, last, now, Math.max(1, config.scheduleCatchUp));
    if (count === 0) return undefined;
    const published = newest.slice(newest.length - (count > 1 ? Math.min(config.scheduleCatchUp, newest.length) : 1));
    const skipped = count - published.length;
    // One job per schedule: a failed write stops its later ones, so none is skipped silently.
    return async () => {
      if (skipped > 0) {
        await reportMissed(entry, skipped, due.next(last) as number, (published[0] ?? now + 1) - 1);
        if (published.length === 0) entry.last = now;
      }
      for (const at of published) await publish(entry, at, now - at > MAX_WAIT_MS || count > 1, recovering);
    };
  };

  /** Publishes what is due, one schedule of each writer in turn. */
  const tick = async (): Promise<void> => {
    if (replaced()) return;
    const now = Date.now();
    const queues = new Map<string, Array<() => Promise<void>>>();
    for (const entry of entries.values()) {
      if (entry.status.state !== 'active' || !entry.due) continue;
      const next = entry.last === undefined ? now : (entry.next ?? entry.due.next(entry.last));
      if (next === undefined || next > now) continue;
      const work = await dueWork(entry, now).catch((error: unknown) => {
        if (!signal.aborted) log.warn('schedule check failed', { schedule: entry.status.id, error });
        return undefined;
      });
      if (!work) continue;
      const queue = queues.get(entry.status.owner) ?? [];
      queue.push(work);
      queues.set(entry.status.owner, queue);
    }
    for (let more = true; more && !signal.aborted; ) {
      more = false;
      for (const queue of queues.values()) {
        const job = queue.shift();
        if (!job) continue;
        more = true;
        await job().catch((error: unknown) => {
          if (!signal.aborted) log.warn('schedule tick write failed; retried', { error });
        });
      }
    }
    for (const entry of entries.values()) {
      entry.next = entry.due && entry.last !== undefined ? entry.due.next(entry.last) : undefined;
      entry.status.next_tick_at = entry.next !== undefined ? new Date(entry.next).toISOString() : undefined;
      const p = p99(entry.lags);
      if (p !== undefined) entry.status.lag_p99_ms = p;
    }
  };

  /** A due time passed longer ago than the schedule's period (or a minute) without its tick. */
  const overdue = (e: Entry): boolean =>
    e.next !== undefined && Date.now() - e.next > (e.due?.periodMs ?? MINUTE) + MAX_WAIT_MS;

  const pause = (ms: number, on: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        on.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      wake = done;
      on.addEventListener('abort', done, { once: true });
    });

  const lead = async (held: AbortSignal): Promise<void> => {
    holder = replica;
    // Whatever an earlier holder published is read back from its ticks.
    for (const entry of entries.values()) delete entry.last;
    while (!held.aborted) {
      try {
        if (table.stale()) await table.reload();
        await tick();
      } catch (error) {
        if (!held.aborted) log.warn('scheduler pass failed; retried', { error });
        table.touch();
      }
      let next = Date.now() + MAX_WAIT_MS;
      for (const entry of entries.values()) if (entry.next !== undefined && entry.next < next) next = entry.next;
      await pause(next - Date.now(), held);
    }
  };

  // Every replica keeps the table (the console shows it); the lease holder publishes.
  const standby = async (): Promise<void> => {
    while (!signal.aborted && holder !== replica) {
      await (table.stale() ? table.reload() : Promise.resolve()).catch((error: unknown) => {
        if (!signal.aborted) log.warn('schedule definitions could not be read; retried', { error });
        table.touch();
      });
      await pause(MINUTE, signal);
    }
  };
  void standby();
  const served = whileLeased(
    {
      claims: createLeaseClaims(context, config.continuousLeaseMs),
      target: { breadcrumbId: 'scheduler', rid: 'scheduler' },
      leaseMs: config.continuousLeaseMs,
      stop: signal,
      log,
      onStandby: (who) => {
        if (holder === replica) void standby();
        holder = who;
      },
    },
    lead,
  ).catch((error: unknown) => log.warn('scheduler stopped', { error }));

  return {
    handleEvent(event) {
      if (event.schema_name !== DEFINITION && !(event.breadcrumb_id && entries.has(event.breadcrumb_id))) return;
      table.touch(event.breadcrumb_id);
      wake();
    },
    onReconnect() {
      table.touch();
      wake();
    },
    status: () => ({
      ...(holder !== undefined ? { holder } : {}),
      ...(replaced() ? { replaced_by: 'the operator’s continuous tool "scheduler"' } : {}),
      schedules: [...entries.values()].map((e) => ({ ...e.status, labels: [...e.status.labels] })),
    }),
    figures: {
      ticks: figures,
      drainLags() {
        const lags = lagsSinceRead;
        lagsSinceRead = [];
        return lags;
      },
    },
    warnings: () =>
      holder !== replica
        ? []
        : [...entries.values()]
            .filter((e) => e.status.state === 'active' && (e.status.lagging || overdue(e)))
            .map((e) => `schedule ${e.status.id} is lagging: its tick due at ${e.status.next_tick_at ?? '?'} is late`),
    async stop() {
      stop.abort();
      await served;
    },
  };
}
