// The spawner launcher: processes started through the helper deliver every byte of their output
// (also when they exit at once), report exit codes, and die with the service — even when the
// service is killed with SIGKILL and cannot clean up.

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createDirectLauncher, createSpawnerLauncher, type Launcher } from '../../src/sandbox/launcher.js';
import { waitFor } from './helpers.js';

let launcher: Launcher | undefined;
afterEach(async () => {
  await launcher?.close();
  launcher = undefined;
});

const env = { PATH: '/usr/bin:/bin' };

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('spawner launcher', () => {
  it('hands over stdio without losing a byte, for slow and instantly-exiting processes', async () => {
    const l = createSpawnerLauncher();
    launcher = l;
    const failures: string[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async (_, worker) => {
        for (let i = 0; i < 20; i++) {
          const quick = i % 2 === 0;
          const p = await l.launch(
            quick
              ? {
                  file: '/bin/sh',
                  args: ['-c', 'printf "out-$0"; printf "err-$0" >&2; exit 7', `${worker}-${i}`],
                  env,
                  cwd: '/tmp',
                }
              : { file: '/bin/cat', args: [], env, cwd: '/tmp' },
          );
          let out = '';
          let err = '';
          p.stdout.on('data', (d: Buffer) => (out += d.toString()));
          p.stderr.on('data', (d: Buffer) => (err += d.toString()));
          p.stdin.end(quick ? undefined : `msg-${worker}-${i}`);
          const ended = await p.ended;
          const expected = quick
            ? { out: `out-${worker}-${i}`, err: `err-${worker}-${i}`, code: 7 }
            : { out: `msg-${worker}-${i}`, err: '', code: 0 };
          if (out !== expected.out || err !== expected.err || ended.code !== expected.code)
            failures.push(JSON.stringify({ out, err, ended, expected }));
        }
      }),
    );
    expect(failures).toEqual([]);
  });

  it('closes all three pipes of a process once it has ended (no descriptor is left open per spawn)', async () => {
    const l = createSpawnerLauncher();
    launcher = l;
    const openFds = (): number => readdirSync('/proc/self/fd').length;
    const once = async (i: number): Promise<void> => {
      // one that exits by itself with output on both pipes, one that is killed while it waits on stdin
      const quick = i % 2 === 0;
      const p = await l.launch(
        quick
          ? { file: '/bin/sh', args: ['-c', 'printf out; printf err >&2'], env, cwd: '/tmp' }
          : { file: '/bin/cat', args: [], env, cwd: '/tmp' },
      );
      p.stdout.resume();
      p.stderr.resume();
      if (!quick) process.kill(p.pid, 'SIGKILL');
      await p.ended;
      await waitFor(
        () => [p.stdin, p.stdout, p.stderr].every((s) => s.destroyed),
        10_000,
        'the pipes of an ended process to be closed',
      );
    };
    await once(0);
    const before = openFds();
    for (let i = 0; i < 10; i++) await once(i);
    expect(openFds()).toBeLessThanOrEqual(before);
  });

  it('the spawner is in a process group of its own and ignores SIGINT (a Ctrl-C at the terminal), so its children keep running', async () => {
    const l = createSpawnerLauncher();
    launcher = l;
    const p = await l.launch({ file: '/bin/cat', args: [], env, cwd: '/tmp' });
    // /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."
    const stat = (pid: number): string[] =>
      readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /, '')
        .split(' ');
    const spawnerPid = Number(stat(p.pid)[1]);
    expect(spawnerPid).not.toBe(process.pid);
    expect(Number(stat(spawnerPid)[1])).toBe(process.pid);
    const ownGroup = Number(stat(process.pid)[2]);
    expect(Number(stat(spawnerPid)[2])).not.toBe(ownGroup);
    process.kill(spawnerPid, 'SIGINT');
    // the spawner and its child are still there: the child still echoes what it is sent
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stdin.write('still here');
    await waitFor(() => out === 'still here', 10_000, 'the child to answer after SIGINT');
    expect(alive(spawnerPid)).toBe(true);
    p.stdin.end();
    expect((await p.ended).code).toBe(0);
  });

  it('gives the process the niceness of its recipe (both launchers), so the service makes no setpriority call per spawn', async () => {
    const nice = (pid: number): number =>
      Number(
        readFileSync(`/proc/${pid}/stat`, 'utf8')
          .replace(/^.*\) /, '')
          .split(' ')[16],
      );
    const l = createSpawnerLauncher();
    launcher = l;
    for (const one of [l, createDirectLauncher()]) {
      const p = await one.launch({ file: '/bin/cat', args: [], env, cwd: '/tmp', niceness: 17 });
      expect(nice(p.pid)).toBe(17);
      p.stdin.end();
      expect((await p.ended).code).toBe(0);
    }
  });

  it('rejects a program that cannot be started, with the reason', async () => {
    launcher = createSpawnerLauncher();
    await expect(launcher.launch({ file: '/nonexistent/deno', args: [], env, cwd: '/tmp' })).rejects.toThrow(/ENOENT/);
  });

  it('kills every process it started when the service dies without cleaning up (SIGKILL)', async () => {
    // A stand-in service: starts a process that ignores SIGTERM and loops forever, prints its pid,
    // then waits to be killed.
    // dist/ is built by test/global-setup.ts (Node 20 cannot import .ts directly).
    const launcherUrl = new URL('../../dist/sandbox/launcher.js', import.meta.url).href;
    const script = `
      const { createSpawnerLauncher } = await import(${JSON.stringify(launcherUrl)});
      const l = createSpawnerLauncher();
      const p = await l.launch({ file: '/bin/sh', args: ['-c', 'trap "" TERM; while :; do :; done'], env: { PATH: '/usr/bin:/bin' }, cwd: '/tmp' });
      console.log(p.pid);
      setInterval(() => {}, 1000);
    `;
    const service = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      service.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      service.once('exit', (code) => reject(new Error(`stand-in service exited early (${code})`)));
    });
    expect(alive(pid)).toBe(true);
    service.kill('SIGKILL');
    await waitFor(() => !alive(pid), 10_000, 'the orphaned process to be killed');
  });
});
