// The guards' shared clock (src/sandbox/guard-clock.ts): every guard of every watched process runs in
// one wake-up per tick, and there is no timer at all when nothing is watched. The memory guard is
// exercised with real child processes (this machine has cgroup v1: rss-sampling mode): many watched
// processes share one subscription and are all sampled in the same wake-up; a process over its limit
// is killed and leaves the clock; the clock stops with the last watched process. Counts are compared
// with the clock's own wake-up counter, never with wall time.

import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { IDLE_CPU_RULE, openCpuReader, readCpuMs } from '../../src/sandbox/cpu.js';
import { startCpuLimit } from '../../src/sandbox/cpu-limit.js';
import { createGuardClock, guardClock } from '../../src/sandbox/guard-clock.js';
import { createMemoryGuard, type Watched } from '../../src/sandbox/memory-guard.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { createParkedCpuChecks } from '../../src/sandbox/pool-cpu-check.js';
import type { SandboxProcess } from '../../src/sandbox/process.js';
import { job, testConfig, tool, useIsolatedSandboxes, waitFor } from './helpers.js';

const MIB = 1024 * 1024;
const children: ChildProcess[] = [];
let sandbox: Sandbox | undefined;
useIsolatedSandboxes(
  () => sandbox,
  () => void (sandbox = undefined),
);

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  }
});

/** A child Node process running `code`: its pid, and when it exited. */
function child(code: string, detached = false): { pid: number; exited: Promise<unknown> } {
  // detached: a process group leader, as the sandbox spawns its processes (the duty cycle signals the group)
  const proc = spawn(process.execPath, ['-e', code], { stdio: 'ignore', detached });
  children.push(proc);
  return { pid: proc.pid as number, exited: new Promise((resolve) => proc.once('exit', resolve)) };
}

const sleepy = (): { pid: number; exited: Promise<unknown> } => child('setTimeout(() => {}, 600000)');

/** Waits until the clock has woken `n` more times. */
async function ticks(clock: { wakeUps: number }, n: number): Promise<void> {
  const target = clock.wakeUps + n;
  await vi.waitFor(() => expect(clock.wakeUps).toBeGreaterThanOrEqual(target), { timeout: 30_000, interval: 10 });
}

/** Waits until a fresh clock with the default tick has woken `n` times: as long as a live timer of the default tick would need. */
async function referenceTicks(n: number): Promise<void> {
  const reference = createGuardClock();
  const stop = reference.every(1, () => {});
  await ticks(reference, n);
  stop();
}

describe('guard clock', () => {
  it('runs subscribers of every period in the same wake-ups: every tick, every 2nd, every 10th', async () => {
    const clock = createGuardClock();
    const seen: Array<[string, number]> = [];
    const stops = [
      clock.every(1, () => seen.push(['memory', clock.wakeUps])),
      clock.every(2, () => seen.push(['cpu-limit', clock.wakeUps])),
      clock.every(10, () => seen.push(['parked', clock.wakeUps])),
    ];
    expect(clock.size).toBe(3);
    expect(clock.running).toBe(true);
    await ticks(clock, 20);
    for (const stop of stops) stop();
    const woken = clock.wakeUps;
    const at = (name: string): number[] => seen.filter(([n]) => n === name).map(([, w]) => w);
    // the clock was created here: its wake-ups count from 1
    expect(at('memory')).toEqual(Array.from({ length: woken }, (_, i) => i + 1));
    expect(at('cpu-limit')).toEqual(Array.from({ length: Math.floor(woken / 2) }, (_, i) => 2 * (i + 1)));
    expect(at('parked')).toEqual(Array.from({ length: Math.floor(woken / 10) }, (_, i) => 10 * (i + 1)));
    expect(clock.size).toBe(0);
  });

  it('has no timer and no wake-ups while nothing subscribes; a stop is idempotent', async () => {
    const clock = createGuardClock();
    expect(clock.running).toBe(false);
    const stop = clock.every(1, () => {});
    await ticks(clock, 3);
    stop();
    stop();
    expect(clock.running).toBe(false);
    const woken = clock.wakeUps;
    await referenceTicks(10);
    expect(clock.wakeUps).toBe(woken);
  });

  it('a subscription made during a tick first counts the next one; one stopped during a tick is not called again', async () => {
    const clock = createGuardClock();
    const calls: Array<[string, number]> = [];
    let late: (() => void) | undefined;
    const first = clock.every(1, () => {
      calls.push(['first', clock.wakeUps]);
      late ??= clock.every(1, () => calls.push(['late', clock.wakeUps]));
    });
    await ticks(clock, 3);
    first();
    late?.();
    const firstAt = calls.filter(([n]) => n === 'first').map(([, w]) => w);
    const lateAt = calls.filter(([n]) => n === 'late').map(([, w]) => w);
    expect(lateAt[0]).toBe((firstAt[0] as number) + 1);
    const victim = vi.fn();
    let stopVictim: (() => void) | undefined;
    const killer = clock.every(1, () => stopVictim?.());
    stopVictim = clock.every(1, victim);
    await ticks(clock, 3);
    killer();
    expect(victim).not.toHaveBeenCalled();
    expect(clock.running).toBe(false);
  });

  it('holds the event loop open only while a keep-alive subscription lasts', () => {
    const clock = createGuardClock();
    const weak = clock.every(2, () => {});
    expect(clock.keepsAlive).toBe(false);
    const strong = clock.every(1, () => {}, true);
    expect(clock.keepsAlive).toBe(true);
    strong();
    expect(clock.keepsAlive).toBe(false);
    weak();
    expect(() => clock.every(0, () => {})).toThrow('guard clock period must be a whole number of ticks >= 1, got 0');
    expect(() => createGuardClock(0.5)).toThrow('guard clock tick must be a whole ms >= 1, got 0.5');
  });
});

