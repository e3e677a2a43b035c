// Enforced limits with real Deno processes: wall clock (SIGKILL of the group, even when SIGTERM is
// trapped), memory (ArrayBuffers beyond the heap flag, heap OOM), output flood, result size, abort.
// Each asserts the exact code and that a normal call right after it still succeeds.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import type { ExecutionResult } from '../../src/result.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { codeOf, expectNoLeaks, isolateTmp, job, testConfig, tool } from './helpers.js';

let sandbox: Sandbox;
let tmp: ReturnType<typeof isolateTmp>;

beforeAll(async () => {
  tmp = isolateTmp();
  sandbox = await createSandbox({ config: testConfig(), logger: silentLogger() });
});

afterAll(async () => {
  await sandbox?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

async function expectHealthy(): Promise<void> {
  const result = await sandbox.run(job(tool('echo'), { after: 'limit' }));
  expect(result).toMatchObject({ ok: true, output: { input: { after: 'limit' } } });
}

function details(result: ExecutionResult): Record<string, unknown> {
  if (result.ok) throw new Error(`expected a failure, got output ${JSON.stringify(result.output)}`);
  return result.error.details ?? {};
}

describe('wall clock', () => {
  it.each(['busy-loop', 'sigterm-busy', 'never-resolves'])('%s ends in timeout', async (name) => {
    const result = await sandbox.run(job(tool(name, { timeoutMs: 1500 })));
    expect(codeOf(result)).toBe('timeout');
    expect(result.ok ? '' : result.error.message).toBe(`tool "${name}" timed out after 1500 ms and was killed`);
    expect(result.durationMs).toBeGreaterThanOrEqual(1500);
    await expectHealthy();
  });

  it('an abort signal kills the call at once (sandbox.crashed, reason aborted)', async () => {
    const controller = new AbortController();
    const pending = sandbox.run(
      job(tool('slow-secret'), {}, { secrets: { TOKEN: 'abort-token' }, signal: controller.signal }),
    );
    setTimeout(() => controller.abort(), 200);
    const result = await pending;
    expect(codeOf(result)).toBe('sandbox.crashed');
    expect(details(result)).toEqual({ reason: 'aborted' });
    await expectHealthy();
  });
});

describe('memory', () => {
  it('an ArrayBuffer loop (not capped by the heap flag) is killed by the memory guard: memory_limit', async () => {
    const result = await sandbox.run(job(tool('arraybuffer-bomb', { memoryMb: 64 })));
    expect(codeOf(result)).toBe('memory_limit');
    expect(details(result)).toMatchObject({ memoryMb: 64, limitMb: 128 });
    expect(details(result).rssMb as number).toBeGreaterThan(128);
    await expectHealthy();
  });

  it('a heap loop under a large heap flag is stopped by the guard: memory_limit', async () => {
    const result = await sandbox.run(job(tool('heap-bomb', { memoryMb: 128 })));
    expect(codeOf(result)).toBe('memory_limit');
    await expectHealthy();
  });

  it('a heap loop under a small heap flag dies of V8 heap OOM (SIGTRAP): memory_limit', async () => {
    const result = await sandbox.run(job(tool('heap-bomb', { memoryMb: 16 })));
    expect(codeOf(result)).toBe('memory_limit');
    expect(details(result)).toMatchObject({ memoryMb: 16, signal: 'SIGTRAP' });
    await expectHealthy();
  });
});

describe('output', () => {
  it('1 GB written straight to stdout is cut at maxOutputBytes: output_limit', async () => {
    const result = await sandbox.run(job(tool('stdout-flood')));
    expect(codeOf(result)).toBe('output_limit');
    expect(details(result)).toEqual({ maxOutputBytes: 1024 * 1024 });
    expect(result.logsTruncated).toBe(true);
    await expectHealthy();
  });

  it('an endless console.log loop is cut at maxOutputBytes: output_limit', async () => {
    const result = await sandbox.run(job(tool('console-flood')));
    expect(codeOf(result)).toBe('output_limit');
    expect(result.logs[0]).toMatch(/^line 0 x+$/);
    await expectHealthy();
  });

  it('a returned 200 MB string is refused: output.invalid', async () => {
    const result = await sandbox.run(job(tool('big-string')));
    expect(codeOf(result)).toBe('output.invalid');
    expect(result.ok ? '' : result.error.message).toBe(
      'tool "big-string": result is 209715200 characters, over the limit of 524288 bytes',
    );
    await expectHealthy();
  });

  it('a result just over maxResultBytes is refused; one just under is returned', async () => {
    const source = 'export async function execute(input) { return "y".repeat(input.n) }';
    const over = await sandbox.run(job({ ...tool('echo'), name: 'sized', source }, { n: 524288 }));
    expect(codeOf(over)).toBe('output.invalid');
    const under = await sandbox.run(job({ ...tool('echo'), name: 'sized', source }, { n: 524286 }));
    expect(under).toMatchObject({ ok: true });
    expect((under as { output: string }).output).toHaveLength(524286);
  });
});
