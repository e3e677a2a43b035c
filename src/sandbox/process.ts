// One Deno sandbox process: its empty cwd (shared, or a temp dir of its own), spawn (a process group of its
// own when it may start programs), harness hello, frame/log routing, output cap, SIGKILL (of the whole
// group, if it has one), cleanup.
//
// States: 'starting' (spawned, waiting for the harness hello and, in cgroup mode, confinement) ->
// 'ready' (harness waits for its job frame) -> 'busy' (a job is attached) -> 'idle' (reuse mode
// only: waiting for the next job of the same tool) -> 'closing' (SIGKILL sent) -> 'dead' (exited;
// temp dirs being removed).
// A kill records the first reason and is final; every path ends in 'dead' and `exited` resolves only
// after the temp dirs (and cgroup) are gone.

import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { killGroup, signalProcess } from '../process-group.js';
import { buildDenoCommand } from './command.js';
import type { Launched, Launcher } from './launcher.js';
import type { ProcessCgroup } from './cgroup.js';
import type { MemoryGuard } from './memory-guard.js';
import { createStreamReader, type StreamEvents } from './stream-reader.js';

/** Niceness of sandbox processes (0 = the service's own priority, 19 = lowest). */
export const SANDBOX_NICENESS = 10;
/** Prefix of every sandbox temp dir (tests scan for leftovers by it). */
export const TEMP_PREFIX = 'tools-runner-sbx-';
/** Bytes of a frame line around its payload ("\n" + nonce + type + seq + " " ... "\n"), at least. */
const NONCE_OVERHEAD = 36;
/** Random bytes of a process's nonce (32 hex digits in its frames). */
const NONCE_BYTES = 16;
/** How long a process may take to print its hello before it counts as a failed spawn. */
export const SPAWN_TIMEOUT_MS = 20_000;

/** Lifecycle state of a sandbox process (see the module comment). */
export type ProcessState = 'starting' | 'ready' | 'busy' | 'idle' | 'closing' | 'dead';
/** Why the host killed a process; the first reason wins. */
export type KillReason =
  | 'timeout'
  | 'memory_limit'
  | 'output_limit'
  | 'frame_too_large'
  | 'bad_frame'
  | 'aborted'
  | 'finished'
  | 'retired'
  | 'closed'
  | 'spawn_failed'
  | 'stray_output'
  | 'api_limit'
  | 'busy_idle';

/** How a process ended. */
export interface ExitInfo {
  exitCode: number | null;
  signal: string | null;
  /** The kernel OOM-killed the process's cgroup (cgroup mode). */
  oomKilled: boolean;
  killReason: KillReason | undefined;
}

/** Receives what the process does while a job is attached. */
export interface ProcessListener {
  frame(type: string, seq: number, payload: string, bytes: number): void;
  log(text: string, cut: boolean): void;
  killed(reason: KillReason, detail: string | undefined): void;
  exited(info: ExitInfo): void;
}

/** Byte limits applied to a process's output. */
export interface ProcessLimits {
  maxOutputBytes: number;
  maxFrameBytes: number;
  maxLogLineBytes: number;
}

/** Handle of one sandbox process. */
export interface SandboxProcess {
  readonly id: number;
  readonly key: string;
  readonly memoryMb: number;
  readonly limitBytes: number;
  readonly pid: number | undefined;
  /** It leads a process group of its own (signals go to `-pid`); false: signals go to `pid` (Launched.grouped). */
  readonly grouped: boolean;
  /** The process's own cgroup (cgroup memory enforcement), once it is ready; undefined otherwise. */
  readonly cgroup: ProcessCgroup | undefined;
  /** Changed only by the process itself (spawn, hello, startJob, park, kill, exit). */
  readonly state: ProcessState;
  /** Jobs sent to this process so far (startJob counts them). */
  readonly jobsServed: number;
  /** Resolves when the harness is waiting for a job; rejects when the spawn failed. */
  readonly ready: Promise<void>;
  /** Resolves once the process is gone and its temp dirs are removed. */
  readonly exited: Promise<ExitInfo>;
  attach(listener: ProcessListener | null): void;
  /** Writes one line to the harness's stdin. */
  /** Starts the output budget anew (a lasting run's budgets are a rate). */
  renewOutput(): void;
  send(line: string): void;
  kill(reason: KillReason, detail?: string): void;
  /** 'ready' | 'idle' -> 'busy': sends the job frame line and counts the job; false (nothing sent) in any other state. */
  startJob(frameLine: string): boolean;
  /** 'busy' -> 'idle' (reuse mode: the job finished and the process waits for the next one); false in any other state. */
  park(): boolean;
}

