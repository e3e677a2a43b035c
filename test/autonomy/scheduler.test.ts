// The shipped scheduler (issue 21): a continuous operator tool that turns a schedule.definition.v1
// into schedule.tick.v1 records at the requested interval — over 60 s with a restart of the runner
// in the middle, the ticks are on the 5 s grid, none doubled and none missed (the ones due while the
// runner was down are published late).

import { afterAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { cleanupAll, client, startRunner, startStoreProcess, tempDir } from '../e2e/harness.js';

const PERIOD_MS = 5_000;
const WINDOW_MS = 60_000;

afterAll(cleanupAll);

async function dueTimes(c: StoreClient): Promise<number[]> {
  const ticks = await c.listAll({ schema_name: 'schedule.tick.v1', tag: 'interval:5s', include_context: true });
  return ticks.map((t) => Number(t.context?.['due_ms'])).sort((a, b) => a - b);
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('scheduler', () => {
  it('ticks at the interval over 60 s with a restart in the middle: none missed, none doubled', async () => {
    const { url } = await startStoreProcess(tempDir());
    const c = client(url);
    await c.createBreadcrumb({
      title: 'every 5 s',
      schema_name: 'schedule.definition.v1',
      tags: ['schedule:definition'],
      context: { interval: { type: 'seconds', every_seconds: 5 }, enabled: true, labels: ['interval:5s'] },
    });
    const flags = ['--continuous-lease-ms', '3000'];
    let runner = await startRunner(url, flags);
    await until('the first tick', async () => (await dueTimes(c)).length >= 1, 60_000);
    const first = (await dueTimes(c))[0] as number;
    // Restart in the middle of the window.
    await until('the middle of the window', async () => Date.now() >= first + WINDOW_MS / 2, WINDOW_MS);
    runner.signal('SIGTERM');
    await runner.exited;
    runner = await startRunner(url, flags);
    await until(
      'the end of the window',
      async () => (await dueTimes(c)).some((due) => due >= first + WINDOW_MS),
      3 * WINDOW_MS,
    );
    const inWindow = (await dueTimes(c)).filter((due) => due >= first && due < first + WINDOW_MS);
    // 12 due times in 60 s at 5 s (±10 %: 11 to 13), each exactly one period after the one before.
    expect(inWindow.length).toBeGreaterThanOrEqual(11);
    expect(inWindow.length).toBeLessThanOrEqual(13);
    expect(new Set(inWindow).size).toBe(inWindow.length);
    for (let i = 1; i < inWindow.length; i++)
      expect((inWindow[i] as number) - (inWindow[i - 1] as number)).toBe(PERIOD_MS);
    expect(inWindow.every((due) => due % PERIOD_MS === 0)).toBe(true);
  }, 300_000);
});
