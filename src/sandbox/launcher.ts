// Starts sandbox processes without stalling the service's event loop.
//
// `child_process.spawn` forks the calling process, and on Linux the fork copies its page tables:
// the event loop stops for ~1 ms per 25 MB of RSS (5–6 ms for a 130 MB runner, measured), once
// per single-use sandbox call. So by default a tiny helper process, the *spawner*, does the forking:
// it spawns each Deno process and hands its three stdio pipes back over the IPC channel (SCM_RIGHTS);
// the service then talks to the child directly. The spawner also reports exits, and when the
// service goes away — even by SIGKILL — it sees its IPC channel close, kills every process it
// started (with its group, if it has one) and exits, so no sandbox process outlives the service. It
// runs in a session and process group of its own (which its children share, unless they may start
// programs: command.ts ownGroup) and ignores SIGINT, so a Ctrl-C at the service's terminal drains the
// service instead of killing sandboxes.
//
// States of the spawner: absent -> starting/running -> dead (crashed or closed). A crash kills
// every child it reported and fails their `ended`; the next launch starts a new spawner.

import { spawn, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import type { Socket } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { killGroup } from '../process-group.js';
import { wantsOwnGroup, type DenoCommand } from './command.js';

/** A started process: its pid, pipes, and how it ended. */
export interface Launched {
  pid: number;
  /** It leads a process group of its own (signal `-pid`); false: it is in its launcher's (signal `pid`). */
  grouped: boolean;
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
  /** Resolves after the process exited and its stdout/stderr were drained. */
  ended: Promise<{ code: number | null; signal: string | null; error?: Error }>;
}

export interface Launcher {
  /**
   * Starts `cmd` (a buildDenoCommand recipe): detached (own session and process group) when
   * `cmd.ownGroup` is not false, else (helper launchers) in the helper's own session, which has no
   * terminal. Rejects when it cannot be started.
   */
  launch(cmd: DenoCommand): Promise<Launched>;
  close(): Promise<void>;
}

/** Best effort: a process keeps the default priority where lowering it is not permitted. */
export function renice(pid: number, niceness: number | undefined): void {
  if (niceness === undefined) return;
  try {
    setPriority(pid, niceness);
  } catch {
    // not permitted here
  }
}

/** Spawns directly from this process (blocks the event loop for the fork; used when asked to). */
export function createDirectLauncher(): Launcher {
  return {
    launch(cmd) {
      // always detached: in the service's own group a Ctrl-C at its terminal would reach the child
      const child = spawn(cmd.file, cmd.args, { cwd: cmd.cwd, env: cmd.env, detached: true, stdio: 'pipe' });
      return new Promise((resolve, reject) => {
        child.once('error', (error) => {
          if (child.pid === undefined) reject(error);
        });
        if (child.pid === undefined) return;
        renice(child.pid, cmd.niceness);
        const ended = new Promise<{ code: number | null; signal: string | null }>((done) =>
          child.once('close', (code, signal) => done({ code, signal })),
        );
        resolve({
          pid: child.pid,
          grouped: true,
          stdin: child.stdin,
          stdout: child.stdout,
          stderr: child.stderr,
          ended,
        });
      });
    },
    async close() {},
  };
}

// The spawner's whole program. Plain JS, no imports beyond node:child_process, run with `node -e`
// (so its killAll repeats src/process-group.ts's killGroup: that program cannot import it).
// Messages in: {id, file, args, env, cwd, nice?, group} (nice: the niceness it gives the child at once,
// so that the service's event loop makes no setpriority call per spawn; group: false keeps the child in
// the spawner's session and group, command.ts ownGroup). Out: {id, pid, fd: 'stdin'} and
// {id, fd: 'stdout' | 'stderr'}, each with its pipe handle | {id, exit:{code, signal}} | {id, error}.
// Node passes one handle per message and waits for the receiver's acknowledgement before the next,
// so every message counts: the pid travels with the first pipe.
const SPAWNER_SOURCE = `
const { spawn } = require('node:child_process');
const { setPriority } = require('node:os');
const live = new Map();
const send = (msg, handle) => { if (process.connected) process.send(msg, handle, () => {}); };
process.on('error', () => {});
process.on('SIGINT', () => {});
const killAll = () => { for (const [pid, child] of live) { try { process.kill(child.grouped ? -pid : pid, 'SIGKILL'); } catch {} } };
process.on('disconnect', () => { killAll(); process.exit(0); });
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) { killAll(); process.exit(0); } }, 500).unref();
process.on('message', (m) => {
  let child;
  try {
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: m.group !== false, stdio: 'pipe' });
    child.grouped = m.group !== false;
  } catch (e) { send({ id: m.id, error: String(e && e.message || e) }); return; }
  child.once('error', (e) => { if (child.pid === undefined) send({ id: m.id, error: String(e && e.message || e) }); });
  if (child.pid === undefined) return;
  live.set(child.pid, child);
  if (typeof m.nice === 'number') { try { setPriority(child.pid, m.nice); } catch {} }
  // Node starts reading a child's pipes at once; the spawner must not (it would consume the
  // child's output, or see EOF and destroy the pipe before it is handed over). Stopping the
  // read before the event loop turns leaves every byte and the EOF in the kernel pipe.
  for (const s of [child.stdout, child.stderr]) { if (s._handle) { s._handle.reading = false; s._handle.readStop(); } }
  send({ id: m.id, pid: child.pid, fd: 'stdin' }, child.stdin);
  send({ id: m.id, fd: 'stdout' }, child.stdout);
  send({ id: m.id, fd: 'stderr' }, child.stderr);
  child.once('exit', (code, signal) => { live.delete(child.pid); send({ id: m.id, exit: { code, signal } }); });
});
`;

interface Pending {
  pid?: number;
  grouped: boolean;
  seen?: number;
  stdin?: Writable;
  stdout?: Readable;
  stderr?: Readable;
  resolve(launched: Launched): void;
  reject(error: Error): void;
  exit?: (status: { code: number | null; signal: string | null; error?: Error }) => void;
  started: boolean;
  timer?: NodeJS.Timeout;
}

/**
 * Node flags of the spawner. Its fork copies its page tables and then faults in copies of the pages it
 * writes to before the child's exec: a smaller young generation (1 MB semi-spaces instead of up to
 * 16 MB) and no background GC/compiler threads keep its RSS ~10% smaller, and its CPU per spawn
 * ~0.1 ms lower (measured, bench/journal/2026-11-rounds.md "Process mode: the boot and the spawn").
 */
export const SPAWNER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--single-threaded'];

/** How long the spawner may take to start a process and hand over its pipes. */
export const LAUNCH_TIMEOUT_MS = 10_000;

/**
 * A pipe handed over by the spawner. Node makes it a socket that, at EOF (the child closed its end:
 * it exited), shuts its own write side down before it closes: a shutdown request and its callback
 * per pipe. Nothing more can be written to a child whose end is closed, so it closes at once instead.
 */
function adopt(socket: Socket): Socket {
  socket.allowHalfOpen = true;
  socket.once('end', () => socket.destroy());
  return socket;
}

/** Stands in for a stdin pipe that was closed before it could be handed over (already destroyed). */
function closedWritable(): Writable {
  const closed = new Writable({ write: (_chunk, _encoding, done) => done() });
  closed.on('error', () => undefined);
  closed.destroy();
  return closed;
}

function emptyReadable(): Readable {
  return Readable.from([]);
}

/** Starts processes through the spawner helper (see the module comment). */
export function createSpawnerLauncher(options: { nodePath?: string } = {}): Launcher {
  let helper: ChildProcess | undefined;
  let nextId = 0;
  let closed = false;
  const pending = new Map<number, Pending>();

  // The helper must not keep the service alive when idle, but must while it owes us answers.
  const channel = (): { ref(): void; unref(): void } | undefined =>
    (helper as unknown as { channel?: { ref(): void; unref(): void } } | undefined)?.channel;
  const updateRef = (): void => {
    if (pending.size > 0) channel()?.ref();
    else channel()?.unref();
  };

  const abandon = (id: number, entry: Pending, why: string): void => {
    pending.delete(id);
    updateRef();
    clearTimeout(entry.timer);
    killGroup(entry.pid);
    entry.reject(new Error(why));
  };

  const fail = (why: string): void => {
    for (const [id, entry] of pending) {
      pending.delete(id);
      killGroup(entry.pid);
      if (!entry.started) entry.reject(new Error(why));
      entry.exit?.({ code: null, signal: 'SIGKILL', error: new Error(why) });
    }
  };

  const onMessage = (message: unknown, handle: unknown): void => {
    const m = message as {
      id: number;
      pid?: number;
      fd?: 'stdin' | 'stdout' | 'stderr';
      exit?: { code: number | null; signal: string | null };
      error?: string;
    };
    if (typeof m !== 'object' || m === null || typeof m.id !== 'number') return;
    const entry = pending.get(m.id);
    if (!entry) return;
    if (m.error !== undefined) {
      pending.delete(m.id);
      updateRef();
      clearTimeout(entry.timer);
      entry.reject(new Error(m.error));
      return;
    }
    if (m.pid !== undefined) entry.pid = m.pid;
    if (m.fd && handle) entry[m.fd] = adopt(handle as Socket);
    if (m.fd) entry.seen = (entry.seen ?? 0) + 1;
    // Messages arrive in order, so at the exit report every pipe message has come. A child that
    // exited very early may have had its stdin closed by Node before the handle went out: it
    // gets closed stand-ins (nothing was or can be written to it any more).
    if (m.exit && !entry.started && entry.pid !== undefined) {
      entry.stdin ??= closedWritable();
      entry.stdout ??= emptyReadable();
      entry.stderr ??= emptyReadable();
    }
    if (m.exit) {
      const status = m.exit;
      // The exit can be reported before our end of the pipes has read everything: wait for both.
      const drained = [entry.stdout, entry.stderr].map((s) =>
        s && !s.readableEnded ? new Promise<void>((r) => s.once('close', () => r())) : Promise.resolve(),
      );
      void Promise.all(drained).then(() => {
        pending.delete(m.id);
        updateRef();
        entry.exit?.(status);
      });
    }
    // (A pipe arriving empty means Node closed it because the child already exited; the exit
    // report follows and completes the hand-over below. LAUNCH_TIMEOUT_MS covers anything else.)
    if (
      !entry.started &&
      entry.pid !== undefined &&
      entry.stdin &&
      entry.stdout &&
      entry.stderr &&
      (entry.seen === 3 || m.exit)
    ) {
      entry.started = true;
      clearTimeout(entry.timer);
      const ended = new Promise<{ code: number | null; signal: string | null; error?: Error }>(
        (resolve) => (entry.exit = resolve),
      );
      entry.resolve({
        pid: entry.pid,
        grouped: entry.grouped,
        stdin: entry.stdin,
        stdout: entry.stdout,
        stderr: entry.stderr,
        ended,
      });
    }
  };

  const ensureHelper = (): ChildProcess => {
    if (helper && helper.exitCode === null && helper.signalCode === null && helper.connected) return helper;
    // Its own process group (detached), and SIGINT ignored: a Ctrl-C at the service's terminal goes
    // to the terminal's foreground process group; it must reach the service (which drains) and not
    // the spawner (whose death would kill every running sandbox). It still dies with the service.
    const started = spawn(options.nodePath ?? process.execPath, [...SPAWNER_NODE_FLAGS, '-e', SPAWNER_SOURCE], {
      detached: true,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    });
    started.on('message', onMessage);
    started.on('error', () => undefined);
    started.once('exit', (code, signal) => {
      if (helper === started) helper = undefined;
      fail(`the sandbox spawner exited (code ${code}, signal ${signal})`);
    });
    started.unref();
    helper = started;
    return started;
  };

  return {
    launch(cmd) {
      if (closed) return Promise.reject(new Error('the sandbox launcher is closed'));
      return new Promise<Launched>((resolve, reject) => {
        const id = ++nextId;
        const entry: Pending = { resolve, reject, started: false, grouped: wantsOwnGroup(cmd) };
        entry.timer = setTimeout(() => {
          if (!entry.started && pending.get(id) === entry)
            abandon(id, entry, `the sandbox spawner did not start the process within ${LAUNCH_TIMEOUT_MS} ms`);
        }, LAUNCH_TIMEOUT_MS);
        entry.timer.unref();
        pending.set(id, entry);
        const h = ensureHelper();
        updateRef();
        const message = {
          id,
          file: cmd.file,
          args: cmd.args,
          env: cmd.env,
          cwd: cmd.cwd,
          nice: cmd.niceness,
          group: entry.grouped,
        };
        h.send(message, (error) => {
          if (error && pending.delete(id)) reject(error);
        });
      });
    },
    async close() {
      closed = true;
      const h = helper;
      helper = undefined;
      if (h && h.exitCode === null) {
        const gone = new Promise<void>((r) => h.once('exit', () => r()));
        h.ref();
        if (h.connected) h.disconnect();
        else h.kill('SIGKILL');
        await gone;
      }
      fail('the sandbox launcher closed');
    },
  };
}
