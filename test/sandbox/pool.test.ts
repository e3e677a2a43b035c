// The warm pool: pre-spawned single-use processes per permission set, background replenishment,
// bounds, idle retirement, reuse mode, spawn failures, abort and close.

import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import {
  captureLogger,
  codeOf,
  expectNoLeaks,
  isolateTmp,
  job,
  ourDenoProcesses,
  testConfig,
  tool,
  waitFor,
} from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let sandbox: Sandbox | undefined;

beforeAll(() => {
  tmp = isolateTmp();
});

afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
  expectNoLeaks(tmp.dir);
});

afterAll(() => {
  tmp.restore();
});

type Counter = { calls: number; pid: number };
const counterOf = (result: Awaited<ReturnType<Sandbox['run']>>): Counter => {
  if (!result.ok) throw new Error(`counter failed: ${result.error.code} ${result.error.message}`);
  return result.output as Counter;
};

describe('strict single-use pool', () => {
  it('pre-spawns poolSize processes, hands one out per call and replenishes in the background', async () => {
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 2, isolation: 'process' }),
      logger: captureLogger().logger,
    });
    const s = sandbox;
    await waitFor(() => s.stats().warm === 2, 30_000, 'two warm processes');
    expect(s.stats()).toMatchObject({ warm: 2, busy: 0, spawned: 2 });
    expect(ourDenoProcesses()).toHaveLength(2);
    const first = counterOf(await s.run(job(tool('counter'))));
    const second = counterOf(await s.run(job(tool('counter'))));
    expect(first.calls).toBe(1);
    expect(second.calls).toBe(1);
    expect(second.pid).not.toBe(first.pid);
    await waitFor(() => s.stats().warm === 2 && s.stats().spawned === 4, 30_000, 'replenishment');
    expect(existsSync(`/proc/${first.pid}`)).toBe(false);
  });

  it('keeps separate warm sets per permission set within poolMax', async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 2, poolMax: 3 }), logger: captureLogger().logger });
    const s = sandbox;
    await waitFor(() => s.stats().warm === 2, 30_000, 'default key warm');
    expect(await s.run(job(tool('counter', { memoryMb: 64 })))).toMatchObject({ ok: true });
    await waitFor(() => s.stats().warm === 3, 30_000, 'second key filled up to poolMax');
    await s.run(job(tool('counter', { memoryMb: 96 })));
    const heapFlags = (): string[] =>
      ourDenoProcesses().flatMap((pid) => {
        let cmdline: string;
        try {
          cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        } catch {
          return []; // exited between the listing and this read (a retired process)
        }
        return [/max-old-space-size=(\d+)/.exec(cmdline)?.[1] ?? '?'];
      });
    // the newest key takes its poolSize from the least recently used keys (96 -> 2, 64 -> 1, 128 -> 0),
    // and the process that just served the 96 call stays parked for the next call of that version,
    // taking the room of the less recently used 64 key's prewarmed process: 96 -> 3
    await waitFor(
      () => heapFlags().sort().join(',') === '96,96,96' && s.stats().warm === 3,
      30_000,
      'the third key to take room from the older ones',
    );
    expect(s.stats()).toMatchObject({ warm: 3, busy: 0 });
  });

  it('retires warm processes idle for poolIdleMs', async () => {
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 2, poolIdleMs: 1000 }),
      logger: captureLogger().logger,
    });
    const s = sandbox;
    await waitFor(() => s.stats().spawned === 2, 30_000, 'spawns');
    await waitFor(() => s.stats().warm === 0 && ourDenoProcesses().length === 0, 30_000, 'idle retirement');
    expect(await s.run(job(tool('echo'), { again: true }))).toMatchObject({
      ok: true,
      output: { input: { again: true } },
    });
  });

  it('poolSize 0 spawns one fresh process per call and keeps nothing warm', async () => {
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 0, isolation: 'process' }),
      logger: captureLogger().logger,
    });
    expect(await sandbox.run(job(tool('echo')))).toMatchObject({ ok: true });
    expect(sandbox.stats()).toMatchObject({ warm: 0, spawned: 1 });
  });
});