describe("the guards on the service's clock", () => {
  it('many watched processes share one subscription and are all sampled in each wake-up', async () => {
    const guard = await createMemoryGuard({ logger: silentLogger(), location: null });
    expect(guard.mode).toBe('rss-sampling');
    expect(guardClock.running).toBe(false);
    const samples = new Map<number, number[]>(); // wake-up -> pids sampled in it
    const targets: Watched[] = Array.from({ length: 8 }, () => {
      const { pid } = sleepy();
      return {
        pid,
        limitBytes: 4096 * MIB,
        overLimit: () => {},
        sampled: () => {
          const pids = samples.get(guardClock.wakeUps) ?? [];
          samples.set(guardClock.wakeUps, [...pids, pid]);
        },
      };
    });
    for (const target of targets) guard.watch(target);
    expect(guardClock.size).toBe(1);
    expect(guardClock.keepsAlive).toBe(true);
    await ticks(guardClock, 10);
    // a pid can be unreadable before its exec (no sample): count the wake-ups after every child was seen
    const full = [...samples.values()].filter((pids) => pids.length === targets.length);
    expect(full.length).toBeGreaterThan(0);
    for (const pids of samples.values()) expect(new Set(pids).size).toBe(pids.length);
    for (const target of targets) guard.unwatch(target);
    expect(guardClock.size).toBe(0);
    expect(guardClock.running).toBe(false);
    guard.close();
  });

  it('a process over its limit is killed once and leaves the clock; the clock stops with the last one', async () => {
    const guard = await createMemoryGuard({ logger: silentLogger(), location: null });
    const quiet = sleepy();
    // a leftover allocator: 8 MB of touched pages every 20 ms, for ever
    const hog = child('const keep = []; setInterval(() => keep.push(Buffer.alloc(8 << 20, 1)), 20)');
    const killed: number[] = [];
    const overLimit = (pid: number) => (rss: number) => {
      killed.push(rss);
      process.kill(pid, 'SIGKILL');
    };
    const quietTarget: Watched = { pid: quiet.pid, limitBytes: 4096 * MIB, overLimit: overLimit(quiet.pid) };
    const hogTarget: Watched = { pid: hog.pid, limitBytes: 256 * MIB, overLimit: overLimit(hog.pid) };
    guard.watch(quietTarget);
    guard.watch(hogTarget);
    await hog.exited;
    expect(killed).toHaveLength(1);
    expect(killed[0]).toBeGreaterThan(256 * MIB);
    expect(guardClock.running).toBe(true); // the quiet one is still watched
    guard.unwatch(hogTarget); // as the pool does when the process exits: harmless after the kill
    guard.unwatch(quietTarget);
    expect(guardClock.running).toBe(false);
    guard.close();
  });

  it('CPU limits and parked checks subscribe while they run and leave when they end', async () => {
    const busy = child('for (;;) {}', true);
    // 1 %: a busy loop runs ahead of it on any machine, however loaded
    const limit = await startCpuLimit({ pid: busy.pid, percent: 1 });
    expect(limit.mode).toBe('duty-cycle');
    const other = sleepy();
    const checks = createParkedCpuChecks(IDLE_CPU_RULE, silentLogger(), () => {});
    const parked = { pid: other.pid, key: 'k' } as unknown as SandboxProcess;
    checks.add(parked);
    expect(guardClock.size).toBe(2);
    // the duty cycle works on the shared clock: the busy loop gets stopped (state T) at some point
    await vi.waitFor(() => expect(/\) T /.test(readFileSync(`/proc/${busy.pid}/stat`, 'latin1'))).toBe(true), {
      timeout: 30_000,
      interval: 5,
    });
    await limit.end();
    checks.delete(parked);
    expect(guardClock.running).toBe(false);
    checks.close();
  });
});