/** Inputs of spawnSandboxProcess. */
export interface SpawnOptions {
  id: number;
  key: string;
  denoPath: string;
  net: readonly string[];
  /** `--deny-net` list; DENY_NET when absent. */
  deny?: readonly string[] | undefined;
  extra?: readonly string[];
  memoryMb: number;
  limits: ProcessLimits;
  guard: MemoryGuard;
  /** Starts the OS process (a helper: the spawner, launcher.ts, or the Deno relay, relay-launcher.ts). */
  launcher: Launcher;
  logger: Logger;
  /** Entry module; the trusted harness unless a test substitutes a misbehaving one. */
  harnessPath?: string;
  /** The import map file (command.ts); absent: the map inline. */
  importMapPath?: string;
  /**
   * A shared empty cwd (harness-file.ts), used when `extra` has no file permission (`read`, `write`,
   * `run`); absent, or with one of those: an empty temp dir of the process's own, removed at its exit.
   */
  sharedCwd?: string;
}

/** Extra permissions that reach files: a process with one gets a cwd of its own. */
const FILE_PERMISSIONS: ReadonlySet<string> = new Set(['read', 'write', 'run']);

/** The job line `frameLine` (a JSON object and its newline) with the process's nonce as its first member. */
function withNonce(frameLine: string, nonce: string): string {
  if (!frameLine.startsWith('{"')) throw new Error('a job line must be a JSON object with members');
  return `{"nonce":"${nonce}",${frameLine.slice(1)}`;
}

