// The CPU of sandbox processes started one after another with the service's command (buildDenoCommand,
// the harness files' import map and shared cwd): utime+stime of the children this process reaped
// (/proc/self/stat cutime+cstime, 10 ms ticks, so a batch of runs is timed at once). Shared by
// bench/harness-boot.mjs and bench/harness-ab.mjs (sandboxCommand also by bench/boot-flags.mjs).
import { spawnSync } from 'node:child_process';
import { buildDenoCommand } from '../dist/sandbox/command.js';
import { statOf } from './proc-cpu.mjs';

/** A positive integer option `--<name>=N` of this process's arguments, or `fallback`. */
export function intArg(name, fallback) {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (hit === undefined) return fallback;
  const value = Number(hit.slice(name.length + 3));
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got ${hit}`);
  return value;
}

/** The service's command for a sandbox process without permissions that starts `entryPath`. */
export function sandboxCommand(deno, harness, entryPath) {
  return buildDenoCommand({
    denoPath: deno,
    net: [],
    memoryMb: 128,
    cwd: harness.sharedCwd,
    harnessPath: entryPath,
    importMapPath: harness.importMapPath,
  });
}

/**
 * Starts `entryPath` `runs` times (stdin: `input`, or none), throws unless `check(stdout)` holds for
 * each (and it exited 0); returns the CPU ms per process.
 */
export function bootCpuMs({ deno, harness, entryPath, runs, input, check }) {
  const cmd = sandboxCommand(deno, harness, entryPath);
  const before = statOf(process.pid).reapedMs;
  for (let i = 0; i < runs; i++) {
    const run = spawnSync(cmd.file, cmd.args, {
      env: cmd.env,
      cwd: cmd.cwd,
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      ...(input === undefined ? {} : { input }),
    });
    if (run.status !== 0)
      throw new Error(`${entryPath}: deno exited ${run.status}: ${String(run.stderr).slice(0, 300)}`);
    const out = String(run.stdout);
    if (!check(out)) throw new Error(`${entryPath}: unexpected output ${JSON.stringify(out.slice(0, 200))}`);
  }
  return (statOf(process.pid).reapedMs - before) / runs;
}