describe('reuse mode', () => {
  it('serves several calls of the same tool version from one process, each with a fresh module instance', async () => {
    sandbox = await createSandbox({
      config: testConfig({ isolation: 'process', reuseTools: ['counter'], poolMax: 8 }),
      logger: captureLogger().logger,
    });
    const calls = [];
    for (let i = 0; i < 3; i++) calls.push(counterOf(await sandbox.run(job(tool('counter')))));
    expect(calls.map((c) => c.calls)).toEqual([1, 1, 1]);
    expect(new Set(calls.map((c) => c.pid)).size).toBe(1);

    const otherVersion = counterOf(await sandbox.run(job(tool('counter', { version: '2.0.0' }))));
    expect(otherVersion.pid).not.toBe(calls[0]?.pid);

    // secrets are part of the key: other secret values never share a process with these calls
    const withSecrets = [];
    for (let i = 0; i < 2; i++)
      withSecrets.push(counterOf(await sandbox.run(job(tool('counter'), {}, { secrets: { K: 'v-secret' } }))));
    expect(withSecrets[1]?.pid).toBe(withSecrets[0]?.pid);
    expect(withSecrets[0]?.pid).not.toBe(calls[0]?.pid);
    const otherSecret = counterOf(await sandbox.run(job(tool('counter'), {}, { secrets: { K: 'w-secret' } })));
    expect(otherSecret.pid).not.toBe(withSecrets[0]?.pid);

    expect(counterOf(await sandbox.run(job(tool('counter')))).pid).toBe(calls[0]?.pid);
  });

  it('a reused process that times out is killed; the next call starts fresh', async () => {
    sandbox = await createSandbox({
      config: testConfig({ reuseTools: ['reuse-loop'] }),
      logger: captureLogger().logger,
    });
    const source =
      'let n = 0; export async function execute(i) { n++; if (i.spin) while (true) {} return { n, pid: Deno.pid } }';
    const t = { ...tool('echo'), name: 'reuse-loop', source, timeoutMs: 1500 };
    const first = await sandbox.run(job(t, {}));
    expect(first).toMatchObject({ ok: true, output: { n: 1 } });
    expect(await sandbox.run(job(t, {}))).toMatchObject({
      ok: true,
      output: { n: 1, pid: (first.ok && (first.output as { pid: number }).pid) as number },
    });
    expect(codeOf(await sandbox.run(job(t, { spin: true })))).toBe('timeout');
    const after = await sandbox.run(job(t, {}));
    expect(after).toMatchObject({ ok: true, output: { n: 1 } });
    expect((after.ok && (after.output as { pid: number }).pid) as number).not.toBe(
      (first.ok && (first.output as { pid: number }).pid) as number,
    );
  });
});

describe('reuse mode: idle processes', () => {
  it('a parked process that writes output while idle is killed; the next call starts fresh', async () => {
    sandbox = await createSandbox({ config: testConfig({ reuseTools: ['late-log'] }), logger: captureLogger().logger });
    const source =
      'let n = 0; export async function execute(i) { n++; if (i.late) setTimeout(() => console.log("late"), 50); return { n, pid: Deno.pid } }';
    const t = { ...tool('echo'), name: 'late-log', source };
    const first = counterOf2(await sandbox.run(job(t, { late: true })));
    expect(first.n).toBe(1);
    await waitFor(() => !existsSync(`/proc/${first.pid}`), 30_000, 'the chatty idle process to be killed');
    const second = counterOf2(await sandbox.run(job(t, {})));
    expect(second.n).toBe(1);
    expect(second.pid).not.toBe(first.pid);
    const third = counterOf2(await sandbox.run(job(t, {})));
    expect(third).toEqual({ n: 1, pid: second.pid });
  });
});

