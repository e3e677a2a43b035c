// Capacity through the real service: a call whose sandbox process sleeps lends its CPU slot, so an
// echo is answered while more long calls are in flight than there are CPU slots; the pool counts its
// spawns, evictions and retirements in /metrics.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import {
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  responsesByRid,
  startRunnerWithStore,
  toolContext,
  waitForResponses,
  WS,
} from './harness.js';

let c: StoreClient;
let admin: string;

/** Waits (polling through context.api, sleeping in between) until a `release:<mark>` record exists. */
const GATE = `export async function execute(input, context) {
  for (let i = 0; i < 90; i++) {
    const found = await context.api.searchBreadcrumbs({ tag: 'release:' + input.mark });
    if (found.length > 0) return { released: true, polls: i + 1 };
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  throw new Error('never released');
}`;

beforeAll(async () => {
  // 2 CPU slots, 12 calls in flight: without lending, 8 gates would hold every slot until released
  const started = await startRunnerWithStore(
    ['--admin-port', '0', '--cpu-concurrency', '2', '--concurrency', '12', '--tool-concurrency', '8'],
    { TOOLS_RUNNER_LOG_LEVEL: 'info' },
  );
  const line = started.runner.stderr
    .join('')
    .split('\n')
    .find((l) => l.includes('"msg":"admin port listening"'));
  admin = (JSON.parse(line as string) as { url: string }).url;
  c = client(started.url);
  await putTool(
    c,
    toolContext('gate', GATE, {
      permissions: { net: false, api: 'read' },
      limits: { timeout_ms: 60_000, memory_mb: 64 },
    }),
  );
  await putTool(c, toolContext('quick-echo', 'export async function execute(input) { return { got: input }; }'));
  // both tools in the catalog before the test starts
  for (const tool of ['quick-echo', 'gate']) {
    for (let attempt = 0; ; attempt++) {
      const response = await answer(
        c,
        await request(c, tool, tool === 'gate' ? { mark: 'warm-up' } : { n: 0 }),
        60_000,
      ).catch(() => undefined);
      if (response?.status === 'success') break;
      if (tool === 'gate')
        await c
          .createBreadcrumb({
            title: 'release',
            schema_name: 'e2e.release.v1',
            tags: ['release:warm-up', WS],
            context: {},
          })
          .catch(() => undefined);
      if (attempt > 50) throw new Error(`tool ${tool} never answered`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}, 180_000);

afterAll(cleanupAll);

describe('capacity', () => {
  it('an echo is answered while 8 long calls wait, with 2 CPU slots; the long calls then all finish', async () => {
    const mark = `m${Date.now()}`;
    const gates = await Promise.all(Array.from({ length: 8 }, () => request(c, 'gate', { mark })));
    const echo = await request(c, 'quick-echo', { n: 1 });
    const echoed = await answer(c, echo, 60_000);
    expect(echoed).toMatchObject({ status: 'success', output: { got: { n: 1 } } });
    // no gate can have ended: none is released yet
    const before = await responsesByRid(c);
    expect(gates.filter((rid) => before.has(rid))).toEqual([]);
    await c.createBreadcrumb({
      title: 'release',
      schema_name: 'e2e.release.v1',
      tags: [`release:${mark}`, WS],
      context: {},
    });
    const after = await waitForResponses(c, gates, 90_000);
    for (const rid of gates)
      expect(after.get(rid)?.[0]).toMatchObject({ status: 'success', output: { released: true } });
  }, 180_000);

  it("/metrics counts the pool's spawns, evictions, retirements and waits, and the calls lending their slot", async () => {
    const text = await (await fetch(`${admin}/metrics`)).text();
    const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    // the gate and echo tools each needed at least one process of their own
    expect(value('tools_runner_pool_spawns_total')).toBeGreaterThanOrEqual(2);
    for (const name of [
      'tools_runner_pool_evictions_total',
      'tools_runner_pool_retirements_total',
      'tools_runner_pool_waits_for_busy_total',
      'tools_runner_jobs_waiting',
    ]) {
      expect(value(name), name).toBeGreaterThanOrEqual(0);
    }
  });
});
