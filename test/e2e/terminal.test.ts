// A person at a terminal, from the first command: `start` under a real pseudo-terminal (util-linux
// `script`, so its log format defaults to text) with default settings, `call`s from a directory
// outside the checkout, and Ctrl-C written to the terminal (the line discipline sends SIGINT to the
// whole foreground process group, as a keyboard does): the first drains (the in-flight call is
// answered) and exits 0, a second during the drain forces exit 130.
//
// Latencies of the calls are printed, never asserted (a loaded machine is slow, not wrong).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupAll, tempDir } from './harness.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout?.includes('util-linux') === true;

const procs: ChildProcess[] = [];
afterEach(async () => {
  for (const proc of procs.splice(0)) {
    if (proc.exitCode === null && proc.signalCode === null) {
      // script's child is in its own session: end it through the terminal's hang-up, then by force
      proc.kill('SIGHUP');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await new Promise((r) => proc.once('exit', r));
      clearTimeout(timer);
    }
  }
  await cleanupAll();
});

/** The person's data home (XDG_DATA_HOME): the service's default data dir and the key its clients find. */
let dataHome = '';

/** The environment a person's shell would give: no TOOLS_RUNNER_* of the test run, a private TMPDIR. */
function userEnv(): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: process.env['HOME'] ?? '/tmp',
    TMPDIR: tempDir('tr-term-tmp-'),
    TERM: 'xterm',
    XDG_DATA_HOME: dataHome,
  };
}