describe("a sandbox's guards on the clock", () => {
  it('process mode: a call is watched while it runs; afterwards no timer and no wake-ups', async () => {
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 0, isolation: 'process' }),
      logger: silentLogger(),
    });
    const result = await sandbox.run(job(tool('echo'), { hi: 1 }));
    expect(result.ok).toBe(true);
    expect(guardClock.running).toBe(false);
    const woken = guardClock.wakeUps;
    await referenceTicks(10);
    expect(guardClock.wakeUps).toBe(woken);
  });

  it('warm mode: parked processes hold one subscription per guard; one that exits leaves; closing stops the clock', async () => {
    sandbox = await createSandbox({
      config: testConfig({ reuseTools: ['quitter', 'stayer'], poolIdleMs: 600_000, poolSize: 0 }),
      logger: silentLogger(),
    });
    // the quitter's process exits 300 ms after its call, while parked
    const quitter = {
      ...tool('echo'),
      name: 'quitter',
      source: 'export async function execute() { setTimeout(() => Deno.exit(0), 300); return { pid: Deno.pid }; }',
    };
    const stayer = {
      ...tool('echo'),
      name: 'stayer',
      source: 'export async function execute() { return { pid: Deno.pid }; }',
    };
    const pidOf = (result: Awaited<ReturnType<Sandbox['run']>>): number => {
      if (!result.ok) throw new Error(`call failed: ${result.error.code} ${result.error.message}`);
      return (result.output as { pid: number }).pid;
    };
    const gone = pidOf(await sandbox.run(job(quitter, {})));
    // parked: the memory guard and the parked CPU checks, one subscription each
    expect(guardClock.size).toBe(2);
    await waitFor(() => !existsSync(`/proc/${gone}`), 30_000, `the quitter's process ${gone} to exit`);
    // it was the only watched process: both guards leave the clock, which stops
    await waitFor(() => !guardClock.running, 30_000, 'the clock to stop once the parked process exited');
    expect(guardClock.size).toBe(0);
    pidOf(await sandbox.run(job(stayer, {})));
    expect(guardClock.size).toBe(2);
    await sandbox.close();
    sandbox = undefined;
    expect(guardClock.running).toBe(false);
  });
});

describe('CPU time read as bytes', () => {
  it('matches the text parser, also for a command name with spaces and parentheses', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stat-name-'));
    try {
      // a script's name becomes its process's command name (comm): "x) 1 2 (y" would shift naive parsers
      const script = join(dir, 'x) 1 2 (y');
      writeFileSync(script, '#!/bin/sh\nwhile :; do :; done\n');
      chmodSync(script, 0o755);
      const proc = spawn(script, [], { stdio: 'ignore' });
      children.push(proc);
      const pid = proc.pid as number;
      const reader = openCpuReader(pid);
      await vi.waitFor(() => expect(reader.read()).toBeGreaterThanOrEqual(100), { timeout: 30_000, interval: 20 });
      const before = reader.read() as number;
      const text = readCpuMs(pid) as number;
      const after = reader.read() as number;
      expect(before).toBeLessThanOrEqual(text);
      expect(text).toBeLessThanOrEqual(after);
      reader.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
