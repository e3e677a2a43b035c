// A SandboxProcess's state belongs to the process: nothing outside process.ts assigns it (checked on
// the source), and its own transitions (startJob, park, kill, exit) refuse every step the lifecycle
// does not allow — shown on a real Deno harness process in reuse mode.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { resolveDeno } from '../../src/sandbox/index.js';
import { createDirectLauncher } from '../../src/sandbox/launcher.js';
import { createMemoryGuard, type MemoryGuard } from '../../src/sandbox/memory-guard.js';
import { spawnSandboxProcess, type SandboxProcess } from '../../src/sandbox/process.js';
import { runJob } from '../../src/sandbox/run-job.js';
import { expectNoLeaks, fixture, isolateTmp, job, tool } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let denoPath: string;
let guard: MemoryGuard;
let proc: SandboxProcess | undefined;

beforeAll(async () => {
  tmp = isolateTmp();
  denoPath = (await resolveDeno()).path;
  guard = await createMemoryGuard({ logger: silentLogger(), location: null });
});

afterAll(async () => {
  proc?.kill('closed');
  await proc?.exited;
  guard.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

const settings = (seq: number) => ({
  seq,
  source64: Buffer.from(fixture('counter')).toString('base64'),
  lang: 'ts' as const,
  timeoutMs: 30_000,
  reuse: true,
  maxResultBytes: 1 << 16,
  maxOutputBytes: 1 << 20,
  maxLogBytes: 4096,
  startedAt: performance.now(),
});

describe('SandboxProcess state', () => {
  it('no module but process.ts assigns a process state or its job count', () => {
    const dir = fileURLToPath(new URL('../../src/sandbox/', import.meta.url));
    const writers = readdirSync(dir)
      .filter((name) => name.endsWith('.ts') && name !== 'process.ts')
      .filter((name) =>
        /\.(?:state\s*=[^=]|jobsServed\s*(?:\+\+|\+=|=[^=]))/.test(readFileSync(join(dir, name), 'utf8')),
      );
    expect(writers).toEqual([]);
  });

  it('starting -> ready -> busy -> idle -> busy -> closing -> dead, refusing every other step', async () => {
    const limits = { maxOutputBytes: 1 << 20, maxFrameBytes: 1 << 20, maxLogLineBytes: 4096 };
    const p = spawnSandboxProcess({
      id: 1,
      key: 'state',
      denoPath,
      net: [],
      memoryMb: 128,
      limits,
      guard,
      launcher: createDirectLauncher(),
      logger: silentLogger(),
    });
    proc = p;
    expect(p.state).toBe('starting');
    expect(p.startJob('{}\n')).toBe(false);
    expect(p.park()).toBe(false);
    expect(p.jobsServed).toBe(0);

    await p.ready;
    expect(p.state).toBe('ready');
    expect(p.park()).toBe(false);

    const first = await runJob(p, job(tool('counter')), settings(1), guard);
    expect(first.result).toMatchObject({ ok: true, output: { calls: 1, pid: p.pid } });
    expect(first.reusable).toBe(true);
    expect(p.state).toBe('busy');
    expect(p.jobsServed).toBe(1);
    expect(p.park()).toBe(true);
    expect(p.state).toBe('idle');
    expect(p.park()).toBe(false);

    const second = await runJob(p, job(tool('counter')), settings(2), guard);
    // the same process served the second job
    expect(second.result).toMatchObject({ ok: true, output: { pid: p.pid } });
    expect(p.jobsServed).toBe(2);

    p.kill('retired');
    expect(p.state).toBe('closing');
    expect(p.startJob('{}\n')).toBe(false);
    expect(p.park()).toBe(false);
    expect(await p.exited).toMatchObject({ killReason: 'retired' });
    expect(p.state).toBe('dead');
    expect(p.jobsServed).toBe(2);
  });
});
