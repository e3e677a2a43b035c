// Starts single-use sandbox processes through one long-lived Deno process, the *relay launcher*
// (sandbox/relay-launcher.js), that runs every child with Deno.Command and relays its stdin, stdout,
// stderr and exit over the launcher's own two pipes as binary frames (relay-protocol.ts). Starting a
// process this way costs the service and the launcher ~1 ms of CPU, against ~2.2–2.6 ms for the
// spawner's fork and pipe hand-over (bench/spawn-cost.mjs); every byte a child writes takes one more
// process hop, so warm processes (many calls each) stay with the spawner (sandbox.ts picks).
//
// Children: in the launcher's own session and process group (the service SIGKILLs each by its pid), or,
// for a recipe with `ownGroup` (a sandbox granted `run`), detached (setsid: their own process group,
// which the service SIGKILLs as a whole); with exactly the recipe's environment and cwd, and the
// recipe's niceness: inherited from the launcher, which runs at the sandbox's niceness
// (options.niceness), or else set here after the spawn.
// Backpressure: a child stream whose Readable is full is paused in the launcher (it stops reading that
// child, whose writes then block): a stream holds at most what the launcher relayed before the pause
// reached it (0.2–0.5 MB). A child's stdin writes complete at once up to RELAY_STDIN_WINDOW bytes since
// the last acknowledged one (a job line needs no acknowledgement frame), beyond that when the launcher
// has written them to the child: the launcher holds at most that window and one write per child.
// Frames to the launcher are written once per event-loop turn (createFrameWriter).
//
// States of the launcher: absent -> running (started by the first launch, own session, SIGINT
// ignored) -> dead. When it dies (crash, SIGKILL, a malformed frame) every child it reported is
// SIGKILLed by group here, pending launches are refused and every `ended` resolves with the error; the
// next launch starts a new launcher. When the service dies (even by SIGKILL) the launcher sees its
// stdin end, SIGKILLs every child's group and exits.

import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Readable, Writable } from 'node:stream';
import { killGroup } from '../process-group.js';
import { DENO_DIR_NOWHERE, sandboxEnv, wantsOwnGroup, type DenoCommand } from './command.js';
import { LAUNCH_TIMEOUT_MS, renice, type Launched, type Launcher } from './launcher.js';
import {
  createFrameDecoder,
  encodeFrame,
  FromLauncher,
  RELAY_MAX_PAYLOAD,
  RELAY_MAX_SPAWN_BYTES,
  RELAY_STDIN_WINDOW,
  ToLauncher,
} from './relay-protocol.js';

/** The launcher's program (same relative place from src/sandbox and dist/sandbox; shipped in the package). */
export const RELAY_LAUNCHER_PATH = fileURLToPath(new URL('../../sandbox/relay-launcher.js', import.meta.url));

/** Where a kill program may be: the launcher kills process groups with it (Deno.kill of a group needs --allow-run for everything). */
const KILL_PROGRAMS = ['/bin/kill', '/usr/bin/kill'];
/**
 * Where setsid may be: children that get a session of their own (a recipe's `ownGroup`) start through
 * it, by posix_spawn. Deno's `detached` makes it fork the launcher's whole address space instead (+0.8 ms
 * of CPU per spawn).
 */
const SETSID_PROGRAMS = ['/usr/bin/setsid', '/bin/setsid'];

type LauncherProcess = ChildProcessByStdio<Writable, Readable, null>;
type Status = { code: number | null; signal: string | null; error?: Error };

interface Child {
  id: number;
  pid?: number;
  /** Started with a process group of its own (the request's `group`). */
  grouped: boolean;
  started: boolean;
  resolve(launched: Launched): void;
  reject(error: Error): void;
  timer?: NodeJS.Timeout;
  niceness?: number;
  stdin?: Writable;
  outputs?: [Readable, Readable];
  paused: [boolean, boolean];
  /** The launcher reported the end of stdout, of stderr. */
  endSeen: [boolean, boolean];
  /** Callbacks of stdin writes waiting for the launcher's acknowledgement of their last frame, in order. */
  acks: { frames: number; done: () => void }[];
  /** stdin bytes sent unacknowledged (`stdinQuiet`) since the last acknowledged write (at most RELAY_STDIN_WINDOW). */
  quiet: number;
  status?: Status;
  settle?: (status: Status) => void;
}

