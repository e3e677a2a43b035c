// Wall time of the CLI as a user runs it: `node dist/cli/main.js call echo '{"message":"hi"}'`
// against a running, warm service (`tools-runner start`, embedded store, bootstrapped echo tool).
// Each call is a fresh Node process, timed from spawn to exit. Also times `config` (no store) and a
// bare `node -e 0` on the same machine, so the CLI's own share can be read off.
// Prints { call_p50_ms, call_max_ms, call_min_ms, calls, config_p50_ms, node_baseline_p50_ms, ... }.
//   --calls=N (default 20), --warmup=N calls not counted (default 3)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const CALLS = arg('calls', 20);
const WARMUP = arg('warmup', 3);
const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const dir = mkdtempSync(join(tmpdir(), 'bench-cli-'));
const env = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: dir };

/** Runs one process to its end; resolves with {code, ms, stdout}. */
function timed(args) {
  return new Promise((resolve) => {
    const startedAt = performance.now();
    const proc = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    proc.on('exit', (code) => resolve({ code, ms: performance.now() - startedAt, stdout, stderr }));
  });
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const round = (n) => Math.round(n * 10) / 10;

const service = spawn(
  process.execPath,
  [cli, 'start', '--port', '0', '--admin-port', '-1', '--data-dir', join(dir, 'data'), '--log-level', 'error'],
  {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
try {
  const url = await new Promise((resolve, reject) => {
    let buf = '';
    let storeUrl;
    service.stdout.on('data', (d) => {
      buf += d;
      storeUrl ??= /store listening on (\S+)/.exec(buf)?.[1];
      if (storeUrl && /^runner ready$/m.test(buf)) resolve(storeUrl);
    });
    service.on('exit', (code) => reject(new Error(`tools-runner start exited (${code}) before "runner ready"`)));
  });
  const call = ['call', 'echo', '{"message":"hi"}', '--store-url', url];
  const times = [];
  for (let i = 0; i < WARMUP + CALLS; i++) {
    const run = await timed([cli, ...call]);
    if (run.code !== 0 || !run.stdout.includes('"status": "success"'))
      throw new Error(`call failed (exit ${run.code}): ${run.stdout}${run.stderr}`);
    if (run.stderr !== '') throw new Error(`call wrote to stderr: ${run.stderr}`);
    if (i >= WARMUP) times.push(run.ms);
  }
  const config = [];
  const bare = [];
  for (let i = 0; i < 10; i++) {
    config.push((await timed([cli, 'config'])).ms);
    bare.push((await timed(['-e', '0'])).ms);
  }
  console.log(
    JSON.stringify({
      call_p50_ms: round(quantile(times, 0.5)),
      call_max_ms: round(Math.max(...times)),
      call_min_ms: round(Math.min(...times)),
      calls: times.length,
      config_p50_ms: round(quantile(config, 0.5)),
      node_baseline_p50_ms: round(quantile(bare, 0.5)),
      node: process.version,
      command: `node dist/cli/main.js ${call
        .slice(0, 3)
        .map((a) => (a.includes('{') ? `'${a}'` : a))
        .join(' ')} --store-url URL`,
    }),
  );
} finally {
  service.kill('SIGTERM');
  await new Promise((resolve) => (service.exitCode !== null ? resolve() : service.on('exit', resolve)));
  rmSync(dir, { recursive: true, force: true });
}
