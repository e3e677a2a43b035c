// Issue 9 (fragile): a parked reuse process must not keep running tool code after its call. Tools that
// leave a busy interval, a setTimeout chain, a spinning Worker or a delayed busy loop behind are
// retired as soon as the pool sees their CPU time grow (far before poolIdleMs), and the next call
// starts fresh; a quiet reused process stays parked and keeps serving.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { busyWhileParked, IDLE_CPU_RULE, openCpuReader, readCpuMs } from '../../src/sandbox/cpu.js';
import { createSandbox, type Sandbox, type SandboxTool } from '../../src/sandbox/index.js';
import { captureLogger, job, testConfig, tool, useIsolatedSandboxes, waitFor } from './helpers.js';

let sandbox: Sandbox | undefined;
useIsolatedSandboxes(
  () => sandbox,
  () => void (sandbox = undefined),
);

const LEFTOVERS: Array<[string, string]> = [
  ['busy-interval', 'setInterval(() => { for (;;) {} }, 1);'],
  ['busy-timeout-chain', 'const f = () => { for (let i = 0; i < 200000; i++); setTimeout(f, 0); }; setTimeout(f, 0);'],
  ['microtask-then-spin', 'queueMicrotask(() => setTimeout(() => { for (;;) {} }, 0));'],
  [
    'spinning-worker',
    'new Worker("data:application/javascript," + encodeURIComponent("for (;;) {}"), { type: "module" });',
  ],
  ['delayed-spin', 'setTimeout(() => { for (;;) {} }, 400);'],
];

function reusable(name: string, leftover: string): SandboxTool {
  const source = `let n = 0; export async function execute(input) { n++; if (input.leave) { ${leftover} } return { n, pid: Deno.pid }; }`;
  return { ...tool('echo'), name, source };
}

type Served = { n: number; pid: number };
const served = (result: Awaited<ReturnType<Sandbox['run']>>): Served => {
  if (!result.ok) throw new Error(`call failed: ${result.error.code} ${result.error.message}`);
  return result.output as Served;
};

describe('parked reuse processes that keep running tool code', () => {
  it.each(LEFTOVERS)(
    '%s: retired long before poolIdleMs; the next call gets a fresh process',
    async (name, leftover) => {
      const { logger, lines } = captureLogger();
      sandbox = await createSandbox({ config: testConfig({ reuseTools: [name], poolIdleMs: 600_000 }), logger });
      const t = reusable(name, leftover);
      const first = served(await sandbox.run(job(t, { leave: true })));
      expect(first.n).toBe(1);
      await waitFor(
        () => !existsSync(`/proc/${first.pid}`),
        30_000,
        `the busy parked process ${first.pid} to be retired`,
      );
      const retired = lines.filter((line) =>
        line.includes('retired a parked reuse process that kept running after its call'),
      );
      expect(retired).toHaveLength(1);
      expect(JSON.parse(retired[0] as string)).toMatchObject({ level: 'warn', pid: first.pid });
      const second = served(await sandbox.run(job(t, {})));
      expect(second.n).toBe(1);
      expect(second.pid).not.toBe(first.pid);
    },
  );

  it('a quiet parked process stays parked across CPU checks while a busy one is retired', async () => {
    const { logger, lines } = captureLogger();
    sandbox = await createSandbox({
      config: testConfig({ reuseTools: ['quiet', 'busy'], poolIdleMs: 600_000, poolSize: 2 }),
      logger,
    });
    const quiet = reusable('quiet', '');
    const busy = reusable('busy', 'setInterval(() => { for (;;) {} }, 1);');
    const q1 = served(await sandbox.run(job(quiet, {})));
    const b1 = served(await sandbox.run(job(busy, { leave: true })));
    await waitFor(() => !existsSync(`/proc/${b1.pid}`), 30_000, 'the busy process to be retired');
    const q2 = served(await sandbox.run(job(quiet, {})));
    expect(q2).toEqual({ n: 1, pid: q1.pid }); // same process, fresh module instance
    expect(lines.filter((line) => line.includes('retired a parked reuse process'))).toHaveLength(1);
  });
});

describe('parked reuse processes that allocate after their call', () => {
  it('a leftover allocator is killed by the memory guard while parked, whatever the CPU check allows', async () => {
    const { logger, lines } = captureLogger();
    // an idle allowance nobody reaches: only the memory guard's samples of parked processes can end it
    sandbox = await createSandbox({
      config: testConfig({ reuseTools: ['hoarder'], poolIdleMs: 600_000 }),
      logger,
      idleCpu: { graceMs: 200, allowanceMs: 1e9, allowanceFraction: 0 },
    });
    // 1 s after parking, 10 x 8 MB of touched pages 20 ms apart: ~80 MB over an idle RSS of ~40 MB,
    // against a limit of 16 + 64 MB
    const leftover =
      'setTimeout(() => { const keep = []; globalThis.keep = keep; let i = 0; const t = setInterval(() => { keep.push(new Uint8Array(8 << 20).fill(1)); if (++i === 10) clearInterval(t); }, 20); }, 1000);';
    const t = { ...reusable('hoarder', leftover), memoryMb: 16 };
    const first = served(await sandbox.run(job(t, { leave: true })));
    await waitFor(
      () => !existsSync(`/proc/${first.pid}`),
      30_000,
      `the hoarding parked process ${first.pid} to be killed`,
    );
    expect(lines.filter((line) => line.includes('retired a parked reuse process that kept running'))).toEqual([]);
    const second = served(await sandbox.run(job(t, {})));
    expect(second.n).toBe(1);
    expect(second.pid).not.toBe(first.pid);
  });
});

describe('idle CPU rule', () => {
  it('allows the grace allowance and a trickle; anything more is busy', () => {
    expect(busyWhileParked(IDLE_CPU_RULE, 30, 250)).toBe(false);
    expect(busyWhileParked(IDLE_CPU_RULE, 40, 250)).toBe(true);
    expect(busyWhileParked(IDLE_CPU_RULE, 100, 60_000)).toBe(false);
    expect(busyWhileParked(IDLE_CPU_RULE, 700, 60_000)).toBe(true);
  });

  it('reads CPU time of live processes only', () => {
    expect(readCpuMs(process.pid)).toBeGreaterThan(0);
    expect(readCpuMs(2 ** 22 + 12345)).toBeUndefined();
  });

  it('a kept-open CPU reader follows its process, and reads nothing once it exited or was closed', async () => {
    const child = spawn(process.execPath, [
      '-e',
      // busy until it used 400 ms of CPU (not of wall clock: on a loaded machine it gets less), then idle
      'const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }; while (cpu() < 400); setTimeout(() => {}, 60000)',
    ]);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const pid = child.pid as number;
      const reader = openCpuReader(pid);
      await vi.waitFor(() => expect(reader.read()).toBeGreaterThanOrEqual(300), { timeout: 20_000, interval: 50 });
      // the same figure as a fresh read of /proc/<pid>/stat
      expect(Math.abs((reader.read() as number) - (readCpuMs(pid) as number))).toBeLessThanOrEqual(20);
      child.kill('SIGKILL');
      await exited;
      // a reaped process: its descriptor reads nothing, whatever process gets the pid later
      expect(reader.read()).toBeUndefined();
      reader.close();
      expect(reader.read()).toBeUndefined();
      reader.close(); // twice is harmless
    } finally {
      child.kill('SIGKILL');
    }
    expect(openCpuReader(2 ** 22 + 12345).read()).toBeUndefined();
  });
});
