// Starts `node dist/cli/main.js <args>` for the benches and lets them wait for a stdout line
// (e.g. /^store listening on /). Logs only errors; stderr passes through.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
/** Every process a bench starts shares one runner secret (required by a runner with --store-url). */
const BENCH_RUNNER_SECRET = 'bench-runner-secret-0123456789';

/**
 * Spawns the CLI (or `script`, another Node program); `procs` (optional) tracks it until it exits; `nodeArgs`
 * go before the script (e.g. --cpu-prof); `extraEnv` adds variables.
 * `stdoutCopy` (optional): a file that gets a copy of its stdout (e.g. V8's --trace-opt lines) and the lines `note()` adds.
 */
export function startCli(args, procs, nodeArgs = [], extraEnv = {}, stdoutCopy = undefined, script = cli) {
  const proc = spawn(process.execPath, [...nodeArgs, script, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TOOLS_RUNNER_LOG_LEVEL: 'error',
      TOOLS_RUNNER_RUNNER_SECRET: BENCH_RUNNER_SECRET,
      ...extraEnv,
    },
  });
  if (procs) {
    procs.add(proc);
    proc.on('exit', () => procs.delete(proc));
  }
  const copy = stdoutCopy ? createWriteStream(stdoutCopy) : undefined;
  if (copy) proc.stdout.pipe(copy);
  const lines = [];
  const waiters = [];
  let buf = '';
  proc.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of [...waiters])
        if (w.re.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
    }
  });
  return {
    proc,
    line: (re) => lines.find((l) => re.test(l)) ?? new Promise((resolve) => waiters.push({ re, resolve })),
    note: (text) => copy?.write(`${text}\n`),
    /** SIGTERM (the service drains and closes), resolved once it exited; at once if it already has. */
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
