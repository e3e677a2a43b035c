// Memory enforcement selection. This machine has cgroup v1 only (v2 is mounted without the memory
// controller), so the real detection must fall back to RSS sampling. The cgroup v2 code path is
// exercised against a plain directory laid out like cgroupfs (the kernel's enforcement itself cannot
// be shown here): detection, delegation, per-process cgroups with memory.max, and their removal.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createProcessCgroup, locateOwnCgroup, probeCgroup, type CgroupLocation } from '../../src/sandbox/cgroup.js';
import { createSandbox } from '../../src/sandbox/index.js';
import {
  createMemoryGuard,
  openRssReader,
  pageSize,
  readRssBytes,
  RUNTIME_OVERHEAD_MB,
} from '../../src/sandbox/memory-guard.js';
import {
  captureLogger,
  expectNoLeaks,
  isolateTmp,
  job,
  ourDenoProcesses,
  testConfig,
  tool,
  waitFor,
} from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let counter = 0;

beforeAll(() => {
  tmp = isolateTmp();
});

afterAll(() => {
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

/** A directory shaped like a cgroup v2 mount with the service's cgroup at /service. */
function fakeCgroup(files: Record<string, string>): CgroupLocation {
  const mount = join(tmp.dir, `cgroupfs-${++counter}`);
  mkdirSync(join(mount, 'service'), { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(mount, 'service', name), text);
  return { mount, path: '/service' };
}

describe('on this machine', () => {
  it('detects the real mode, logs it once, and reports it in stats', async () => {
    const location = await locateOwnCgroup();
    const probe = await probeCgroup(location, silentLogger());
    const { logger, lines } = captureLogger();
    const sandbox = await createSandbox({ config: testConfig({ poolSize: 0 }), logger });
    try {
      const expected = probe.base ? 'cgroup' : 'rss-sampling';
      expect(sandbox.stats().memoryEnforcement).toBe(expected);
      const logged = lines.filter((line) => line.includes('"msg":"sandbox memory enforcement"'));
      expect(logged).toHaveLength(1);
      expect(JSON.parse(logged[0] as string)).toMatchObject({
        level: 'info',
        mode: expected,
        runtimeOverheadMb: RUNTIME_OVERHEAD_MB,
      });
      if (!probe.base) expect(probe.reason).toMatch(/cgroup/);
    } finally {
      await sandbox.close();
    }
  });

  it('reads VmRSS of a live process and nothing for a missing one', () => {
    expect(readRssBytes(process.pid)).toBeGreaterThan(10 * 1024 * 1024);
    expect(readRssBytes(2 ** 22 + 12345)).toBeUndefined();
  });

  it('reads VmRSS again and again through one kept descriptor, and nothing once the process is gone', async () => {
    const own = openRssReader(process.pid);
    const first = own.read();
    expect(first).toBeGreaterThan(10 * 1024 * 1024);
    const grown = Buffer.alloc(64 * 1024 * 1024, 1); // touched pages: RSS grows, and the reader sees it
    expect(own.read()).toBeGreaterThan((first as number) + 32 * 1024 * 1024);
    expect(grown[0]).toBe(1);
    own.close();
    expect(own.read()).toBeUndefined();
    expect(openRssReader(2 ** 22 + 12345).read()).toBeUndefined();
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const reader = openRssReader(child.pid as number);
    expect(reader.read()).toBeGreaterThan(0);
    child.kill('SIGKILL');
    await exited; // reaped: the descriptor's process is gone, whoever gets its pid next
    expect(reader.read()).toBeUndefined();
    reader.close();
  });
  it('reads the same resident size from statm as status shows in VmRSS, and knows the page size', async () => {
    const size = pageSize();
    expect(size).not.toBeNull();
    expect(size as number).toBeGreaterThanOrEqual(4096);
    expect((size as number) & ((size as number) - 1)).toBe(0);
    // a sleeping child: its RSS does not move between the two reads
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const reader = openRssReader(child.pid as number);
      let statm: number | undefined;
      let status: number | undefined;
      for (let i = 0; i < 200; i++) {
        statm = reader.read();
        status = readRssBytes(child.pid as number);
        if (statm !== undefined && statm === status) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(statm).toBeGreaterThan(0);
      expect(statm).toBe(status);
      reader.close();
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });
});

describe('locateOwnCgroup', () => {
  it('reads the "0::" line and the cgroup2 mount from /proc', async () => {
    const proc = join(tmp.dir, 'fake-proc');
    mkdirSync(join(proc, 'self'), { recursive: true });
    writeFileSync(join(proc, 'self/cgroup'), '4:memory:/x\n0::/system.slice/runner.service\n');
    writeFileSync(
      join(proc, 'self/mountinfo'),
      '25 30 0:22 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n' +
        '26 30 0:23 / /sys/fs/cgroup rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n',
    );
    expect(await locateOwnCgroup(proc)).toEqual({ mount: '/sys/fs/cgroup', path: '/system.slice/runner.service' });
    writeFileSync(join(proc, 'self/cgroup'), '4:memory:/x\n');
    expect(await locateOwnCgroup(proc)).toBeUndefined();
  });
});

describe('probeCgroup', () => {
  it('needs a v2 hierarchy with the memory controller', async () => {
    expect(await probeCgroup(undefined, silentLogger())).toEqual({
      reason: 'no cgroup v2 hierarchy (cgroup v1 only?)',
    });
    const location = fakeCgroup({ 'cgroup.controllers': 'cpu io pids\n' });
    expect((await probeCgroup(location, silentLogger())).reason).toBe(
      `the cgroup v2 memory controller is not available in ${join(location.mount, '/service')} (controllers: cpu io pids)`,
    );
  });

  it('uses a cgroup whose children already have the memory controller', async () => {
    const location = fakeCgroup({ 'cgroup.controllers': 'cpu memory pids', 'cgroup.subtree_control': 'memory' });
    expect(await probeCgroup(location, silentLogger())).toEqual({ base: join(location.mount, '/service') });
    expect(
      readdirSync(join(location.mount, 'service')).filter((name) => name.startsWith('tools-runner-probe')),
    ).toEqual([]);
  });

  it('moves the service into a leaf and enables memory when it is alone in its cgroup', async () => {
    const location = fakeCgroup({
      'cgroup.controllers': 'memory',
      'cgroup.subtree_control': '',
      'cgroup.procs': '4242\n',
    });
    expect(await probeCgroup(location, silentLogger(), 4242)).toEqual({ base: join(location.mount, '/service') });
    expect(readFileSync(join(location.mount, 'service/supervisor/cgroup.procs'), 'utf8')).toBe('4242');
    expect(readFileSync(join(location.mount, 'service/cgroup.subtree_control'), 'utf8')).toBe('+memory');
  });

  it('refuses a cgroup shared with other processes', async () => {
    const location = fakeCgroup({
      'cgroup.controllers': 'memory',
      'cgroup.subtree_control': '',
      'cgroup.procs': '4242\n777\n',
    });
    expect((await probeCgroup(location, silentLogger(), 4242)).reason).toMatch(/holds other processes/);
  });
});

describe('per-process cgroups', () => {
  it('sets memory.max (heap + runtime overhead), no swap, group OOM kill, and reports oom_kill events', async () => {
    const location = fakeCgroup({ 'cgroup.controllers': 'memory', 'cgroup.subtree_control': 'memory' });
    const base = join(location.mount, 'service');
    const group = await createProcessCgroup(base, 'one', 192 * 1024 * 1024, silentLogger());
    await group.add(12345);
    expect(readFileSync(join(group.dir, 'memory.max'), 'utf8')).toBe(String(192 * 1024 * 1024));
    expect(readFileSync(join(group.dir, 'memory.swap.max'), 'utf8')).toBe('0');
    expect(readFileSync(join(group.dir, 'memory.oom.group'), 'utf8')).toBe('1');
    expect(readFileSync(join(group.dir, 'cgroup.procs'), 'utf8')).toBe('12345');
    expect(await group.oomKilled()).toBe(false);
    writeFileSync(join(group.dir, 'memory.events'), 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n');
    expect(await group.oomKilled()).toBe(true);
    await group.remove();
    expect(existsSync(group.dir)).toBe(false);
  });

  it('logs every optional write that fails and a cgroup it cannot remove, with path and errno', async () => {
    const location = fakeCgroup({ 'cgroup.controllers': 'memory', 'cgroup.subtree_control': 'memory' });
    const base = join(location.mount, 'service');
    // directories where the kernel would have files: writing them fails with EISDIR
    mkdirSync(join(base, 'two', 'memory.swap.max'), { recursive: true });
    mkdirSync(join(base, 'two', 'memory.oom.group'), { recursive: true });
    const { logger, lines } = captureLogger();
    const group = await createProcessCgroup(base, 'two', 64 * 1024 * 1024, logger);
    expect(readFileSync(join(group.dir, 'memory.max'), 'utf8')).toBe(String(64 * 1024 * 1024));
    expect(
      lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .map(({ level, msg, path, errno }) => ({ level, msg, path, errno })),
    ).toEqual([
      { level: 'warn', msg: 'cgroup setting not written', path: join(group.dir, 'memory.swap.max'), errno: 'EISDIR' },
      { level: 'warn', msg: 'cgroup setting not written', path: join(group.dir, 'memory.oom.group'), errno: 'EISDIR' },
    ]);
    await group.remove();
    expect(existsSync(group.dir)).toBe(false);
    expect(lines).toHaveLength(2);
  });

  it('a memory.max it cannot write fails the cgroup (it is the limit itself)', async () => {
    const location = fakeCgroup({ 'cgroup.controllers': 'memory', 'cgroup.subtree_control': 'memory' });
    const base = join(location.mount, 'service');
    mkdirSync(join(base, 'three', 'memory.max'), { recursive: true });
    await expect(createProcessCgroup(base, 'three', 64 * 1024 * 1024, silentLogger())).rejects.toMatchObject({
      code: 'EISDIR',
    });
  });

  it('a sandbox in cgroup mode confines every process before its job and removes each cgroup at exit', async () => {
    const location = fakeCgroup({ 'cgroup.controllers': 'memory', 'cgroup.subtree_control': 'memory' });
    const base = join(location.mount, 'service');
    const { logger } = captureLogger();
    const guard = await createMemoryGuard({ logger, location });
    expect(guard.mode).toBe('cgroup');
    const sandbox = await createSandbox({ config: testConfig({ poolSize: 1, isolation: 'process' }), logger, guard });
    try {
      expect(sandbox.stats().memoryEnforcement).toBe('cgroup');
      const groups = (): string[] => readdirSync(base).filter((name) => name.startsWith('tools-runner-sbx-'));
      await waitFor(() => sandbox.stats().warm === 1, 30_000, 'a warm process');
      const [warmGroup] = groups();
      expect(warmGroup).toBeDefined();
      const pid = Number(readFileSync(join(base, warmGroup as string, 'cgroup.procs'), 'utf8'));
      expect(ourDenoProcesses()).toContain(pid);
      expect(readFileSync(join(base, warmGroup as string, 'memory.max'), 'utf8')).toBe(
        String((128 + RUNTIME_OVERHEAD_MB) * 1024 * 1024),
      );
      const result = await sandbox.run(job(tool('counter')));
      expect(result).toMatchObject({ ok: true, output: { pid } });
      await waitFor(() => !groups().includes(warmGroup as string), 30_000, 'the used cgroup to be removed');
    } finally {
      await sandbox.close();
    }
    expect(readdirSync(base).filter((name) => name.startsWith('tools-runner-sbx-'))).toEqual([]);
  });
});
