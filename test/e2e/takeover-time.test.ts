// A dead replica's call is taken over within about one lease, not at the next scan: two runners on
// one store, scans every 10 minutes (so only the busy claim's expiry can bring the takeover), the
// holder of a slow call SIGKILLed. The call is answered exactly once, by attempt 2; the time from
// the kill to the takeover is printed, not asserted.

import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/waits.js';
import {
  CLAIM_TTL_MS,
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  startRunner,
  startStoreProcess,
  tempDir,
  toolContext,
  WS,
} from './harness.js';

afterEach(cleanupAll);

const LEASE_KEY = 'e2e-lease-key-0123456789';

/** Writes that it started, then works for 3 s. */
const SLOW = toolContext(
  'e2e-slow-started',
  `export async function execute(input, context) {
     await context.api.createBreadcrumb({ title: 'started', schema_name: 'e2e.started.v1', tags: ['started:' + input.mark], context: {} });
     await new Promise((resolve) => setTimeout(resolve, 3000));
     return { done: true };
   }`,
  { permissions: { net: false, api: 'write' }, limits: { timeout_ms: 20_000, memory_mb: 64 } },
);

interface Lease {
  holder: string;
  attempt: number;
  label: string;
  state: string;
}

describe('takeover time', () => {
  it('a killed holder’s call is taken over at its lease’s expiry, answered once', async () => {
    const { url } = await startStoreProcess(tempDir(), 0, ['--lease-key', LEASE_KEY]);
    const c = client(url);
    await putTool(c, SLOW);
    const args = ['--lease-key', LEASE_KEY, '--claims', 'lease', '--scan-interval-ms', '600000'];
    const runners = await Promise.all([startRunner(url, args), startRunner(url, args)]);
    const mark = `m${Date.now()}`;
    const rid = await request(c, 'e2e-slow-started', { mark });
    const leaseOf = async (): Promise<Lease | undefined> => {
      const { leases } = (await c.lease('list', { scope: WS }, LEASE_KEY)) as { leases: Lease[] };
      return leases.find((lease) => lease.label === rid);
    };
    await until('the call started', async () => (await c.listAll({ tag: `started:${mark}` })).length > 0);
    const held = await until('its lease', leaseOf);
    const holder = runners.find((r) => held.holder.includes(`#${r.proc.pid}-`));
    if (!holder) throw new Error(`no runner holds ${held.holder}`);
    holder.signal('SIGKILL');
    const killedAt = Date.now();
    await holder.exited;
    await until('attempt 2 holds the lease', async () => ((await leaseOf())?.attempt ?? 0) >= 2, 60_000, 20);
    console.log(`takeover ${Date.now() - killedAt} ms after the SIGKILL (lease ${CLAIM_TTL_MS} ms, scans every 600 s)`);
    const response = await answer(c, rid, 60_000);
    expect(response.status).toBe('success');
    expect(response.metadata['attempt']).toBe(2);
  });
});
