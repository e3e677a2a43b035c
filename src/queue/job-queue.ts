// The runner's in-memory job queue: global and per-tool concurrency, a bounded backlog, draining.
//
// States: OPEN (offers accepted while there is room) -> CLOSED (drain started: no new offers; queued
// jobs that have not started are dropped — they were never claimed, so the store still holds them
// for the next replica or restart — and running jobs finish or are aborted at the grace deadline).
//
// The backlog counts queued + running jobs. When it is full, `offer` answers 'full' and the caller
// (intake) stops feeding; `waitForRoom()` resolves once the backlog is below the low-water mark, and
// the caller then runs a catch-up scan. Nothing is dropped: the store stays the queue.

import PQueue from 'p-queue';

export type OfferResult = 'accepted' | 'duplicate' | 'full' | 'closed';

/** A job body; `signal` aborts when the queue's drain deadline passes or the job is cancelled. */
export type JobRun = (signal: AbortSignal) => Promise<void>;

export interface JobQueueOptions {
  concurrency: number;
  toolConcurrency: number;
  backlog: number;
  /** Called with errors a job body threw (job bodies should not throw; this is a safety net). */
  onJobError?: (key: string, error: unknown) => void;
}

export interface JobQueueStats {
  queued: number;
  running: number;
  backlog: number;
  capacity: number;
}

export interface JobQueue {
  /** Adds a job unless one with `key` is queued or running, the backlog is full, or the queue is closed. */
  offer(key: string, tool: string, run: JobRun): OfferResult;
  has(key: string): boolean;
  stats(): JobQueueStats;
  /** Resolves when the backlog has room again (below 3/4 of capacity) or the queue closes. */
  waitForRoom(): Promise<void>;
  /** Stops intake, drops queued jobs, waits up to `graceMs` for running jobs, then aborts them. */
  drain(graceMs: number): Promise<{ dropped: number; aborted: number }>;
  /** Drops job `key` if queued, or aborts it with `reason` if running. */
  cancel(key: string, reason: Error): 'dropped' | 'aborted' | 'unknown';
}

interface Entry {
  tool: string;
  started: boolean;
  controller: AbortController;
  /** Set for queued jobs: calling it makes the job skip its body. */
  cancelled: boolean;
}

/** Creates a job queue (see module comment for the semantics). */
export function createJobQueue(options: JobQueueOptions): JobQueue {
  const global = new PQueue({ concurrency: options.concurrency });
  const perTool = new Map<string, PQueue>();
  const entries = new Map<string, Entry>();
  const running = new Set<Promise<void>>();
  const roomWaiters: Array<() => void> = [];
  let closed = false;
  const lowWater = Math.max(0, Math.floor(options.backlog * 0.75));

  const toolQueue = (tool: string): PQueue => {
    let queue = perTool.get(tool);
    if (!queue) {
      queue = new PQueue({ concurrency: options.toolConcurrency });
      perTool.set(tool, queue);
    }
    return queue;
  };

  const release = (key: string, tool: string): void => {
    entries.delete(key);
    const queue = perTool.get(tool);
    if (queue && queue.size === 0 && queue.pending === 0) perTool.delete(tool);
    if (entries.size < lowWater || entries.size === 0 || closed) {
      for (const wake of roomWaiters.splice(0)) wake();
    }
  };

  const offer = (key: string, tool: string, run: JobRun): OfferResult => {
    if (closed) return 'closed';
    if (entries.has(key)) return 'duplicate';
    if (entries.size >= options.backlog) return 'full';
    const entry: Entry = { tool, started: false, controller: new AbortController(), cancelled: false };
    entries.set(key, entry);
    const task = toolQueue(tool)
      .add(() =>
        global.add(async () => {
          if (entry.cancelled) return;
          entry.started = true;
          await run(entry.controller.signal);
        }),
      )
      .catch((error: unknown) => options.onJobError?.(key, error))
      .finally(() => {
        running.delete(task);
        release(key, tool);
      });
    running.add(task);
    return 'accepted';
  };

  const stats = (): JobQueueStats => {
    let started = 0;
    for (const entry of entries.values()) if (entry.started) started++;
    return { queued: entries.size - started, running: started, backlog: entries.size, capacity: options.backlog };
  };

  const waitForRoom = (): Promise<void> =>
    closed || entries.size < lowWater || entries.size === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => roomWaiters.push(resolve));

  const drain = async (graceMs: number): Promise<{ dropped: number; aborted: number }> => {
    closed = true;
    for (const wake of roomWaiters.splice(0)) wake();
    let dropped = 0;
    for (const entry of entries.values()) {
      if (!entry.started) {
        entry.cancelled = true;
        dropped++;
      }
    }
    // Cancelled jobs still pass through p-queue (clearing it would leave their promises pending
    // forever); they skip their body, so this costs microseconds.
    const allDone = Promise.allSettled([...running]).then(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), graceMs);
    });
    const outcome = await Promise.race([allDone.then(() => 'done' as const), deadline]);
    clearTimeout(timer);
    let aborted = 0;
    if (outcome === 'deadline') {
      for (const entry of entries.values()) {
        if (entry.started) {
          entry.controller.abort(new Error('drain grace period expired'));
          aborted++;
        }
      }
      await allDone;
    }
    return { dropped, aborted };
  };

  const cancel = (key: string, reason: Error): 'dropped' | 'aborted' | 'unknown' => {
    const entry = entries.get(key);
    if (!entry) return 'unknown';
    if (!entry.started) {
      entry.cancelled = true;
      return 'dropped';
    }
    entry.controller.abort(reason);
    return 'aborted';
  };

  return { offer, has: (key) => entries.has(key), stats, waitForRoom, drain, cancel };
}
