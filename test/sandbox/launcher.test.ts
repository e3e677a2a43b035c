// The launchers that start sandbox processes from helpers (the Node spawner and the Deno relay), the same
// tests for both: processes deliver every byte of their output (also when they exit at once) to their
// own streams only, report exit codes, run at the recipe's niceness in a process group of their own,
// survive a Ctrl-C at the service's terminal, and die with the service — even when the service is
// killed with SIGKILL and cannot clean up (with the helpers they started: their whole group).

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { DENO_DIR_NOWHERE, type DenoCommand } from '../../src/sandbox/command.js';
import { resolveDeno } from '../../src/sandbox/deno-binary.js';
import { createDirectLauncher, createSpawnerLauncher, type Launcher } from '../../src/sandbox/launcher.js';
import { createDenoRelayLauncher } from '../../src/sandbox/relay-launcher.js';
import { waitFor, alive } from './helpers.js';

const deno = (await resolveDeno()).path;

let launcher: Launcher | undefined;
afterEach(async () => {
  await launcher?.close();
  launcher = undefined;
});

const env = { PATH: '/usr/bin:/bin', DENO_DIR: DENO_DIR_NOWHERE, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' };

/** A Deno program (every permission: `deno eval`) as a launch recipe; the relay starts nothing but Deno. */
export function program(code: string, ...args: string[]): DenoCommand {
  return { file: deno, args: ['eval', code, ...args], env, cwd: '/tmp' };
}
/** Echoes stdin to stdout, exits 0 at its end. */
export const CAT = 'await Deno.stdin.readable.pipeTo(Deno.stdout.writable)';
/** Writes out-<arg> and err-<arg>, exits 7 at once. */
const QUICK =
  'const e = new TextEncoder(); Deno.stdout.writeSync(e.encode("out-" + Deno.args[0])); Deno.stderr.writeSync(e.encode("err-" + Deno.args[0])); Deno.exit(7)';

/** /proc/<pid>/stat after the command name: [state, ppid, pgrp, session, ...]. */
export function stat(pid: number): string[] {
  return readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
}

const LAUNCHERS: Array<[string, () => Launcher, string]> = [
  ['spawner', () => createSpawnerLauncher(), 'createSpawnerLauncher()'],
  [
    'deno relay',
    () => createDenoRelayLauncher({ denoPath: deno }),
    `createDenoRelayLauncher({ denoPath: ${JSON.stringify(deno)} })`,
  ],
];

describe.each(LAUNCHERS)('%s launcher', (_name, create, createSource) => {
  it('delivers every byte to its own process streams only, for slow and instantly-exiting processes', async () => {
    const l = create();
    launcher = l;
    const failures: string[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async (_, worker) => {
        for (let i = 0; i < 8; i++) {
          const quick = i % 2 === 0;
          const p = await l.launch(quick ? program(QUICK, `${worker}-${i}`) : program(CAT));
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
    const l = create();
    launcher = l;
    const openFds = (): number => readdirSync('/proc/self/fd').length;
    const once = async (i: number): Promise<void> => {
      // one that exits by itself with output on both pipes, one that is killed while it waits on stdin
      const quick = i % 2 === 0;
      const p = await l.launch(quick ? program(QUICK, 'x') : program(CAT));
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
    for (let i = 0; i < 6; i++) await once(i);
    expect(openFds()).toBeLessThanOrEqual(before);
  });

  it('the helper is in a process group of its own and ignores SIGINT (a Ctrl-C at the terminal), so its children keep running', async () => {
    const l = create();
    launcher = l;
    const p = await l.launch(program(CAT));
    const helperPid = Number(stat(p.pid)[1]);
    expect(helperPid).not.toBe(process.pid);
    expect(Number(stat(helperPid)[1])).toBe(process.pid);
    const ownGroup = Number(stat(process.pid)[2]);
    expect(Number(stat(helperPid)[2])).not.toBe(ownGroup);
    process.kill(helperPid, 'SIGINT');
    // the helper and its child are still there: the child still echoes what it is sent
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stdin.write('still here');
    await waitFor(() => out === 'still here', 10_000, 'the child to answer after SIGINT');
    expect(alive(helperPid)).toBe(true);
    p.stdin.end();
    expect((await p.ended).code).toBe(0);
  });

  it('starts each process as the leader of its own process group, which a kill of the group ends', async () => {
    const l = create();
    launcher = l;
    const p = await l.launch(program(CAT));
    expect(p.grouped).toBe(true);
    // (the relay's child leads its group once the setsid program has run: under load that can follow
    // the launch; src/process-group.ts)
    await waitFor(() => Number(stat(p.pid)[3]) === p.pid, 10_000, 'the child to lead its own session');
    const [, , pgrp, session] = stat(p.pid);
    expect(Number(pgrp)).toBe(p.pid);
    expect(Number(session)).toBe(p.pid);
    process.kill(-p.pid, 'SIGKILL');
    expect(await p.ended).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  it("keeps a recipe with ownGroup false in the launcher's own session and group, killed by its pid and by the close", async () => {
    const l = create();
    launcher = l;
    const p = await l.launch({ ...program(CAT), ownGroup: false });
    expect(p.grouped).toBe(false);
    const [, ppid, pgrp, session] = stat(p.pid);
    // the helper's session and group (it leads both: it was started detached), not ours
    expect([Number(pgrp), Number(session)]).toEqual([Number(ppid), Number(ppid)]);
    expect(Number(session)).not.toBe(Number(stat(process.pid)[3]));
    expect(() => process.kill(-p.pid, 0)).toThrow(); // no group of its pid
    process.kill(p.pid, 'SIGKILL');
    expect(await p.ended).toMatchObject({ code: null, signal: 'SIGKILL' });
    const q = await l.launch({ ...program(CAT), ownGroup: false });
    q.stdout.resume();
    q.stderr.resume();
    await l.close();
    launcher = undefined;
    await waitFor(() => !alive(q.pid), 10_000, 'the close to end a child without a group of its own');
  });

  it('gives the process the niceness of its recipe (also the direct launcher)', async () => {
    const nice = (pid: number): number => Number(stat(pid)[16]);
    const l = create();
    launcher = l;
    for (const one of [l, createDirectLauncher()]) {
      const p = await one.launch({ ...program(CAT), niceness: 17 });
      expect(nice(p.pid)).toBe(17);
      p.stdin.end();
      expect((await p.ended).code).toBe(0);
    }
  });

  it('rejects a process that cannot be started, with the reason', async () => {
    launcher = create();
    await expect(launcher.launch({ ...program(CAT), cwd: '/nonexistent-dir-of-a-test' })).rejects.toThrow(
      /ENOENT|No such (file|cwd)|not found/i,
    );
    // and goes on starting the next one
    const p = await launcher.launch(program(QUICK, 'next'));
    p.stdout.resume();
    p.stderr.resume();
    expect((await p.ended).code).toBe(7);
  });

  it('kills every process it started, with its whole group, when the service dies without cleaning up (SIGKILL)', async () => {
    // A stand-in service: starts a process that ignores SIGTERM, starts a helper of its own (same
    // group) and waits forever; prints both pids, then waits to be killed.
    // dist/ is built by test/global-setup.ts (Node 20 cannot import .ts directly).
    const launcherUrl = new URL('../../dist/sandbox/launcher.js', import.meta.url).href;
    const relayUrl = new URL('../../dist/sandbox/relay-launcher.js', import.meta.url).href;
    const child = program(
      'Deno.addSignalListener("SIGTERM", () => {}); const g = new Deno.Command("/bin/sleep", { args: ["1000"] }).spawn(); console.log(g.pid); setInterval(() => {}, 1000);',
    );
    const script = `
      const { createSpawnerLauncher } = await import(${JSON.stringify(launcherUrl)});
      const { createDenoRelayLauncher } = await import(${JSON.stringify(relayUrl)});
      const l = ${createSource};
      const p = await l.launch(${JSON.stringify(child)});
      p.stdout.once('data', (d) => console.log(p.pid + ' ' + d.toString().trim()));
      setInterval(() => {}, 1000);
    `;
    const service = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pids = await new Promise<number[]>((resolve, reject) => {
      service.stdout.once('data', (d: Buffer) => resolve(d.toString().trim().split(' ').map(Number)));
      service.once('exit', (code) => reject(new Error(`stand-in service exited early (${code})`)));
    });
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(alive(pid)).toBe(true);
    service.kill('SIGKILL');
    await waitFor(() => pids.every((pid) => !alive(pid)), 10_000, 'the orphaned process and its helper to be killed');
  });
});
