// The pool schedules instead of thrashing: a call whose tool version's processes are all busy waits
// for one when its calls run shorter than a spawn; spawns, evictions and retirements are counted; and
// a call whose process sleeps lends its CPU slot (activity monitor) while one that computes keeps it.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { attachCpuSlot, type CpuSlot } from '../../src/queue/cpu-slot.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { captureLogger, expectNoLeaks, isolateTmp, job, testConfig, tool } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let sandbox: Sandbox | undefined;

beforeAll(() => {
  tmp = isolateTmp();
});

afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
  expectNoLeaks(tmp.dir);
});

afterAll(() => {
  tmp.restore();
});

const pidOf = (result: Awaited<ReturnType<Sandbox['run']>>): number => {
  if (!result.ok) throw new Error(`call failed: ${result.error.code} ${result.error.message}`);
  return (result.output as { pid: number }).pid;
};

describe('pool scheduling', () => {
  it('a call waits for the busy process of its tool version instead of evicting and spawning when calls are short', async () => {
    // (a spawn assumed to cost at least 60 s: whatever the load, these calls run shorter)
    // (poolMax 2: one spare and one parked process fill the pool, so taking the spare would evict)
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 1, poolMax: 2 }),
      logger: captureLogger().logger,
      minSpawnCostMs: 60_000,
    });
    const s = sandbox;
    const counter = tool('counter');
    // a few calls one after the other: the pool learns that this version's calls are short
    for (let i = 0; i < 3; i++) pidOf(await s.run(job(counter)));
    expect(s.stats().waitedForBusy).toBe(0);
    // two at once, one parked process: the second waits for it (a busy process is ahead of it)
    const results = await Promise.all([s.run(job(counter)), s.run(job(counter))]);
    for (const result of results) expect(result.ok).toBe(true);
    expect(s.stats().waitedForBusy).toBe(1);
  });

  it("counts spawns, evictions of another version's parked process and retirements at warmMaxCalls", async () => {
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 1, poolMax: 2, warmMaxCalls: 2 }),
      logger: captureLogger().logger,
    });
    const s = sandbox;
    const first = pidOf(await s.run(job(tool('counter'))));
    expect(pidOf(await s.run(job(tool('counter'))))).toBe(first);
    // served warmMaxCalls: retired after its second call
    expect(s.stats().retired).toBe(1);
    expect(s.stats().evicted).toBe(0);
    // three other versions, one after the other: each parks, and at poolMax the oldest parked goes
    for (const version of ['2.0.0', '3.0.0', '4.0.0']) pidOf(await s.run(job(tool('counter', { version }))));
    expect(s.stats().evicted).toBeGreaterThanOrEqual(1);
    expect(s.stats().spawned).toBeGreaterThanOrEqual(4);
  });

  it('lends the CPU slot of a call whose process sleeps, never of one that computes', async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 1 }), logger: captureLogger().logger });
    const s = sandbox;
    const sleeper = {
      ...tool('counter'),
      name: 'sleeper',
      source:
        'export async function execute(input) { await new Promise((r) => setTimeout(r, input.ms)); return { pid: Deno.pid }; }',
    };
    const spinner = {
      ...tool('counter'),
      name: 'spinner',
      source:
        'export async function execute(input) { const end = Date.now() + input.ms; let n = 0; while (Date.now() < end) n++; return { pid: Deno.pid, n }; }',
    };
    const slot = (): { slot: CpuSlot; events: string[] } => {
      const events: string[] = [];
      // contended: another job waits for a slot, so the monitor samples this call
      return {
        events,
        slot: {
          waiting: () => void events.push('waiting'),
          computing: () => void events.push('computing'),
          contended: () => true,
        },
      };
    };
    const sleeping = slot();
    const sleepSignal = new AbortController().signal;
    attachCpuSlot(sleepSignal, sleeping.slot);
    pidOf(await s.run(job(sleeper, { ms: 1500 }, { signal: sleepSignal })));
    expect(sleeping.events[0]).toBe('waiting');
    const computing = slot();
    const spinSignal = new AbortController().signal;
    attachCpuSlot(spinSignal, computing.slot);
    pidOf(await s.run(job(spinner, { ms: 1500 }, { signal: spinSignal })));
    expect(computing.events).toEqual([]);
  });
});
