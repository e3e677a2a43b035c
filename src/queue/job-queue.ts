// The runner's in-memory job queue: calls in flight bounded by memory, calls computing bounded by CPU,
// a fair share per tool, a bounded backlog, draining.
//
// States: OPEN (offers accepted while there is room) -> CLOSED (drain started: no new offers; queued
// jobs that have not started are dropped — they were never claimed, so the store still holds them
// for the next replica or restart — and running jobs finish or are aborted at the grace deadline).
//
// A running job is *computing* (it holds one of `cpuConcurrency` CPU slots) or *waiting* (it lent its
// slot back through its CpuSlot: the sandbox saw its process sleep on a timer, the network or a nested
// call; see cpu-slot.ts). A job starts when a CPU slot is free and fewer than `concurrency` jobs are in
// flight, so eight calls that sleep for seconds take no CPU slot from an echo behind them.
//
// Fairness: queued jobs wait per tool, and a free slot goes to the tool with the fewest calls in flight
// (ties round robin), so a flood of one tool does not delay another tool's call behind the flood. One tool computes in at most
// `toolConcurrency` slots and holds at most 3/4 of `concurrency` (at least 1) in flight, so a slow tool
// cannot fill every slot either.
//
// The backlog counts queued + running jobs. When it is full, `offer` answers 'full' and the caller
// (intake) stops feeding; `waitForRoom()` resolves once the backlog is below the low-water mark, and
// the caller then runs a catch-up scan. Nothing is dropped: the store stays the queue.

import { attachCpuSlot, type CpuSlot } from './cpu-slot.js';

export type OfferResult = 'accepted' | 'duplicate' | 'full' | 'closed';

/** A job body; `signal` aborts when the queue's drain deadline passes or the job is cancelled. */
export type JobRun = (signal: AbortSignal) => Promise<void>;

export interface JobQueueOptions {
  /** Jobs in flight at once (computing or waiting). */
  concurrency: number;
  /** Jobs computing at once (default: `concurrency`). */
  cpuConcurrency?: number;
  /** Jobs of one tool computing at once. */
  toolConcurrency: number;
  backlog: number;
  /** Called with errors a job body threw (job bodies should not throw; this is a safety net). */
  onJobError?: (key: string, error: unknown) => void;
}

export interface JobQueueStats {
  queued: number;
  running: number;
  /** Running jobs that hold a CPU slot (the others wait on a timer, the network, a nested call). */
  computing: number;
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
  key: string;
  tool: ToolState;
  run: JobRun;
  started: boolean;
  /** Holds a CPU slot (started and not lent back). */
  computing: boolean;
  controller: AbortController;
}

interface ToolState {
  name: string;
  queued: Entry[];
  live: number;
  computing: number;
}