/** Inputs of createDenoRelayLauncher. */
export interface RelayLauncherOptions {
  /** The Deno binary: runs the launcher, and is the one program the launcher may start. */
  denoPath: string;
  /**
   * Niceness of the launcher itself, so that its children are born with it: a recipe of another
   * niceness is reniced after its spawn (best effort: only upwards without privileges), and until that
   * call it would run beside the service at the launcher's priority — measured: a spare booting at
   * niceness 0 while a call is answered doubled process mode's spaced latency. Absent: unchanged.
   */
  niceness?: number;
  /** The setsid program children start through; '' for Deno's `detached` (as where there is none). Default: found. */
  setsidPath?: string;
  /** The launcher's program (tests substitute a misbehaving one); RELAY_LAUNCHER_PATH by default. */
  programPath?: string;
}

/**
 * Starts the launcher program: only `--allow-run` for the Deno binary, setsid and kill (its arguments);
 * its own session (detached), so a Ctrl-C at the service's terminal reaches the service (which drains)
 * and not the launcher (whose death would kill every running sandbox); the sandbox's environment.
 */
function spawnLauncher(denoPath: string, program: string, setsidPath: string, killPath: string): LauncherProcess {
  const allowRun = [denoPath, setsidPath, killPath].filter((path) => path !== '').join(',');
  const flags = ['run', '-q', '--no-prompt', '--no-config', '--no-lock', '--no-remote', '--no-npm'];
  return spawn(denoPath, [...flags, `--allow-run=${allowRun}`, program, denoPath, setsidPath, killPath], {
    detached: true,
    stdio: ['pipe', 'pipe', 'inherit'],
    cwd: '/',
    env: sandboxEnv(DENO_DIR_NOWHERE),
  });
}

/**
 * The frames of one event-loop turn go to the launcher in one write (one wake-up of the launcher):
 * queued for the current launcher and written after the turn's I/O callbacks (setImmediate); a
 * launcher that dies or is replaced in between takes its queue with it (its children are failed).
 */
function createFrameWriter(
  launcher: () => LauncherProcess | undefined,
): (type: number, id: number, payload?: Buffer | string) => void {
  let queue: Buffer[] = [];
  let queuedFor: LauncherProcess | undefined;
  const flush = (): void => {
    const frames = queue;
    const proc = queuedFor;
    queue = [];
    queuedFor = undefined;
    if (!proc || proc !== launcher() || proc.stdin.destroyed || frames.length === 0) return;
    proc.stdin.write(frames.length === 1 ? (frames[0] as Buffer) : Buffer.concat(frames));
  };
  return (type, id, payload) => {
    const current = launcher();
    if (!current || current.stdin.destroyed) return;
    if (queuedFor !== current) {
      if (!queuedFor) setImmediate(flush);
      queue = [];
      queuedFor = current;
    }
    queue.push(encodeFrame(type, id, payload));
  };
}

