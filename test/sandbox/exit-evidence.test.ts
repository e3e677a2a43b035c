// Issue 9 (fragile): a memory kill is recognised only from the runner's own evidence — its memory
// guard's kill, the cgroup's oom_kill count, or a SIGTRAP death while the guard's own RSS samples show
// the heap filled. Exit codes the tool picks (Deno.exit(133/137/134)) and signals it sends itself
// (Deno.kill(Deno.pid, ...) needs no permission in Deno 2.9.6), with or without V8's OOM text on
// stderr, are sandbox.crashed with the exit code and signal in the details.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { heapFilled } from '../../src/sandbox/outcome.js';
import { createSandbox, type Sandbox, type SandboxTool } from '../../src/sandbox/index.js';
import { codeOf, expectNoLeaks, isolateTmp, job, testConfig, tool } from './helpers.js';

let sandbox: Sandbox;
let tmp: ReturnType<typeof isolateTmp>;

beforeAll(async () => {
  tmp = isolateTmp();
  sandbox = await createSandbox({ config: testConfig({ poolSize: 2 }), logger: silentLogger() });
});

afterAll(async () => {
  await sandbox?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

function inline(name: string, body: string, memoryMb = 64): SandboxTool {
  return { ...tool('echo'), name, memoryMb, source: `export async function execute(input, context) { ${body} }` };
}

const OOM_TEXT =
  'Deno.stderr.writeSync(new TextEncoder().encode("\\n<--- Last few GCs --->\\n#\\n# Fatal JavaScript out of memory: Reached heap limit\\n#\\n"));';

describe('exits the tool chooses are never memory_limit', () => {
  it.each([
    ['exit-133', 'Deno.exit(133);', 133, null],
    ['exit-137', 'Deno.exit(137);', 137, null],
    ['exit-134', 'Deno.exit(134);', 134, null],
    ['oom-text-exit-133', `${OOM_TEXT} Deno.exit(133);`, 133, null],
    ['self-sigtrap', 'Deno.kill(Deno.pid, "SIGTRAP"); await new Promise(() => {});', null, 'SIGTRAP'],
    [
      'oom-text-self-sigtrap',
      `${OOM_TEXT} Deno.kill(Deno.pid, "SIGTRAP"); await new Promise(() => {});`,
      null,
      'SIGTRAP',
    ],
    ['self-sigkill', 'Deno.kill(Deno.pid, "SIGKILL"); await new Promise(() => {});', null, 'SIGKILL'],
    ['self-sigsegv-abrt', 'Deno.kill(Deno.pid, "SIGABRT"); await new Promise(() => {});', null, 'SIGABRT'],
  ])('%s ends in sandbox.crashed with its exit code and signal', async (name, body, exitCode, signal) => {
    const result = await sandbox.run(job(inline(name, body)));
    expect(codeOf(result)).toBe('sandbox.crashed');
    expect(result.ok ? '' : result.error.message).toBe(
      `the sandbox process of tool "${name}" died (exit code ${exitCode}, signal ${signal})`,
    );
    expect(result.ok ? {} : result.error.details).toEqual({ exitCode, signal });
    expect(await sandbox.run(job(tool('echo'), { after: name }))).toMatchObject({ ok: true });
  });

  it('a real V8 heap OOM (SIGTRAP with a full heap in the guard samples) is still memory_limit', async () => {
    const result = await sandbox.run(job(tool('heap-bomb', { memoryMb: 16 })));
    expect(codeOf(result)).toBe('memory_limit');
    expect(result.ok ? {} : result.error.details).toMatchObject({ memoryMb: 16, signal: 'SIGTRAP', exitCode: null });
  });
});

describe('heapFilled (the evidence rule)', () => {
  const MIB = 1024 * 1024;
  it('needs samples, and growth of half the heap or RSS above heap + runtime', () => {
    expect(heapFilled(undefined, 16)).toBe(false);
    expect(heapFilled({ baselineBytes: undefined, peakBytes: 900 * MIB }, 16)).toBe(false);
    expect(heapFilled({ baselineBytes: 32 * MIB, peakBytes: 39 * MIB }, 16)).toBe(false);
    expect(heapFilled({ baselineBytes: 32 * MIB, peakBytes: 40 * MIB }, 16)).toBe(true);
    expect(heapFilled({ baselineBytes: 150 * MIB, peakBytes: 156 * MIB }, 128)).toBe(true);
    expect(heapFilled({ baselineBytes: 150 * MIB, peakBytes: 155 * MIB }, 128)).toBe(false);
    expect(heapFilled({ baselineBytes: 40 * MIB, peakBytes: 100 * MIB }, 128)).toBe(false);
  });
});
