// Isolation through the whole request path: a tool that demands `limits.isolation: "process"` gets a
// fresh Deno process for every call; a warm tool's module state never carries over between calls.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { answer, cleanupAll, client, putTool, request, startRunnerWithStore, toolContext } from './harness.js';

let c: StoreClient;
const PID_AND_COUNT = 'let calls = 0; export async function execute() { calls++; return { pid: Deno.pid, calls }; }';

beforeAll(async () => {
  const { url } = await startRunnerWithStore();
  c = client(url);
  await putTool(c, toolContext('iso-process', PID_AND_COUNT, { limits: { timeout_ms: 5000, memory_mb: 64, isolation: 'process' } }));
  await putTool(c, toolContext('iso-warm', PID_AND_COUNT));
}, 60_000);

afterAll(cleanupAll);

describe('isolation through the request path', () => {
  it('a tool demanding process isolation runs every call in a new process', async () => {
    const pids = new Set<number>();
    for (let i = 0; i < 3; i++) {
      const response = await answer(c, await request(c, 'iso-process', {}));
      expect(response.output).toMatchObject({ calls: 1 });
      pids.add((response.output as { pid: number }).pid);
    }
    expect(pids.size).toBe(3);
  });

  it('a warm tool starts every call with fresh module state', async () => {
    for (let i = 0; i < 3; i++) {
      const response = await answer(c, await request(c, 'iso-warm', {}));
      expect(response.output).toMatchObject({ calls: 1 });
    }
  });
});
