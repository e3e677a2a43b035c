// The harness's W hint (sandbox/harness.ts runJob): a call says it waits on the event loop only when
// a macrotask ran before it settled — never for a call that settles within its microtasks, however
// many, nor for one that computes. The hint's timer is made only for a call still running some
// microtasks after execute() returned; what the host sees must be the same as before that change.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { resolveDeno } from '../../src/sandbox/index.js';
import { prepareHarness, type HarnessFiles } from '../../src/sandbox/harness-file.js';
import { createDirectLauncher } from '../../src/sandbox/launcher.js';
import { createMemoryGuard, type MemoryGuard } from '../../src/sandbox/memory-guard.js';
import { spawnSandboxProcess } from '../../src/sandbox/process.js';
import { runJob } from '../../src/sandbox/run-job.js';
import { expectNoLeaks, isolateTmp, job, tool } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let denoPath: string;
let guard: MemoryGuard;
let harness: HarnessFiles;

beforeAll(async () => {
  tmp = isolateTmp();
  denoPath = (await resolveDeno()).path;
  guard = await createMemoryGuard({ logger: silentLogger(), location: null });
  harness = await prepareHarness();
});

afterAll(async () => {
  guard.close();
  await harness.remove();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

const TOOLS: Array<[string, string, number]> = [
  ['settles at once', 'export async function execute() { return 1; }', 0],
  ['50 microtask hops', 'export async function execute() { for (let i = 0; i < 50; i++) await null; return 2; }', 0],
  ['a 30 ms timer', 'export async function execute() { await new Promise((r) => setTimeout(r, 30)); return 3; }', 1],
  [
    'computes for 60 ms',
    'export async function execute() { const end = Date.now() + 60; while (Date.now() < end); return 4; }',
    0,
  ],
  [
    'a timer after 40 hops',
    'export async function execute() { for (let i = 0; i < 40; i++) await null; await new Promise((r) => setTimeout(r, 20)); return 5; }',
    1,
  ],
];

describe('the W hint', () => {
  it.each([true, false])('is sent exactly by the calls that wait on the event loop (reuse: %s)', async (reuse) => {
    const spawn = () =>
      spawnSandboxProcess({
        id: 1,
        key: 'hint',
        denoPath,
        net: [],
        memoryMb: 128,
        limits: { maxOutputBytes: 1 << 20, maxFrameBytes: 1 << 20, maxLogLineBytes: 4096 },
        guard,
        launcher: createDirectLauncher(),
        logger: silentLogger(),
        harnessPath: harness.path,
        importMapPath: harness.importMapPath,
        sharedCwd: harness.sharedCwd,
      });
    let proc = spawn();
    const seen: Array<[string, unknown, number]> = [];
    let seq = 0;
    for (const [what, source, _hints] of TOOLS) {
      if (!reuse && seq > 0) proc = spawn();
      await proc.ready;
      let hints = 0;
      seq++;
      const t = tool('echo', { source });
      const { result } = await runJob(
        proc,
        job(t, {}),
        {
          seq,
          source64: Buffer.from(source).toString('base64'),
          lang: 'ts',
          timeoutMs: 30_000,
          reuse,
          maxResultBytes: 1 << 20,
          maxOutputBytes: 1 << 20,
          maxLogBytes: 4096,
          startedAt: performance.now(),
          onWaiting: () => hints++,
        },
        guard,
      );
      seen.push([what, result.ok ? result.output : result.error.message, hints]);
      if (reuse) expect(proc.park()).toBe(true);
      else await proc.exited;
    }
    if (reuse) {
      proc.kill('closed');
      await proc.exited;
    }
    expect(seen).toEqual(TOOLS.map(([what, _source, hints], i) => [what, i + 1, hints]));
  });
});