/** Spawns a sandbox process; never throws (failures reject `ready` and end in `exited`). */
export function spawnSandboxProcess(options: SpawnOptions): SandboxProcess {
  const { guard, limits } = options;
  let listener: ProcessListener | null = null;
  let state: ProcessState = 'starting';
  let jobsServed = 0;
  let pid: number | undefined;
  let killReason: KillReason | undefined;
  let killDetail: string | undefined;
  let outputBytes = 0;
  let startupErr = '';
  // The frames' nonce, drawn here (the harness would pay ~0.2 ms of CPU per boot for Deno's Web
  // Crypto) and sent in the first job line only (startJob); the readers know it from the hello on.
  const nonce = randomBytes(NONCE_BYTES).toString('hex');
  let framesNonce = '';
  let cgroup: ProcessCgroup | undefined;
  let confining: Promise<ProcessCgroup | undefined> | undefined;
  let markReady!: () => void;
  let failReady!: (err: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  ready.catch(() => undefined);

  // whether the process leads a process group of its own (Launched.grouped): killed as a group, else by pid
  let grouped = true;
  const signalGroup = (): void => {
    if (proc.state === 'dead' || pid === undefined) return;
    if (grouped) killGroup(pid);
    else signalProcess(pid, false, 'SIGKILL');
  };

  const events = (framed: boolean): StreamEvents => ({
    hello: () => {
      if (pid === undefined) return;
      framesNonce = nonce;
      confining = guard.confine(pid, `${TEMP_PREFIX}${process.pid}-${options.id}`, options.memoryMb);
      void confining
        .then((group) => {
          cgroup = group;
          if (proc.state !== 'starting') return;
          state = 'ready';
          markReady();
        })
        .catch((err: Error) => proc.kill('spawn_failed', `cannot confine the process in a cgroup: ${err.message}`));
    },
    badHello: (line) =>
      proc.kill('spawn_failed', `the harness did not start (first line ${JSON.stringify(line.slice(0, 120))})`),
    frame: (type, seq, payload, bytes) => {
      if (!listener) return proc.kill('stray_output', 'frame while no job was attached');
      // Every byte counts: the one result/error frame of a call is bounded by maxFrameBytes and
      // context.api requests by the api proxy's budget; every other frame counts as output.
      if (type !== 'R' && type !== 'E' && type !== 'A') countOutput(bytes + NONCE_OVERHEAD);
      if (proc.state !== 'closing' && proc.state !== 'dead') listener.frame(type, seq, payload, bytes);
    },
    frameTooLarge: (type) => proc.kill('frame_too_large', type),
    badFrame: (line) => proc.kill('bad_frame', line),
    log: (text, cut) => {
      if (listener) listener.log(text, cut);
      else if (proc.state === 'starting' && startupErr.length < 2000) startupErr += text + '\n';
    },
    output: (bytes) => {
      if (!framed && proc.state === 'starting') return;
      countOutput(bytes);
    },
  });
  const countOutput = (bytes: number): void => {
    outputBytes += bytes;
    if (!listener && proc.state !== 'starting') proc.kill('stray_output', 'output while no job was attached');
    else if (outputBytes > limits.maxOutputBytes) proc.kill('output_limit', String(outputBytes));
  };

  const proc: SandboxProcess = {
    id: options.id,
    key: options.key,
    memoryMb: options.memoryMb,
    limitBytes: guard.limitBytes(options.memoryMb),
    get pid() {
      return pid;
    },
    get grouped() {
      return grouped;
    },
    get cgroup() {
      return cgroup;
    },
    get state() {
      return state;
    },
    get jobsServed() {
      return jobsServed;
    },
    ready,
    exited: undefined as unknown as Promise<ExitInfo>,
    attach(next) {
      listener = next;
      outputBytes = 0;
    },
    renewOutput() {
      outputBytes = 0;
    },
    send(line) {
      if (child && !child.stdin.destroyed) child.stdin.write(line);
    },
    kill(reason, detail) {
      if (proc.state === 'dead') return;
      if (killReason === undefined) {
        killReason = reason;
        killDetail = detail;
        if (proc.state === 'starting')
          failReady(new Error(`Deno sandbox process failed to start: ${detail ?? reason}`));
        listener?.killed(reason, detail);
      }
      signalGroup();
      state = 'closing';
    },
    startJob(frameLine) {
      if (state !== 'ready' && state !== 'idle') return false;
      state = 'busy';
      // the nonce rides in the first job only: the harness reads that line before any tool code exists
      proc.send(jobsServed === 0 ? withNonce(frameLine, nonce) : frameLine);
      jobsServed++;
      return true;
    },
    park() {
      if (state !== 'busy') return false;
      state = 'idle';
      return true;
    },
  };

  let child: Launched | undefined;
  const run = async (): Promise<ExitInfo> => {
    // The owner's pid in the name lets a later service remove what a crashed one left (sweepTempDirs).
    const shared = options.sharedCwd !== undefined && !(options.extra ?? []).some((name) => FILE_PERMISSIONS.has(name));
    const root = shared
      ? (options.sharedCwd as string)
      : await mkdtemp(join(tmpdir(), `${TEMP_PREFIX}${process.pid}-`));
    try {
      if (killReason !== undefined) {
        failReady(new Error(`Deno sandbox process failed to start: ${killDetail ?? killReason}`));
        return { exitCode: null, signal: null, oomKilled: false, killReason };
      }
      const cmd = buildDenoCommand({
        denoPath: options.denoPath,
        net: options.net,
        ...(options.deny ? { deny: options.deny } : {}),
        ...(options.extra ? { extra: options.extra } : {}),
        memoryMb: options.memoryMb,
        cwd: root,
        ...(options.harnessPath ? { harnessPath: options.harnessPath } : {}),
        ...(options.importMapPath ? { importMapPath: options.importMapPath } : {}),
      });
      const common = {
        nonce: () => framesNonce,
        maxFrameBytes: limits.maxFrameBytes,
        maxLogLineBytes: limits.maxLogLineBytes,
      };
      const stdout = createStreamReader({ ...common, expectHello: true, events: events(true) });
      const stderr = createStreamReader({ ...common, expectHello: false, events: events(false) });
      // node:child_process rather than execa on this hot path: execa's option handling cost ~1.5 ms of
      // main-thread CPU per spawn (bench/sandbox.mjs); and by default the spawn itself happens in a
      // helper process, not here (launcher.ts, relay-launcher.ts).
      let launched: Launched;
      try {
        // Tool processes run below the service's priority: a busy tool (or the boot of a warm
        // spare) cannot starve the runner that has to answer everyone else (the launcher renices).
        launched = await options.launcher.launch({ ...cmd, niceness: SANDBOX_NICENESS });
      } catch (error) {
        state = 'dead';
        failReady(new Error(`Deno sandbox process failed to start: ${(error as Error).message}`));
        return { exitCode: null, signal: null, oomKilled: false, killReason: killReason ?? 'spawn_failed' };
      }
      child = launched;
      const ended = launched.ended;
      pid = launched.pid;
      grouped = launched.grouped;
      if (killReason !== undefined) signalGroup();
      launched.stdin.on('error', () => undefined);
      launched.stdout.on('error', () => undefined);
      launched.stderr.on('error', () => undefined);
      launched.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
      launched.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      const timer = setTimeout(
        () => proc.kill('spawn_failed', `no hello within ${SPAWN_TIMEOUT_MS} ms`),
        SPAWN_TIMEOUT_MS,
      );
      ready.then(
        () => clearTimeout(timer),
        () => clearTimeout(timer),
      );
      const result = await ended;
      clearTimeout(timer);
      stdout.end();
      stderr.end();
      const wasStarting = proc.state === 'starting';
      state = 'dead';
      const oomKilled = cgroup ? await cgroup.oomKilled() : false;
      const info: ExitInfo = { exitCode: result.code, signal: result.signal, oomKilled, killReason };
      if (wasStarting) {
        const why = killDetail ?? result.error?.message;
        failReady(
          new Error(
            `Deno sandbox process failed to start: ${why ?? `exit code ${info.exitCode}, signal ${info.signal}`}${startupErr ? ` (stderr: ${startupErr.trim().slice(0, 500)})` : ''}`,
          ),
        );
      }
      listener?.exited(info);
      return info;
    } finally {
      state = 'dead';
      // the process may die while its cgroup is still being set up: wait for that, then remove it
      const group = cgroup ?? (await confining?.catch(() => undefined));
      await group?.remove();
      if (!shared)
        await rm(root, { recursive: true, force: true }).catch((err: Error) =>
          options.logger.warn('sandbox temp dir not removed', { dir: root, error: err }),
        );
    }
  };
  (proc as { exited: Promise<ExitInfo> }).exited = run().catch((err: Error) => {
    state = 'dead';
    failReady(err);
    return { exitCode: null, signal: null, oomKilled: false, killReason: killReason ?? 'spawn_failed' };
  });
  return proc;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes sandbox temp dirs left behind by services that died without cleaning up (SIGKILL,
 * power loss): those whose owner pid no longer runs and that are older than `minAgeMs`.
 * Returns how many were removed.
 */
export async function sweepTempDirs(logger: Logger, minAgeMs = 60_000): Promise<number> {
  const dir = tmpdir();
  let removed = 0;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    const owner = Number(/^(\d+)-/.exec(name.slice(TEMP_PREFIX.length))?.[1]);
    if (!Number.isInteger(owner) || owner <= 0 || owner === process.pid || isAlive(owner)) continue;
    const path = join(dir, name);
    try {
      if (Date.now() - (await stat(path)).mtimeMs < minAgeMs) continue;
      await rm(path, { recursive: true, force: true });
      removed++;
    } catch (error) {
      logger.warn('stale sandbox temp dir not removed', { dir: path, error });
    }
  }
  if (removed > 0) logger.info('removed stale sandbox temp dirs', { count: removed });
  return removed;
}
