// Group commit of the store's writes (src/store/breadcrumb-writes.ts): writes submitted in the same turn
// of the event loop run together in ONE SQLite transaction on the next `setImmediate`, each in its own
// savepoint (a nested better-sqlite3 transaction), so one write's failure rolls back that write alone.
// After the commit each write's `after` runs (it publishes the event) and then its caller is answered.
//
// A rider is a write nobody waits on (a lease's finish after its answer was committed): it schedules
// no commit of its own but joins the next one any other write makes, or commits alone after
// RIDE_MAX_MS. At a low call rate each call's writes come one at a time, so without riding a call's
// finish was a transaction of its own; now it shares the next request's.

import type { Db } from './db.js';

/** Counters of the write path. */
export interface WriteStats {
  transactions: number;
  writes: number;
  busyMs: number;
}

interface Job {
  /** The write, run inside the shared transaction (its own savepoint). */
  run(): unknown;
  /** After the commit: publishes the event; returns the caller's value. */
  after(value: unknown): unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  value?: unknown;
  error?: unknown;
  failed: boolean;
}

/** The longest a rider waits for another write's commit before it commits alone. */
export const RIDE_MAX_MS = 200;

/** The write queue of createGroupCommit. */
export interface GroupCommit {
  /** Runs `run` in the next shared transaction; `ride`: without scheduling one (see the header). */
  submit<T, R>(run: () => T, after: (value: T) => R, ride?: boolean): Promise<R>;
  /** Commits whatever waits now (riders included), synchronously; for the store's close. */
  flush(): void;
  counters: WriteStats;
}

/** The write queue over `db`; with `group` false every write is its own transaction, run at once. */
export function createGroupCommit(db: Db, group: boolean): GroupCommit {
  const counters: WriteStats = { transactions: 0, writes: 0, busyMs: 0 };
  let queue: Job[] = [];
  let scheduled = false;
  // set while only riders wait: commits them alone after RIDE_MAX_MS
  let rideTimer: NodeJS.Timeout | undefined;
  // Every job in its own savepoint (a nested better-sqlite3 transaction), all in one transaction.
  const batchTx = db.transaction((jobs: Job[]) => {
    for (const job of jobs) {
      try {
        job.value = job.run();
      } catch (error) {
        job.failed = true;
        job.error = error;
      }
    }
  });
  const flush = (): void => {
    scheduled = false;
    if (rideTimer !== undefined) {
      clearTimeout(rideTimer);
      rideTimer = undefined;
    }
    if (queue.length === 0) return;
    const jobs = queue;
    queue = [];
    const from = performance.now();
    try {
      batchTx(jobs);
    } catch (error) {
      // The commit itself failed: no write of the batch happened.
      for (const job of jobs) {
        job.failed = true;
        job.error = error;
      }
    }
    counters.transactions++;
    counters.writes += jobs.length;
    counters.busyMs += performance.now() - from;
    for (const job of jobs) {
      if (job.failed) {
        job.reject(job.error);
        continue;
      }
      try {
        job.resolve(job.after(job.value));
      } catch (error) {
        job.reject(error);
      }
    }
  };
  const submit = <T, R>(run: () => T, after: (value: T) => R, ride = false): Promise<R> => {
    if (!group) {
      const from = performance.now();
      try {
        const value = run();
        return Promise.resolve(after(value));
      } catch (error) {
        return Promise.reject(error);
      } finally {
        counters.transactions++;
        counters.writes++;
        counters.busyMs += performance.now() - from;
      }
    }
    return new Promise<R>((resolve, reject) => {
      queue.push({
        run,
        after: after as (value: unknown) => unknown,
        resolve: resolve as (value: unknown) => void,
        reject,
        failed: false,
      });
      if (scheduled) return;
      if (!ride) {
        scheduled = true;
        setImmediate(flush);
      } else rideTimer ??= setTimeout(flush, RIDE_MAX_MS);
    });
  };

  return { submit, flush, counters };
}