const counterOf2 = (result: Awaited<ReturnType<Sandbox['run']>>): { n: number; pid: number } => {
  if (!result.ok) throw new Error(`call failed: ${result.error.code} ${result.error.message}`);
  return result.output as { n: number; pid: number };
};

describe('failures and shutdown', () => {
  it('a Deno binary that disappears after startup fails calls with the spawn error', async () => {
    const vanishing = join(tmp.dir, 'vanishing-deno');
    writeFileSync(vanishing, '#!/bin/sh\necho "deno 2.9.6 (stable)"\n');
    chmodSync(vanishing, 0o755);
    sandbox = await createSandbox({
      config: testConfig({ denoPath: vanishing, poolSize: 0 }),
      logger: captureLogger().logger,
    });
    rmSync(vanishing);
    const result = await sandbox.run(job(tool('echo')));
    expect(codeOf(result)).toBe('sandbox.crashed');
    expect(result.ok ? '' : result.error.message).toBe(
      `could not start a Deno sandbox process for tool "echo": Deno sandbox process failed to start: spawn ${vanishing} ENOENT`,
    );
  });

  it('a Deno that cannot start fails each call clearly and the pool backs off instead of spinning', async () => {
    const fake = join(tmp.dir, 'broken-deno');
    writeFileSync(
      fake,
      '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "deno 2.9.6 (stable)"; exit 0; fi\necho "cannot start" >&2\nexit 3\n',
    );
    chmodSync(fake, 0o755);
    const { logger, lines } = captureLogger();
    sandbox = await createSandbox({ config: testConfig({ denoPath: fake, poolSize: 2 }), logger });
    const result = await sandbox.run(job(tool('echo')));
    expect(codeOf(result)).toBe('sandbox.crashed');
    expect(result.ok ? '' : result.error.message).toBe(
      'could not start a Deno sandbox process for tool "echo": Deno sandbox process failed to start: exit code 3, signal null (stderr: cannot start)',
    );
    expect(result.ok ? {} : result.error.details).toEqual({ reason: 'spawn_failed' });
    await waitFor(
      () => lines.some((line) => line.includes('"msg":"sandbox spawn failed"')),
      30_000,
      'a spawn failure report',
    );
    const spawned = sandbox.stats().spawned;
    expect(spawned).toBeLessThanOrEqual(6);
    expect(codeOf(await sandbox.run(job(tool('echo'))))).toBe('sandbox.crashed');
  });

  it('an abort while waiting for a process returns at once and the process goes back to the pool', async () => {
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 0, isolation: 'process' }),
      logger: captureLogger().logger,
    });
    const controller = new AbortController();
    const pending = sandbox.run(job(tool('echo'), {}, { signal: controller.signal }));
    controller.abort();
    expect(await pending).toMatchObject({
      ok: false,
      error: { code: 'sandbox.crashed', details: { reason: 'aborted' } },
    });
    const s = sandbox;
    await waitFor(() => s.stats().warm === 1, 30_000, 'the unused process to be parked as warm');
    expect(s.stats().spawned).toBe(1);
  });

  it('close() ends running calls as sandbox.crashed and later calls are refused', async () => {
    sandbox = await createSandbox({ config: testConfig(), logger: captureLogger().logger });
    const s = sandbox;
    const running = s.run(job(tool('busy-loop')));
    await waitFor(() => s.stats().busy === 1, 30_000, 'the call to start');
    await s.close();
    expect(await running).toMatchObject({
      ok: false,
      error: { code: 'sandbox.crashed', details: { reason: 'closed' } },
    });
    expect(await s.run(job(tool('echo')))).toMatchObject({
      ok: false,
      error: { code: 'sandbox.crashed', details: { reason: 'closed' } },
    });
    expect(s.stats()).toMatchObject({ warm: 0, busy: 0 });
  });
});
