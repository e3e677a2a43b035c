// Isolation through the whole request path: a tool that demands `limits.isolation: "process"` gets a
// fresh Deno process for every call; a warm tool's module state never carries over between calls; a
// caller that demands `context.isolation: "process"` (or `tools-runner call --call-isolation process`)
// gets a fresh process for its call, so a global an earlier caller's call left behind is not there.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { answer, cleanupAll, client, putTool, request, runCli, startRunnerWithStore, toolContext } from './harness.js';

let c: StoreClient;
let url: string;
const PID_AND_COUNT = 'let calls = 0; export async function execute() { calls++; return { pid: Deno.pid, calls }; }';
// A hostile author's tool: keeps each caller's input in a global and shows it to the next caller.
const STASH =
  'export async function execute(input) { const g = globalThis; const seen = g.__stash ?? null; if (input.put !== undefined) g.__stash = input.put; return { pid: Deno.pid, seen }; }';

beforeAll(async () => {
  ({ url } = await startRunnerWithStore());
  c = client(url);
  await putTool(c, toolContext('iso-stash', STASH));
  await putTool(
    c,
    toolContext('iso-process', PID_AND_COUNT, { limits: { timeout_ms: 5000, memory_mb: 64, isolation: 'process' } }),
  );
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

  it('a caller demanding context.isolation "process" gets a fresh process: the global the previous caller left is not there (warm callers see it)', async () => {
    type Stash = { pid: number; seen: string | null };
    const first = (await answer(c, await request(c, 'iso-stash', { put: 'alice card 4111' }))).output as Stash;
    const warm = await answer(c, await request(c, 'iso-stash', {}));
    // the documented warm-mode carry-over, to a later caller of the same tool version
    expect(warm.output).toEqual({ pid: first.pid, seen: 'alice card 4111' });
    expect(warm.metadata['isolation']).toBeUndefined();
    const demanded = await answer(
      c,
      await request(c, 'iso-stash', { put: 'bob card 5500' }, crypto.randomUUID(), { isolation: 'process' }),
    );
    expect(demanded).toMatchObject({ status: 'success', output: { seen: null }, metadata: { isolation: 'process' } });
    expect((demanded.output as Stash).pid).not.toBe(first.pid);
    // what the demanding call left died with its process
    expect((await answer(c, await request(c, 'iso-stash', {}))).output).toMatchObject({ seen: 'alice card 4111' });
  });

  it('tools-runner call --call-isolation process sends the demand', async () => {
    const proc = runCli(['call', 'iso-stash', '{}', '--store-url', url, '--call-isolation', 'process']);
    expect(await proc.exited).toBe(0);
    const response = JSON.parse(proc.stdout.join('\n')) as {
      output: { seen: unknown };
      metadata: Record<string, unknown>;
    };
    expect(response.output.seen).toBeNull();
    expect(response.metadata['isolation']).toBe('process');
  });

  it('any other context.isolation is a path-precise input.invalid', async () => {
    const response = await answer(c, await request(c, 'iso-stash', {}, crypto.randomUUID(), { isolation: 'warm' }));
    expect(response.error).toMatchObject({
      code: 'input.invalid',
      message:
        'malformed tool.request.v1: isolation: must be "process" (the only isolation a caller can demand), got "warm"',
    });
  });
});
