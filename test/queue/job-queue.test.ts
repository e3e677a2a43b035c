import { describe, expect, it } from 'vitest';
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
    expect(queue.stats()).toEqual({ queued: 0, running: 0, backlog: 0, capacity: 100 });
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
    queue.offer('a', 't', (signal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => {
      reason = signal.reason;
      resolve();
    })));
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
});