interface Terminal {
  /** Everything the terminal showed, lines without their CR. */
  lines(): string[];
  /** Resolves with the first line matching `pattern`. */
  line(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Types on the keyboard (`\x03` is Ctrl-C). */
  type(text: string): void;
  exited: Promise<number | string>;
}

const shellQuote = (a: string): string => `'${a.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `args` of the CLI under a pseudo-terminal (`script -qefc`), from a directory outside the checkout.
 * With `exitFile`, a shell in between records the CLI's exit code there (it outlives a closed terminal).
 */
function underTerminal(args: string[], exitFile?: string): Terminal {
  const command = [process.execPath, cli, ...args].map(shellQuote).join(' ');
  const quoted = exitFile
    ? // as a login shell does on hang-up: pass SIGHUP on to the job, then record how it ended
      `trap 'kill -HUP $c' HUP; ${command} & c=$!; wait $c; wait $c; echo $? > ${shellQuote(exitFile)}`
    : `exec ${command}`;
  const proc = spawn('script', ['-qefc', quoted, '/dev/null'], {
    cwd: tempDir('tr-term-start-'),
    env: userEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  procs.push(proc);
  let text = '';
  const waiters: Array<() => void> = [];
  const onData = (chunk: Buffer): void => {
    text += chunk.toString();
    for (const wake of waiters.splice(0)) wake();
  };
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  const exited = new Promise<number | string>((resolve) =>
    proc.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  // (the terminal echoes a typed Ctrl-C as ^C in front of the next output)
  const lines = (): string[] => text.split(/\r?\n/).map((l) => l.replace(/\r/g, '').replace(/\^C/g, ''));
  return {
    lines,
    exited,
    type: (keys) => void proc.stdin.write(keys),
    line(pattern, timeoutMs = 120_000) {
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(`terminal showed no line matching ${pattern} within ${timeoutMs} ms:\n${text.slice(-4000)}`),
            ),
          timeoutMs,
        );
        const check = (): void => {
          const found = lines().find((l) => pattern.test(l));
          if (found !== undefined) {
            clearTimeout(timer);
            resolve(found);
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            clearTimeout(timer);
            reject(
              new Error(
                `terminal closed (${proc.exitCode ?? proc.signalCode}) before a line matching ${pattern}:\n${text.slice(-4000)}`,
              ),
            );
          } else {
            waiters.push(check);
          }
        };
        check();
        void exited.then(() => setImmediate(check));
      });
    },
  };
}

/** `tools-runner call` from `cwd` (outside the checkout); resolves with its exit code, output and latency. */
function call(
  cwd: string,
  url: string,
  tool: string,
  input: unknown,
): { proc: ChildProcess; done: Promise<{ code: number | string; out: string; err: string; ms: number }> } {
  const started = performance.now();
  const proc = spawn(process.execPath, [cli, 'call', tool, JSON.stringify(input), '--store-url', url], {
    cwd,
    env: userEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.push(proc);
  let out = '';
  let err = '';
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (err += c.toString()));
  const done = new Promise<{ code: number | string; out: string; err: string; ms: number }>((resolve) =>
    proc.on('close', (code, signal) =>
      resolve({ code: code ?? signal ?? 'unknown', out, err, ms: Math.round(performance.now() - started) }),
    ),
  );
  return { proc, done };
}

/**
 * Starts `start` with default settings (data dir, audit dir and bootstrap dir at their defaults: the
 * data home is a temp dir) but free ports; resolves with its store and admin URLs.
 */
async function startAtTerminal(
  extra: string[] = [],
  exitFile?: string,
): Promise<{ term: Terminal; url: string; admin: string }> {
  dataHome = tempDir('tr-term-home-');
  const term = underTerminal(['start', '--port', '0', '--admin-port', '0', ...extra], exitFile);
  const url = (await term.line(/^store listening on /)).replace('store listening on ', '').trim();
  await term.line(/^runner ready$/);
  const admin = /url=(http:\/\/\S+)/.exec(await term.line(/ admin port listening /))?.[1] as string;
  return { term, url, admin };
}

/** Polls /metrics until a job is running (the slow call is in flight). */
async function untilRunning(admin: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    if (/^tools_runner_jobs_running [1-9]/m.test(metrics)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the slow call never started running');
}

/** `promise`, or a failure after `ms` that shows what the terminal and the call printed (not a bare test timeout). */
async function within<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
  term: Terminal,
  slow?: { proc: ChildProcess },
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const callState = slow
        ? ` (the call CLI: exit ${slow.proc.exitCode ?? slow.proc.signalCode ?? 'still running'})`
        : '';
      reject(
        new Error(`${what} not within ${ms} ms${callState}; the terminal:\n${term.lines().slice(-40).join('\n')}`),
      );
    }, ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

const warnOrError = (lines: string[]): string[] =>
  lines.filter((l) => /^\d\d:\d\d:\d\d\.\d{3} (WARN|ERROR)/.test(l) || /"level":"(warn|error)"/.test(l));

describe.skipIf(!hasScript)('at a terminal (pseudo-terminal, text logs)', () => {
  it('20 calls from another directory all succeed with no WARN or ERROR line; Ctrl-C drains: the in-flight call is answered and start exits 0', async () => {
    const { term, url, admin } = await startAtTerminal();
    // text logs: the terminal made the default format human-readable
    expect(term.lines().some((l) => /^\d\d:\d\d:\d\d\.\d{3} INFO  runner ready /.test(l))).toBe(true);
    const elsewhere = mkdtempSync(join(tmpdir(), 'tr-term-cwd-'));
    try {
      const latencies: number[] = [];
      for (let i = 0; i < 20; i++) {
        const { code, out, err, ms } = await call(elsewhere, url, 'echo', { message: `hi ${i}` }).done;
        expect({ code, err }).toEqual({ code: 0, err: '' });
        expect(JSON.parse(out)).toMatchObject({ tool: 'echo', status: 'success' });
        latencies.push(ms);
      }
      console.log(`[terminal] call latencies (ms, CLI start to exit, 20 calls): ${latencies.join(', ')}`);

      const slow = call(elsewhere, url, 'timer', { ms: 1500 });
      await untilRunning(admin);
      term.type('\x03');
      const answered = await within(slow.done, 90_000, 'the in-flight call answered', term, slow);
      if (answered.code !== 0)
        throw new Error(
          `the in-flight call failed (${JSON.stringify(answered)}); the terminal showed:\n${term.lines().slice(-40).join('\n')}`,
        );
      console.log(`[terminal] slow call answered during the drain after ${answered.ms} ms`);
      expect(answered.code).toBe(0);
      expect(JSON.parse(answered.out)).toMatchObject({
        tool: 'timer',
        status: 'success',
        output: { requested_ms: 1500 },
      });
      expect(await within(term.exited, 90_000, 'start exited after the drain', term)).toBe(0);
      expect(term.lines().some((l) => / INFO  signal received, draining .*signal=SIGINT/.test(l))).toBe(true);
      expect(term.lines().some((l) => / INFO  stopped /.test(l))).toBe(true);
      expect(term.lines().join('\n')).not.toMatch(/sandbox\.crashed/);
      expect(warnOrError(term.lines())).toEqual([]);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 300_000);

  it('with --isolation process (processes started by the Deno relay), Ctrl-C drains: the in-flight call is answered and start exits 0', async () => {
    const { term, url, admin } = await startAtTerminal(['--isolation', 'process']);
    const elsewhere = mkdtempSync(join(tmpdir(), 'tr-term-cwd-'));
    try {
      const slow = call(elsewhere, url, 'timer', { ms: 1500 });
      await untilRunning(admin);
      term.type('\x03');
      const answered = await within(slow.done, 90_000, 'the in-flight call answered', term, slow);
      expect({ code: answered.code, err: answered.err }).toEqual({ code: 0, err: '' });
      expect(JSON.parse(answered.out)).toMatchObject({ tool: 'timer', status: 'success' });
      expect(await within(term.exited, 90_000, 'start exited after the drain', term)).toBe(0);
      expect(term.lines().join('\n')).not.toMatch(/sandbox\.crashed/);
      expect(warnOrError(term.lines())).toEqual([]);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 300_000);

  it('closing the terminal (SIGHUP) drains like SIGTERM: the in-flight call is answered and start exits 0', async () => {
    const exitFile = join(tempDir('tr-term-exit-'), 'start.exit');
    const { term, url, admin } = await startAtTerminal([], exitFile);
    const elsewhere = mkdtempSync(join(tmpdir(), 'tr-term-cwd-'));
    try {
      const slow = call(elsewhere, url, 'timer', { ms: 1500 });
      await untilRunning(admin);
      // the terminal window closes: its side of the pty goes away, the kernel hangs up the session
      for (const proc of procs) if (proc.spawnargs[0] === 'script') proc.kill('SIGKILL');
      const answered = await within(slow.done, 90_000, 'the in-flight call answered', term, slow);
      expect({ code: answered.code, err: answered.err }).toEqual({ code: 0, err: '' });
      expect(JSON.parse(answered.out)).toMatchObject({ tool: 'timer', status: 'success' });
      // start (its output now goes nowhere) drains and exits 0: the shell records its code
      for (let i = 0; i < 3600 && !existsSync(exitFile); i++) await new Promise((r) => setTimeout(r, 25));
      expect(readFileSync(exitFile, 'utf8').trim()).toBe('0');
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 300_000);

  it('a second Ctrl-C during the drain exits at once with 130', async () => {
    const { term, url, admin } = await startAtTerminal();
    const elsewhere = mkdtempSync(join(tmpdir(), 'tr-term-cwd-'));
    try {
      // a call that outlasts any test: the drain would wait for it (grace 15 s by default)
      call(elsewhere, url, 'timer', { ms: 10_000 });
      await untilRunning(admin);
      term.type('\x03');
      await term.line(/ signal received, draining /);
      term.type('\x03');
      expect(await term.exited).toBe(130);
      expect(term.lines().some((l) => / WARN  second signal, exiting now .*signal=SIGINT/.test(l))).toBe(true);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 300_000);
});
