// The Deno relay launcher's own lifecycle and protocol (the behaviour it shares with the spawner is in
// launcher.test.ts): its death kills and fails every child it started and the next launch starts a new
// one; a child that floods stdout nobody reads is paused, not buffered; a malformed frame is an
// explicit error; it starts nothing but the Deno binary and keeps no descriptor per ended child; and
// process-mode calls run through it with their limits (output, time) enforced.

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { DENO_DIR_NOWHERE, type DenoCommand } from '../../src/sandbox/command.js';
import { resolveDeno } from '../../src/sandbox/deno-binary.js';
import { createSandbox } from '../../src/sandbox/index.js';
import type { Launcher } from '../../src/sandbox/launcher.js';
import { killGroup } from '../../src/process-group.js';
import { createDenoRelayLauncher } from '../../src/sandbox/relay-launcher.js';
import { codeOf, expectNoLeaks, isolateTmp, job, testConfig, tool, waitFor, alive } from './helpers.js';

const deno = (await resolveDeno()).path;
const env = { PATH: '/usr/bin:/bin', DENO_DIR: DENO_DIR_NOWHERE, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' };
const program = (code: string, ...args: string[]): DenoCommand => ({
  file: deno,
  args: ['eval', code, ...args],
  env,
  cwd: '/tmp',
});
const CAT = 'await Deno.stdin.readable.pipeTo(Deno.stdout.writable)';

let launcher: Launcher | undefined;
let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'relay-test-'));
});
afterEach(async () => {
  await launcher?.close();
  launcher = undefined;
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const parentOf = (pid: number): number =>
  Number(
    readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ')[1],
  );

describe('deno relay launcher', () => {
  it('when the launcher dies (SIGKILL), every child is killed, its `ended` and pending launches fail, and the next launch starts a new launcher', async () => {
    const l = createDenoRelayLauncher({ denoPath: deno });
    launcher = l;
    const running = await l.launch(program(CAT));
    running.stdout.resume();
    running.stderr.resume();
    const launcherPid = parentOf(running.pid);
    // (its outcome is taken at once: a refusal must not wait unhandled)
    const pending = l.launch(program(CAT)).then(
      async (p) => {
        p.stdout.resume();
        p.stderr.resume();
        return (await p.ended).error;
      },
      (error: Error) => error,
    );
    process.kill(launcherPid, 'SIGKILL');
    const ended = await running.ended;
    expect(ended.error?.message).toBe('the sandbox relay launcher exited (code null, signal SIGKILL)');
    await waitFor(() => !alive(running.pid), 10_000, 'the child of the dead launcher to be killed');
    // the second launch was either refused or (when the launcher reported it first) ended the same way
    const second = await pending;
    expect(second?.message).toBe('the sandbox relay launcher exited (code null, signal SIGKILL)');
    const next = await l.launch(program('Deno.exit(5)'));
    next.stdout.resume();
    next.stderr.resume();
    expect(parentOf(next.pid)).not.toBe(launcherPid);
    expect((await next.ended).code).toBe(5);
  });

  it('a child flooding stdout that nobody reads is paused (bounded buffers), and resumes when read', async () => {
    const l = createDenoRelayLauncher({ denoPath: deno });
    launcher = l;
    // writes 64 KB blocks forever and reports on stderr how much it has written
    const flood = program(
      'const b = new Uint8Array(65536).fill(66); const e = new TextEncoder(); let n = 0; for (;;) { n += Deno.stdout.writeSync(b); Deno.stderr.writeSync(e.encode(n + "\\n")); }',
    );
    const p = await l.launch(flood);
    let written = 0;
    let errText = '';
    p.stderr.on('data', (d: Buffer) => {
      errText = (errText + d.toString()).slice(-64);
      const lines = errText.trim().split('\n');
      written = Math.max(written, Number(lines[lines.length - 1]) || 0);
    });
    await waitFor(() => written >= 128 * 1024, 30_000, 'the flood to start');
    // Nobody reads stdout: what is buffered stays bounded, and the child is held up (a child running free
    // writes gigabytes in this time).
    for (let i = 0; i < 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      // (what the launcher relays before the pause reaches it: 0.2–0.5 MB measured)
      expect(p.stdout.readableLength).toBeLessThanOrEqual(8 * 1024 * 1024);
      expect(written).toBeLessThanOrEqual(p.stdout.readableLength + 8 * 1024 * 1024);
    }
    // reading resumes the flow
    let read = 0;
    p.stdout.on('data', (d: Buffer) => (read += d.length));
    await waitFor(() => read >= 16 * 1024 * 1024, 60_000, '16 MB to be read after resuming');
    process.kill(-p.pid, 'SIGKILL');
    expect(await p.ended).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  it('a child killed while its output is paused still ends once that output is read (the pause outlives the exit)', async () => {
    const l = createDenoRelayLauncher({ denoPath: deno });
    launcher = l;
    const p = await l.launch(program('const b = new Uint8Array(65536).fill(67); for (;;) Deno.stdout.writeSync(b);'));
    p.stderr.resume();
    await waitFor(() => p.stdout.readableLength > 0, 30_000, 'output to arrive');
    // nobody reads: the stream fills up and the launcher is told to pause it; then the child dies
    await waitFor(() => p.stdout.readableLength >= p.stdout.readableHighWaterMark, 30_000, 'the stream to fill up');
    process.kill(-p.pid, 'SIGKILL');
    // the exit report has come (it closes stdin): the launcher has seen the exit before the resume
    await waitFor(() => p.stdin.destroyed, 10_000, 'the exit report');
    p.stdout.resume();
    expect(await p.ended).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  // A stand-in launcher (a typed boundary: the real one never sends these) that answers the first
  // spawn request with `bytes`, then waits.
  const fake = (name: string, bytes: number[]): string => {
    const path = join(scratch, `${name}.js`);
    writeFileSync(
      path,
      `const b = new Uint8Array(65536); await Deno.stdin.read(b); Deno.stdout.writeSync(new Uint8Array(${JSON.stringify(bytes)})); while ((await Deno.stdin.read(b)) !== null);`,
    );
    return path;
  };
  it.each([
    [
      'oversized',
      [3, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff],
      /malformed frame \(type 3, child 1, 2147483647 bytes; at most 65536\)/,
    ],
    ['unknown-type', [99, 0, 0, 0, 1, 0, 0, 0, 0], /malformed frame \(type 99, child 1, 0 bytes/],
    ['pid-zero', [1, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0], /reported pid 0 for child 1/],
    [
      'exit-not-a-status',
      [1, 0, 0, 0, 1, 0, 0, 0, 4, 0x7f, 0xff, 0xff, 0xf0, 7, 0, 0, 0, 1, 0, 0, 0, 12, ...Buffer.from('{"code":"0"}')],
      /unreadable exit for child 1: "\{\\"code\\":\\"0\\"\}"/,
    ],
    [
      'bad-exit',
      [1, 0, 0, 0, 1, 0, 0, 0, 4, 0x7f, 0xff, 0xff, 0xf0, 7, 0, 0, 0, 1, 0, 0, 0, 1, 120],
      /unreadable exit for child 1: "x"/,
    ],
  ])(
    'a malformed frame from the launcher (%s) is an explicit error, and that launcher is killed',
    async (name, bytes, message) => {
      const programPath = fake(name, bytes);
      const l = createDenoRelayLauncher({ denoPath: deno, programPath });
      launcher = l;
      const launched = l.launch(program(CAT));
      const error = await launched.then(
        async (p) => (await p.ended).error,
        (e: Error) => e,
      );
      expect(error?.message).toMatch(message);
      const fakes = (): number[] =>
        readdirSync('/proc')
          .filter((entry) => /^\d+$/.test(entry))
          .filter((pid) => {
            try {
              return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(programPath);
            } catch {
              return false;
            }
          })
          .map(Number);
      await waitFor(() => fakes().length === 0, 10_000, 'the misbehaving launcher to be killed');
    },
  );

  it('runs at the niceness it is given, so its children are born with it; another recipe niceness is set after the spawn', async () => {
    const nice = (pid: number): number =>
      Number(
        readFileSync(`/proc/${pid}/stat`, 'utf8')
          .replace(/^.*\) /, '')
          .split(' ')[16],
      );
    const l = createDenoRelayLauncher({ denoPath: deno, niceness: 12 });
    launcher = l;
    for (const niceness of [12, 15, undefined]) {
      const p = await l.launch({ ...program(CAT), ...(niceness === undefined ? {} : { niceness }) });
      expect(nice(parentOf(p.pid))).toBe(12);
      expect(nice(p.pid)).toBe(niceness ?? 12);
      p.stdin.end();
      expect((await p.ended).code).toBe(0);
    }
  });

  it('without a setsid program, Deno.Command `detached` makes each child lead its own session and process group', async () => {
    const l = createDenoRelayLauncher({ denoPath: deno, setsidPath: '' });
    launcher = l;
    const p = await l.launch(program(CAT));
    const [, , pgrp, session] = readFileSync(`/proc/${p.pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    expect([Number(pgrp), Number(session)]).toEqual([p.pid, p.pid]);
    expect(readFileSync(`/proc/${parentOf(p.pid)}/cmdline`, 'utf8').split('\0')).not.toContain('/usr/bin/setsid');
    process.kill(-p.pid, 'SIGKILL');
    expect(await p.ended).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  it('killGroup reaches a child that has no group of its own yet (a setsid child before setsid has run) by its pid, and nothing that is gone', async () => {
    // a child in our own group and session, as the relay's child is until the setsid program has run
    // (under load that can outlast the launch: a group kill then found nothing and the child lived on)
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    const pid = child.pid as number;
    expect(() => process.kill(-pid, 0)).toThrow(); // no group of its pid
    expect(killGroup(pid)).toBe(true);
    expect(await exited).toBe('SIGKILL');
    expect(killGroup(pid)).toBe(false); // gone: nothing is signalled
    // a group leader is killed as a group, as before
    const leader = spawn('sleep', ['60'], { stdio: 'ignore', detached: true });
    const leaderExited = new Promise<NodeJS.Signals | null>((resolve) =>
      leader.once('exit', (_code, signal) => resolve(signal)),
    );
    expect(killGroup(leader.pid)).toBe(true);
    expect(await leaderExited).toBe('SIGKILL');
  });

  it('delivers stdin exactly once and in order across unacknowledged and acknowledged writes', async () => {
    const l = createDenoRelayLauncher({ denoPath: deno });
    launcher = l;
    const p = await l.launch(program(CAT));
    p.stderr.resume();
    const chunks: Buffer[] = [];
    p.stdout.on('data', (d: Buffer) => chunks.push(d));
    // small lines (within the window: complete at once), then blocks that cross it (each waits for the
    // launcher's acknowledgement), then small lines again
    const sent: Buffer[] = [];
    const send = (data: string | Buffer): Promise<void> =>
      new Promise((resolve, reject) => {
        sent.push(Buffer.from(data));
        p.stdin.write(data, (error) => (error ? reject(error) : resolve()));
      });
    for (let i = 0; i < 50; i++) await send(`line ${i} ${'é'.repeat(i)}\n`);
    for (let i = 0; i < 6; i++) await send(Buffer.alloc(50_000 + i * 7_000, 97 + i));
    for (let i = 0; i < 50; i++) void send(`tail ${i}\n`);
    p.stdin.end();
    expect(await p.ended).toMatchObject({ code: 0, signal: null });
    expect(Buffer.concat(chunks).equals(Buffer.concat(sent))).toBe(true);
  });

  it('holds a child that does not read its stdin to the window: later writes wait in the service', async () => {
    const l = createDenoRelayLauncher({ denoPath: deno });
    launcher = l;
    const p = await l.launch(program('await new Promise((resolve) => setTimeout(resolve, 60_000))'));
    p.stdout.resume();
    p.stderr.resume();
    p.stdin.on('error', () => undefined);
    const block = 16 * 1024;
    let completed = 0;
    for (let i = 0; i < 64; i++) p.stdin.write(Buffer.alloc(block, 120), (error) => void (error ? 0 : completed++));
    // the window (64 KiB) completes at once; then only what the launcher wrote into the child's pipe
    // (its capacity, 64 KiB by default) is acknowledged, one write at a time
    await waitFor(() => completed >= 4, 10_000, 'the writes within the window to complete');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(completed * block).toBeLessThanOrEqual(64 * 1024 + 1024 * 1024);
    expect(completed).toBeLessThan(64);
    expect(p.stdin.writableLength).toBeGreaterThan(0);
    process.kill(-p.pid, 'SIGKILL');
    expect(await p.ended).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  it('a child that exits before reading its stdin ends normally, whatever was written to it', async () => {
    const l = createDenoRelayLauncher({ denoPath: deno });
    launcher = l;
    for (const size of [100, 200_000]) {
      const p = await l.launch(program('Deno.exit(3)'));
      p.stdout.resume();
      p.stderr.resume();
      p.stdin.on('error', () => undefined);
      p.stdin.write(Buffer.alloc(size, 121));
      expect(await p.ended).toMatchObject({ code: 3, signal: null });
    }
    // and the launcher still serves the next child
    const next = await l.launch(program(CAT));
    let out = '';
    next.stdout.on('data', (d: Buffer) => (out += d.toString()));
    next.stderr.resume();
    next.stdin.end('still here');
    expect(await next.ended).toMatchObject({ code: 0 });
    expect(out).toBe('still here');
  });

  it('starts nothing but the Deno binary it was given, and refuses a spawn request too large for the launcher', async () => {
    launcher = createDenoRelayLauncher({ denoPath: deno });
    const huge = { ...program(CAT), env: { ...env, PAD: 'x'.repeat(1 << 20) } };
    await expect(launcher.launch(huge)).rejects.toThrow(/^a spawn request of 1048\d{3} bytes \(at most 1048576\)$/);
    await expect(launcher.launch({ file: '/bin/sh', args: ['-c', 'true'], env, cwd: '/tmp' })).rejects.toThrow(
      `the relay launcher starts only ${deno}, not "/bin/sh"`,
    );
  });

  it('keeps no descriptor per ended child', async () => {
    const l = createDenoRelayLauncher({ denoPath: deno });
    launcher = l;
    const once = async (): Promise<void> => {
      const p = await l.launch(program(CAT));
      p.stdout.resume();
      p.stderr.resume();
      p.stdin.end('x');
      await p.ended;
    };
    await once();
    const launcherPid = Number(
      readdirSync('/proc/self/task')
        .flatMap((tid) => readFileSync(`/proc/self/task/${tid}/children`, 'utf8').trim().split(' '))
        .filter(Boolean)
        .find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('relay-launcher.js')),
    );
    const fds = (): number => readdirSync(`/proc/${launcherPid}/fd`).length;
    const before = fds();
    for (let i = 0; i < 6; i++) await once();
    await waitFor(() => fds() <= before, 10_000, 'the launcher to close the pipes of ended children');
  });
});

describe('process-mode calls through the relay', () => {
  let tmp: ReturnType<typeof isolateTmp>;
  beforeAll(() => {
    tmp = isolateTmp();
  });
  afterAll(() => tmp.restore());

  it('answer, and their output and time limits still kill (the runner reads every byte through the relay)', async () => {
    const sandbox = await createSandbox({
      config: testConfig({ isolation: 'process', sandboxLauncher: 'deno-relay', maxOutputBytes: 256 * 1024 }),
      logger: silentLogger(),
    });
    try {
      const echo = async (): Promise<void> => {
        expect(await sandbox.run(job(tool('echo'), { via: 'relay' }))).toMatchObject({
          ok: true,
          output: { input: { via: 'relay' } },
        });
      };
      await echo();
      const flood = await sandbox.run(job(tool('stdout-flood')));
      expect(codeOf(flood)).toBe('output_limit');
      await echo();
      const slow = await sandbox.run(job(tool('sigterm-busy', { timeoutMs: 1500 })));
      expect(codeOf(slow)).toBe('timeout');
      await echo();
    } finally {
      await sandbox.close();
    }
    expectNoLeaks(tmp.dir);
  });
});