/** Starts processes through the Deno relay launcher (see the module comment). */
export function createDenoRelayLauncher(options: RelayLauncherOptions): Launcher {
  const { denoPath } = options;
  if (denoPath.includes(','))
    throw new Error(`the Deno path ${JSON.stringify(denoPath)} holds a comma: it cannot be given to --allow-run`);
  const killPath = KILL_PROGRAMS.find((path) => existsSync(path)) ?? '';
  const setsidPath = options.setsidPath ?? SETSID_PROGRAMS.find((path) => existsSync(path)) ?? '';
  let current: LauncherProcess | undefined;
  let refd = false;
  let nextId = 0;
  let closed = false;
  const children = new Map<number, Child>();

  // The launcher must not keep the service alive when idle, but must while it owes us answers.
  const updateRef = (): void => {
    const want = children.size > 0;
    if (!current || want === refd) return;
    refd = want;
    for (const handle of [current, current.stdout as Socket, current.stdin as Socket]) {
      if (want) handle.ref();
      else handle.unref();
    }
  };

  const write = createFrameWriter(() => current);

  const forget = (child: Child): void => {
    children.delete(child.id);
    clearTimeout(child.timer);
    updateRef();
  };

  /** Ends `child` after the launcher's death or its own abandonment: its group is killed, its streams closed. */
  const fail = (child: Child, error: Error): void => {
    forget(child);
    // (one whose exit was reported was reaped: its pid may belong to another process by now)
    if (!child.status) killGroup(child.pid);
    if (!child.started) return child.reject(error);
    child.stdin?.destroy();
    for (const stream of child.outputs ?? []) if (!stream.readableEnded) stream.destroy();
    child.settle?.({ code: null, signal: 'SIGKILL', error });
  };

  const failAll = (why: string): void => {
    for (const child of [...children.values()]) fail(child, new Error(why));
  };

  const outputOf = (child: Child, index: 0 | 1): Readable => {
    const stream = new Readable({
      read() {
        if (!child.paused[index]) return;
        child.paused[index] = false;
        write(ToLauncher.resume, child.id, Buffer.of(index));
      },
    });
    // A reader that goes away must not leave the child paused: its output is dropped from now on.
    stream.once('close', () => {
      if (!child.paused[index]) return;
      child.paused[index] = false;
      write(ToLauncher.resume, child.id, Buffer.of(index));
    });
    return stream;
  };

  const stdinOf = (child: Child): Writable => {
    const stdin = new Writable({
      decodeStrings: false,
      write(chunk: Buffer | string, _encoding, done) {
        const length = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
        // Within the window a write completes at once and the launcher acknowledges nothing (a job line,
        // the usual write, costs no ack frame); beyond it the write waits for the acknowledgement of its
        // last frame, which also covers every quiet frame before it (the launcher writes in order).
        const quiet = child.quiet + length <= RELAY_STDIN_WINDOW;
        const type = quiet ? ToLauncher.stdinQuiet : ToLauncher.stdin;
        let frames = 0;
        // a line that fits one frame goes into it without an intermediate copy
        if (typeof chunk === 'string' && length <= RELAY_MAX_PAYLOAD) {
          write(type, child.id, chunk);
          frames = 1;
        } else {
          const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          for (let at = 0; at < data.length || frames === 0; at += RELAY_MAX_PAYLOAD, frames++)
            write(type, child.id, data.subarray(at, at + RELAY_MAX_PAYLOAD));
        }
        if (quiet) {
          child.quiet += length;
          return done();
        }
        child.acks.push({
          frames,
          done: () => {
            child.quiet = 0;
            done();
          },
        });
      },
      final(done) {
        write(ToLauncher.stdinEnd, child.id);
        done();
      },
    });
    return stdin;
  };

  const started = (child: Child, pid: number): void => {
    child.pid = pid;
    child.started = true;
    clearTimeout(child.timer);
    renice(pid, child.niceness);
    child.stdin = stdinOf(child);
    child.outputs = [outputOf(child, 0), outputOf(child, 1)];
    const [stdout, stderr] = child.outputs;
    const ended = new Promise<Status>((resolve) => (child.settle = resolve));
    child.resolve({ pid, grouped: child.grouped, stdin: child.stdin, stdout, stderr, ended });
  };

  /**
   * `ended`, after the exit report and the end of both outputs: every byte is in their Readables, and a
   * stream that is being read (flowing) has been read to its end. (One nobody reads does not hold it up.)
   */
  const maybeEnded = (child: Child): void => {
    if (!child.status || !child.outputs || !child.endSeen[0] || !child.endSeen[1]) return;
    const open = child.outputs.find((s) => !s.destroyed && !s.readableEnded && s.readableFlowing === true);
    if (open) return void open.once('end', () => maybeEnded(child)).once('close', () => maybeEnded(child));
    if (!children.has(child.id)) return;
    forget(child);
    child.settle?.(child.status);
  };

  const onFrame = (type: number, id: number, payload: Buffer): void => {
    const child = children.get(id);
    if (type === FromLauncher.spawned) {
      const pid = payload.length === 4 ? payload.readUInt32BE(0) : 0;
      if (pid < 2) throw new Error(`the sandbox relay launcher reported pid ${pid} for child ${id}`);
      // a launch given up on (LAUNCH_TIMEOUT_MS) that started after all: nobody wants it
      if (!child || child.started) return void killGroup(pid);
      return started(child, pid);
    }
    if (!child) return; // a child given up on: its remaining frames are dropped
    switch (type) {
      case FromLauncher.failed:
        if (child.started) throw new Error(`the sandbox relay launcher reported a started child ${id} as failed`);
        forget(child);
        return child.reject(new Error(payload.toString('utf8')));
      case FromLauncher.stdout:
      case FromLauncher.stderr: {
        const index = type === FromLauncher.stdout ? 0 : 1;
        const stream = child.outputs?.[index];
        if (!stream || stream.destroyed) return;
        if (!stream.push(payload) && !child.paused[index]) {
          child.paused[index] = true;
          write(ToLauncher.pause, id, Buffer.of(index));
        }
        return;
      }
      case FromLauncher.stdoutEnd:
      case FromLauncher.stderrEnd: {
        const index = type === FromLauncher.stdoutEnd ? 0 : 1;
        child.endSeen[index] = true;
        child.outputs?.[index].push(null);
        return maybeEnded(child);
      }
      case FromLauncher.stdinAck: {
        const head = child.acks[0];
        if (head && --head.frames <= 0) {
          child.acks.shift();
          head.done();
        }
        return;
      }
      case FromLauncher.exit: {
        let status: Status | undefined;
        try {
          status = JSON.parse(payload.toString('utf8')) as Status;
        } catch {
          // reported below
        }
        if (
          typeof status !== 'object' ||
          status === null ||
          !(typeof status.code === 'number' || status.code === null) ||
          !(typeof status.signal === 'string' || status.signal === null)
        )
          throw new Error(
            `the sandbox relay launcher reported an unreadable exit for child ${id}: ${JSON.stringify(payload.toString('utf8').slice(0, 100))}`,
          );
        child.status = { code: status.code, signal: status.signal };
        // nothing more can be written to a child that exited
        child.stdin?.destroy();
        return maybeEnded(child);
      }
    }
  };

  const ensureLauncher = (): LauncherProcess => {
    if (current) return current;
    const proc = spawnLauncher(denoPath, options.programPath ?? RELAY_LAUNCHER_PATH, setsidPath, killPath);
    current = proc;
    // its children inherit its niceness from their first instruction (see RelayLauncherOptions.niceness)
    if (proc.pid !== undefined) renice(proc.pid, options.niceness);
    refd = true;
    updateRef();
    const decoder = createFrameDecoder(onFrame, (error) => {
      // a launcher that breaks the protocol is not trusted with anything more
      proc.kill('SIGKILL');
      if (current === proc) current = undefined;
      failAll(error.message);
    });
    proc.stdout.on('data', (chunk: Buffer) => decoder.push(chunk));
    proc.stdin.on('error', () => undefined);
    proc.stdout.on('error', () => undefined);
    // (a Deno binary that cannot be run: every launch waiting on this launcher fails with the reason)
    proc.on('error', (error) => {
      if (current === proc) current = undefined;
      failAll(error.message);
    });
    proc.once('exit', (code, signal) => {
      if (current === proc) current = undefined;
      failAll(`the sandbox relay launcher exited (code ${code}, signal ${signal})`);
    });
    return proc;
  };

  return {
    launch(cmd: DenoCommand) {
      if (closed) return Promise.reject(new Error('the sandbox launcher is closed'));
      if (cmd.file !== denoPath)
        return Promise.reject(new Error(`the relay launcher starts only ${denoPath}, not ${JSON.stringify(cmd.file)}`));
      const { file, args, env, cwd } = cmd;
      const grouped = wantsOwnGroup(cmd);
      const request = JSON.stringify({ file, args, env, cwd, group: grouped });
      if (Buffer.byteLength(request) > RELAY_MAX_SPAWN_BYTES)
        return Promise.reject(
          new Error(`a spawn request of ${Buffer.byteLength(request)} bytes (at most ${RELAY_MAX_SPAWN_BYTES})`),
        );
      return new Promise<Launched>((resolve, reject) => {
        do nextId = nextId >= 0xffff_fffe ? 1 : nextId + 1;
        while (children.has(nextId));
        const child: Child = {
          id: nextId,
          grouped,
          started: false,
          resolve,
          reject,
          paused: [false, false],
          endSeen: [false, false],
          acks: [],
          quiet: 0,
        };
        if (cmd.niceness !== undefined && cmd.niceness !== options.niceness) child.niceness = cmd.niceness;
        child.timer = setTimeout(() => {
          if (!child.started && children.get(child.id) === child)
            fail(
              child,
              new Error(`the sandbox relay launcher did not start the process within ${LAUNCH_TIMEOUT_MS} ms`),
            );
        }, LAUNCH_TIMEOUT_MS);
        child.timer.unref();
        children.set(child.id, child);
        ensureLauncher();
        updateRef();
        write(ToLauncher.spawn, child.id, request);
      });
    },
    async close() {
      closed = true;
      const proc = current;
      current = undefined;
      if (proc && proc.exitCode === null && proc.signalCode === null) {
        const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
        proc.ref();
        // (frames still queued are dropped: at the end of its stdin the launcher kills every child)
        proc.stdin.end();
        await gone;
      }
      failAll('the sandbox launcher closed');
    },
  };
}
