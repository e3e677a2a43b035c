// Pool refills stay off the calls' path (issue 12): a call that finds nothing warm gets the first
// process spawned for it (the refill queues up behind it), and neither acquire() nor release()
// spawns anything before returning to the call; the refill happens right after, in the background.
// Real Deno processes through the real spawn recipe; the pool's spawn function is wrapped only to
// record the order of spawns.

import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { resolveDeno } from '../../src/sandbox/deno-binary.js';
import { createDirectLauncher } from '../../src/sandbox/launcher.js';
import { createMemoryGuard } from '../../src/sandbox/memory-guard.js';
import { createPool, type Pool, type PoolKeySpec } from '../../src/sandbox/pool.js';
import { spawnSandboxProcess, type SandboxProcess } from '../../src/sandbox/process.js';
import { useIsolatedSandboxes, waitFor } from './helpers.js';

let current: { close(): Promise<void> } | undefined;
useIsolatedSandboxes(
  () => current,
  () => (current = undefined),
);

const spec: PoolKeySpec = { key: '64||', net: [], extra: [], memoryMb: 64 };

async function recordingPool(poolSize: number): Promise<{ pool: Pool; spawned: SandboxProcess[] }> {
  const logger = silentLogger();
  const deno = await resolveDeno();
  const guard = await createMemoryGuard({ logger });
  const launcher = createDirectLauncher();
  const limits = { maxOutputBytes: 1 << 20, maxFrameBytes: 1 << 20, maxLogLineBytes: 1 << 16 };
  const spawned: SandboxProcess[] = [];
  const pool = createPool({
    poolSize,
    poolMax: 8,
    poolIdleMs: 60_000,
    maxReuseCalls: 100,
    guard,
    logger,
    spawn: (s) => {
      const proc = spawnSandboxProcess({
        id: spawned.length + 1,
        key: s.key,
        denoPath: deno.path,
        net: s.net,
        extra: s.extra,
        memoryMb: s.memoryMb,
        limits,
        guard,
        launcher,
        logger,
      });
      spawned.push(proc);
      return proc;
    },
  });
  current = {
    async close() {
      await pool.close();
      await launcher.close();
      guard.close();
    },
  };
  return { pool, spawned };
}

describe('pool refills', () => {
  it('a call that finds nothing warm waits for the first process spawned, never behind the refill', async () => {
    const { pool, spawned } = await recordingPool(2);
    const acquiring = pool.acquire(spec);
    // before acquire() returns to the call: only the call's own process was spawned
    expect(spawned).toHaveLength(1);
    const proc = await acquiring;
    expect(proc).toBe(spawned[0]);
    await waitFor(() => pool.stats().warm === 2, 30_000, 'the refill after the call');
    expect(spawned).toHaveLength(3);
    proc.kill('finished');
  });

  it('taking the last warm process and releasing after a call spawn nothing before returning', async () => {
    const { pool, spawned } = await recordingPool(1);
    pool.prewarm(spec);
    await waitFor(() => pool.stats().warm === 1, 30_000, 'prewarm');
    expect(spawned).toHaveLength(1);
    const proc = await pool.acquire(spec);
    expect(proc).toBe(spawned[0]);
    // the key ran dry: its refill is scheduled, not started on the call's path
    expect(spawned).toHaveLength(1);
    await waitFor(() => pool.stats().warm === 1, 30_000, 'the refill after the hand-out');
    expect(spawned).toHaveLength(2);
    proc.kill('finished');
    const second = await pool.acquire(spec);
    expect(second).toBe(spawned[1]);
    expect(spawned).toHaveLength(2);
    second.kill('finished');
    pool.release(spec);
    expect(spawned).toHaveLength(2);
    await waitFor(() => pool.stats().warm === 1, 30_000, 'the refill after release');
    expect(spawned).toHaveLength(3);
  });
});
