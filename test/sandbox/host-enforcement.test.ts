// The host does not trust the harness either: a compromised entry module (fixture lying-harness.ts,
// a real Deno process speaking the protocol with a known nonce) sends oversized, malformed and
// out-of-sequence frames, and each ends in output.invalid with the process killed.

import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { MAX_API_FRAMES } from '../../src/sandbox/api-proxy.js';
import { resolveDeno } from '../../src/sandbox/index.js';
import { createMemoryGuard, type MemoryGuard } from '../../src/sandbox/memory-guard.js';
import { createDirectLauncher } from '../../src/sandbox/launcher.js';
import { spawnSandboxProcess } from '../../src/sandbox/process.js';
import { runJob } from '../../src/sandbox/run-job.js';
import { codeOf, expectNoLeaks, isolateTmp, job, tool } from './helpers.js';

const LYING_HARNESS = fileURLToPath(new URL('../fixtures/sandbox/lying-harness.ts', import.meta.url));
const MAX_RESULT = 1000;

let tmp: ReturnType<typeof isolateTmp>;
let denoPath: string;
let guard: MemoryGuard;

beforeAll(async () => {
  tmp = isolateTmp();
  denoPath = (await resolveDeno()).path;
  guard = await createMemoryGuard({ logger: silentLogger(), location: null });
});

afterAll(() => {
  guard.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

function spawnLying() {
  const logger = silentLogger();
  const limits = { maxOutputBytes: 1 << 20, maxFrameBytes: MAX_RESULT + 64 * 1024, maxLogLineBytes: 4096 };
  return spawnSandboxProcess({
    id: 1,
    key: 'lying',
    denoPath,
    net: [],
    memoryMb: 128,
    limits,
    guard,
    launcher: createDirectLauncher(),
    logger,
    harnessPath: LYING_HARNESS,
  });
}

function settings(seq: number, reuse: boolean) {
  return {
    seq,
    source64: '',
    lang: 'ts' as const,
    timeoutMs: 30_000,
    reuse,
    maxResultBytes: MAX_RESULT,
    maxOutputBytes: 1 << 20,
    maxLogBytes: 4096,
    startedAt: performance.now(),
  };
}

async function runLying(mode: string) {
  const proc = spawnLying();
  await proc.ready;
  const outcome = await runJob(proc, job(tool('echo'), { mode }), settings(7, false), guard);
  const exit = await proc.exited;
  return { ...outcome, exit };
}

describe('host-side enforcement against a lying harness', () => {
  it.each([
    ['oversized', `tool "echo" returned a result over the limit of ${MAX_RESULT} bytes`],
    ['huge', `tool "echo" returned a result over the limit of ${MAX_RESULT} bytes`],
    ['not-json', 'tool "echo" produced a malformed result frame'],
    ['wrong-seq', 'tool "echo" produced a malformed out-of-sequence (8 instead of 7) frame'],
    ['bad-error', 'tool "echo" produced a malformed error frame'],
    ['unknown-type', 'tool "echo" produced a malformed unknown (Q) frame'],
  ])('%s -> output.invalid, process killed', async (mode, message) => {
    const { result, reusable, exit } = await runLying(mode);
    expect(codeOf(result)).toBe('output.invalid');
    expect(result.ok ? '' : result.error.message).toBe(message);
    expect(reusable).toBe(false);
    expect(exit.signal).toBe('SIGKILL');
  });

  it('a second result frame before the call ended is refused: output.invalid', async () => {
    const { result, exit } = await runLying('double-result');
    expect(codeOf(result)).toBe('output.invalid');
    expect(result.ok ? '' : result.error.message).toBe('tool "echo" produced a malformed second result frame');
    expect(exit.signal).toBe('SIGKILL');
  });

  it('a frame written a few bytes at a time (split across chunks, multi-byte characters cut) is read whole', async () => {
    const { result } = await runLying('split-frame');
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, output: { split: 'é€😀 across writes' } });
  });

  it('a flood of valid sync frames counts against the output cap: output_limit', async () => {
    const { result, exit } = await runLying('flood-sync');
    expect(codeOf(result)).toBe('output_limit');
    expect(result.ok ? '' : result.error.message).toBe(
      `tool "echo" wrote more than ${1 << 20} bytes to stdout/stderr and was killed`,
    );
    expect(exit.signal).toBe('SIGKILL');
  });

  it('a flood of valid context.api frames ends at the frame budget: output_limit (api_limit)', async () => {
    const { result, exit } = await runLying('flood-api');
    expect(codeOf(result)).toBe('output_limit');
    expect(result.ok ? '' : result.error.message).toBe(
      `tool "echo" sent more than ${MAX_API_FRAMES} context.api requests in one execution and was killed`,
    );
    expect(result.ok ? {} : result.error.details).toEqual({ reason: 'api_limit' });
    expect(exit.signal).toBe('SIGKILL');
  });

  it('the host sends its nonce once, as the first member of the first job line, and never again', async () => {
    // (a tool in a reused process can read stdin: a later job line must not carry the nonce)
    const proc = spawnLying();
    await proc.ready;
    const members: unknown[] = [];
    for (const seq of [1, 2, 3]) {
      const { result } = await runJob(proc, job(tool('echo'), { mode: 'job-members' }), settings(seq, true), guard);
      expect(result.ok, JSON.stringify(result)).toBe(true);
      members.push(result.ok ? result.output : undefined);
      expect(proc.park()).toBe(true);
    }
    expect(members.map((m) => (m as { nonce: string }).nonce)).toEqual(['32 hex', 'undefined', 'undefined']);
    expect((members[0] as { members: string[] }).members[0]).toBe('nonce');
    proc.kill('closed');
    expect((await proc.exited).signal).toBe('SIGKILL');
  });

  it('a result frame without its stderr sync marker is still accepted after a short grace', async () => {
    const { result } = await runLying('no-sync');
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, output: 'late sync' });
    const exited = await runLying('no-sync-exit');
    expect(exited.result, JSON.stringify(exited.result)).toMatchObject({ ok: true, output: 'exited before sync' });
  });
});