/** Creates a job queue (see module comment for the semantics). */
export function createJobQueue(options: JobQueueOptions): JobQueue {
  const maxLive = Math.max(1, options.concurrency);
  const maxCpu = Math.max(1, options.cpuConcurrency ?? options.concurrency);
  const toolCpu = Math.max(1, options.toolConcurrency);
  const toolLive = Math.max(1, maxLive - Math.floor(maxLive / 4));
  const tools = new Map<string, ToolState>();
  // tools with queued jobs, served round robin from `cursor`
  const ring: ToolState[] = [];
  let cursor = 0;
  const entries = new Map<string, Entry>();
  const running = new Set<Promise<void>>();
  const roomWaiters: Array<() => void> = [];
  let closed = false;
  let queued = 0;
  let live = 0;
  let computing = 0;
  let dispatching = false;
  const lowWater = Math.max(0, Math.floor(options.backlog * 0.75));

  const wakeRoom = (): void => {
    if (entries.size < lowWater || entries.size === 0 || closed) {
      for (const wake of roomWaiters.splice(0)) wake();
    }
  };

  const unqueue = (entry: Entry): void => {
    const state = entry.tool;
    const at = state.queued.indexOf(entry);
    if (at === -1) return;
    state.queued.splice(at, 1);
    queued--;
    if (state.queued.length === 0) leaveRing(state);
  };
  const leaveRing = (state: ToolState): void => {
    const at = ring.indexOf(state);
    if (at === -1) return;
    ring.splice(at, 1);
    if (at < cursor) cursor--;
    if (cursor >= ring.length) cursor = 0;
    if (state.live === 0 && state.queued.length === 0) tools.delete(state.name);
  };

  const setComputing = (entry: Entry, on: boolean): void => {
    if (entry.computing === on) return;
    entry.computing = on;
    const delta = on ? 1 : -1;
    computing += delta;
    entry.tool.computing += delta;
    if (!on) dispatch();
  };

  const dispatch = (): void => {
    if (dispatching) return;
    dispatching = true;
    try {
      while (queued > 0 && live < maxLive && computing < maxCpu) {
        // the eligible tool with the fewest calls in flight; ties go round robin from `cursor`
        let picked = -1;
        let fewest = Infinity;
        for (let i = 0; i < ring.length; i++) {
          const at = (cursor + i) % ring.length;
          const state = ring[at] as ToolState;
          if (state.computing < toolCpu && state.live < toolLive && state.live < fewest) {
            picked = at;
            fewest = state.live;
          }
        }
        if (picked === -1) return;
        const state = ring[picked] as ToolState;
        const entry = state.queued.shift() as Entry;
        queued--;
        start(entry);
        cursor = picked + 1;
        if (state.queued.length === 0) leaveRing(state);
        else if (cursor >= ring.length) cursor = 0;
      }
    } finally {
      dispatching = false;
    }
  };

  const start = (entry: Entry): void => {
    entry.started = true;
    live++;
    entry.tool.live++;
    setComputing(entry, true);
    const slot: CpuSlot = {
      waiting: () => {
        if (entry.started) setComputing(entry, false);
      },
      computing: () => {
        if (entry.started) setComputing(entry, true);
      },
      contended: () => queued > 0 && live < maxLive,
    };
    const signal = entry.controller.signal;
    attachCpuSlot(signal, slot);
    const task = Promise.resolve()
      .then(() => entry.run(signal))
      .catch((error: unknown) => options.onJobError?.(entry.key, error))
      .finally(() => {
        running.delete(task);
        setComputing(entry, false);
        entry.started = false;
        live--;
        entry.tool.live--;
        if (entry.tool.live === 0 && entry.tool.queued.length === 0) tools.delete(entry.tool.name);
        entries.delete(entry.key);
        wakeRoom();
        dispatch();
      });
    running.add(task);
  };

  const offer = (key: string, tool: string, run: JobRun): OfferResult => {
    if (closed) return 'closed';
    if (entries.has(key)) return 'duplicate';
    if (entries.size >= options.backlog) return 'full';
    let state = tools.get(tool);
    if (!state) tools.set(tool, (state = { name: tool, queued: [], live: 0, computing: 0 }));
    const entry: Entry = { key, tool: state, run, started: false, computing: false, controller: new AbortController() };
    entries.set(key, entry);
    state.queued.push(entry);
    queued++;
    if (state.queued.length === 1) ring.push(state);
    dispatch();
    return 'accepted';
  };

  const stats = (): JobQueueStats => ({
    queued,
    running: live,
    computing,
    backlog: entries.size,
    capacity: options.backlog,
  });

  const waitForRoom = (): Promise<void> =>
    closed || entries.size < lowWater || entries.size === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => roomWaiters.push(resolve));

  const drain = async (graceMs: number): Promise<{ dropped: number; aborted: number }> => {
    closed = true;
    let dropped = 0;
    for (const entry of [...entries.values()]) {
      if (!entry.started) {
        unqueue(entry);
        entries.delete(entry.key);
        dropped++;
      }
    }
    for (const wake of roomWaiters.splice(0)) wake();
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
      unqueue(entry);
      entries.delete(key);
      wakeRoom();
      return 'dropped';
    }
    entry.controller.abort(reason);
    return 'aborted';
  };

  return { offer, has: (key) => entries.has(key), stats, waitForRoom, drain, cancel };
}
