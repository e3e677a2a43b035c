// Runs one host program and collects what it did. The process lives in its own process group
// (spawned detached) and is always ended with SIGKILL to the whole group: on timeout, on output
// over the cap, on abort — and also right after the program itself exits, so helpers it left
// running (which would hold our pipes open) die with it. A program that calls setsid() can still
// escape the group; only a cgroup would stop that.
//
// States: spawning -> running -> (exited | killed for timeout / output_limit / aborted) -> closed.
// `ending` records the first reason the run stopped; later reasons never overwrite it.

import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { killGroup } from '../process-group.js';

/** What to run. `stdin` null means the child's stdin is /dev/null. */
export interface ProcessSpec {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  stdin: string | null;
  timeoutMs: number;
  /** Cap on stdout + stderr bytes together. */
  maxOutputBytes: number;
  signal?: AbortSignal;
}

/** Why the run stopped. */
export type ProcessEnding = 'exited' | 'timeout' | 'output_limit' | 'aborted' | 'spawn_error';

/** Everything a caller needs to map the run to a result and an audit line. */
export interface ProcessOutcome {
  ending: ProcessEnding;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  /** Bytes the program wrote (may exceed what was kept when the cap was hit). */
  stdoutBytes: number;
  stderrBytes: number;
  spawnError?: Error;
  durationMs: number;
}

/** Runs `spec.argv` without a shell and resolves when the process and its pipes are closed. */
export function runProcess(spec: ProcessSpec): Promise<ProcessOutcome> {
  const started = performance.now();
  const [program = '', ...args] = spec.argv;
  return new Promise((resolve) => {
    const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    const bytes = { stdout: 0, stderr: 0 };
    let keptTotal = 0;
    let ending: ProcessEnding | undefined;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let spawnError: Error | undefined;
    let settled = false;
    let exited = false;

    if (spec.signal?.aborted) {
      resolve({
        ending: 'aborted',
        exitCode: null,
        signal: null,
        stdout: Buffer.alloc(0),
        stderr: Buffer.alloc(0),
        stdoutBytes: 0,
        stderrBytes: 0,
        durationMs: 0,
      });
      return;
    }
    const child = spawn(program, args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: [spec.stdin === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
      shell: false,
      windowsHide: true,
    });
    const stop = (why: ProcessEnding): void => {
      ending ??= why;
      killGroup(child.pid);
    };
    // Once the program has exited, a late timer or abort changes nothing: only draining pipes remain.
    const timer = setTimeout(() => exited || stop('timeout'), spec.timeoutMs);
    const onAbort = (): void => {
      if (!exited) stop('aborted');
    };
    spec.signal?.addEventListener('abort', onAbort, { once: true });

    const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      bytes[stream] += chunk.length;
      const room = spec.maxOutputBytes - keptTotal;
      if (room > 0) {
        const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
        kept[stream].push(part);
        keptTotal += part.length;
      }
      if (bytes.stdout + bytes.stderr > spec.maxOutputBytes) stop('output_limit');
    };
    child.stdout?.on('data', collect('stdout'));
    child.stderr?.on('data', collect('stderr'));
    if (child.stdin) {
      child.stdin.on('error', () => {
        // EPIPE: the program exited without reading its input; its exit status tells the story.
      });
      child.stdin.end(spec.stdin ?? '');
    }

    const finish = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      spec.signal?.removeEventListener('abort', onAbort);
      resolve({
        ending: ending ?? (spawnError ? 'spawn_error' : 'exited'),
        exitCode,
        signal: exitSignal,
        stdout: Buffer.concat(kept.stdout),
        stderr: Buffer.concat(kept.stderr),
        stdoutBytes: bytes.stdout,
        stderrBytes: bytes.stderr,
        ...(spawnError ? { spawnError } : {}),
        durationMs: performance.now() - started,
      });
    };
    child.on('error', (err) => {
      spawnError = err;
      if (child.pid === undefined) {
        ending ??= 'spawn_error';
        finish();
      }
    });
    child.on('exit', (code, signal) => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      killGroup(child.pid);
    });
    child.on('close', finish);
  });
}
