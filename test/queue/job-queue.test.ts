import { describe, expect, it } from 'vitest';
import { cpuSlotOf } from '../../src/queue/cpu-slot.js';
import { createJobQueue } from '../../src/queue/job-queue.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('job queue', () => {
  it('respects global and per-tool concurrency', async () => {
    const queue = createJobQueue({ concurrency: 3, toolConcurrency: 2, backlog: 100 });
    let runningA = 0;
    let maxA = 0;
    let runningAll = 0;
    let maxAll = 0;
    const gates: Array<() => void> = [];
    const done: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      const tool = i % 2 === 0 ? 'a' : `b${i}`;
      const finished = deferred();
      done.push(finished.promise);
      queue.offer(`r${i}`, tool, async () => {
        runningAll++;
        maxAll = Math.max(maxAll, runningAll);
        if (tool === 'a') {
          runningA++;
          maxA = Math.max(maxA, runningA);
        }
        await new Promise<void>((resolve) => gates.push(resolve));
        runningAll--;
        if (tool === 'a') runningA--;
        finished.resolve();
      });
    }
    while (done.length > 0) {
      await new Promise((r) => setImmediate(r));
      const gate = gates.shift();
      if (gate) gate();
      else if (queue.stats().backlog === 0) break;
    }
    await Promise.all(done);
    expect(maxAll).toBe(3);
    expect(maxA).toBe(2);
    expect(queue.stats()).toEqual({ queued: 0, running: 0, computing: 0, backlog: 0, capacity: 100 });
  });

  it('deduplicates by key and refuses when the backlog is full', async () => {
    const queue = createJobQueue({ concurrency: 1, toolConcurrency: 1, backlog: 2 });
    const gate = deferred();
    expect(queue.offer('x', 't', () => gate.promise)).toBe('accepted');
    expect(queue.offer('x', 't', () => gate.promise)).toBe('duplicate');
    expect(queue.offer('y', 't', () => gate.promise)).toBe('accepted');
    expect(queue.offer('z', 't', () => gate.promise)).toBe('full');
    expect(queue.has('y')).toBe(true);
    const room = queue.waitForRoom();
    gate.resolve();
    await room;
    expect(queue.offer('z', 't', async () => {})).toBe('accepted');
  });

  it('drains: drops queued jobs, lets running ones finish within the grace period', async () => {
    const queue = createJobQueue({ concurrency: 1, toolConcurrency: 1, backlog: 10 });
    const ran: string[] = [];
    const gate = deferred();
    queue.offer('a', 't', async () => {
      ran.push('a');
      await gate.promise;
    });
    queue.offer('b', 't', async () => void ran.push('b'));
    await new Promise((r) => setImmediate(r));
    const drained = queue.drain(60_000);
    expect(queue.offer('c', 't', async () => {})).toBe('closed');
    gate.resolve();
    expect(await drained).toEqual({ dropped: 1, aborted: 0 });
    expect(ran).toEqual(['a']);
  });

  it('aborts running jobs at the grace deadline', async () => {
    const queue = createJobQueue({ concurrency: 2, toolConcurrency: 2, backlog: 10 });
    let reason: unknown;
    queue.offer(
      'a',
      't',
      (signal) =>
        new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => {
            reason = signal.reason;
            resolve();
          }),
        ),
    );
    await new Promise((r) => setImmediate(r));
    expect(await queue.drain(10)).toEqual({ dropped: 0, aborted: 1 });
    expect(String(reason)).toMatch(/grace period/);
  });

  it('cancels: a queued job never runs, a running one is aborted with the reason, an unknown key is reported', async () => {
    const queue = createJobQueue({ concurrency: 1, toolConcurrency: 1, backlog: 10 });
    const reason = new Error('withdrawn');
    let abortedWith: unknown;
    let release!: () => void;
    const started = new Promise<void>((resolve) => {
      queue.offer('running', 't', (signal) => {
        resolve();
        return new Promise<void>((done) => {
          release = done;
          signal.addEventListener('abort', () => {
            abortedWith = signal.reason;
            done();
          });
        });
      });
    });
    let queuedRan = false;
    queue.offer('queued', 't', async () => void (queuedRan = true));
    await started;
    expect(queue.cancel('queued', reason)).toBe('dropped');
    expect(queue.cancel('running', reason)).toBe('aborted');
    expect(queue.cancel('nope', reason)).toBe('unknown');
    await queue.drain(1000);
    expect(abortedWith).toBe(reason);
    expect(queuedRan).toBe(false);
    release();
  });

  it('a job that lends its CPU slot lets the next one start; it counts again when it computes', async () => {
    const queue = createJobQueue({ concurrency: 10, cpuConcurrency: 1, toolConcurrency: 10, backlog: 100 });
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    const slots = new Map<string, ReturnType<typeof cpuSlotOf>>();
    const body = (name: string) => (signal: AbortSignal) => {
      started.push(name);
      slots.set(name, cpuSlotOf(signal));
      return new Promise<void>((resolve) => gates.set(name, resolve));
    };
    queue.offer('sleeper', 'timer', body('sleeper'));
    queue.offer('echo', 'echo', body('echo'));
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['sleeper']);
    expect(slots.get('sleeper')?.contended()).toBe(true);
    slots.get('sleeper')?.waiting();
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['sleeper', 'echo']);
    expect(queue.stats()).toMatchObject({ running: 2, computing: 1 });
    // computing again: over the limit for now (never waits), so nothing new starts until one ends
    slots.get('sleeper')?.computing();
    queue.offer('third', 'other', body('third'));
    await new Promise((r) => setImmediate(r));
    expect(queue.stats()).toMatchObject({ running: 2, computing: 2, queued: 1 });
    gates.get('echo')?.();
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['sleeper', 'echo']);
    gates.get('sleeper')?.();
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['sleeper', 'echo', 'third']);
    gates.get('third')?.();
    await queue.drain(1000);
    expect(queue.stats()).toMatchObject({ running: 0, computing: 0, queued: 0 });
  });

  it("fair share: a flooded tool does not delay another tool's call", async () => {
    const queue = createJobQueue({ concurrency: 4, toolConcurrency: 4, backlog: 1000 });
    const order: string[] = [];
    const gates: Array<() => void> = [];
    const body = (name: string) => () => {
      order.push(name);
      return new Promise<void>((resolve) => gates.push(resolve));
    };
    for (let i = 0; i < 100; i++) queue.offer(`flood-${i}`, 'flood', body(`flood-${i}`));
    queue.offer('lone', 'lone', body('lone'));
    await new Promise((r) => setImmediate(r));
    // one tool holds at most 3/4 of the 4 in flight: the other tool gets the fourth at once
    expect([...order].sort()).toEqual(['flood-0', 'flood-1', 'flood-2', 'lone']);
    queue.offer('late', 'late', body('late'));
    gates.shift()?.();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    // the freed slot goes to the tool with the fewest calls in flight, not to the 97 queued floods
    expect(order.slice(4)).toEqual(['late']);
    while (gates.length > 0 || queue.stats().backlog > 0) {
      gates.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    expect(order).toHaveLength(102);
  });

  it('a tool holds at most 3/4 of the calls in flight, so a slow tool leaves room for others', async () => {
    const queue = createJobQueue({ concurrency: 8, cpuConcurrency: 8, toolConcurrency: 100, backlog: 100 });
    let slow = 0;
    const gates: Array<() => void> = [];
    for (let i = 0; i < 20; i++) {
      queue.offer(`slow-${i}`, 'slow', () => {
        slow++;
        return new Promise<void>((resolve) => gates.push(resolve));
      });
    }
    await new Promise((r) => setImmediate(r));
    expect(slow).toBe(6);
    let quick = false;
    queue.offer('quick', 'quick', async () => void (quick = true));
    await new Promise((r) => setImmediate(r));
    expect(quick).toBe(true);
    for (const gate of gates) gate();
    await queue.drain(60_000);
  });
});
