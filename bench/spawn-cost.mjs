// CPU per started process for three ways of starting `deno run -q empty.js` (boots, exits at once),
// --parallel at a time (default 4), --n each (default 300), --rounds rounds alternated (default 2),
// printed as one JSON object:
//   direct:   child_process.spawn from this Node process (three pipes), what `--sandbox-launcher direct` does
//   spawner:  the service's launcher (dist/sandbox/launcher.js): a small Node helper forks each process
//             and hands its three pipes back over IPC (SCM_RIGHTS); the helper reaps it and reports its exit
//   relay:    the service's Deno relay launcher (dist/sandbox/relay-launcher.js, `--sandbox-launcher deno-relay`):
//             one Deno process starts each child and relays its stdio and exit as binary frames
//   deno:     a Deno launcher process (Deno.Command) that relays each child's output and exit as lines
//             on its stdout — a measurement of the mechanism only, not used by the product
// Per way and round: total_ms = CPU of every process involved (this one, the helper or Deno launcher,
// and the children: their CPU reaches the reaping parent's cutime/cstime in /proc/<pid>/stat) per
// started process; launcher_ms = the same without the children (this process + the helper or the Deno
// launcher): what the mechanism itself costs; children_ms = total_ms - launcher_ms.
// --ballast-mb=N makes this process N MB larger first (touched memory), as a service is: `direct`
// forks this process, so its fork copies more page tables; the helpers are unaffected.
// Run: npm run build && node bench/spawn-cost.mjs [--n=300] [--parallel=4] [--rounds=2] [--ballast-mb=0]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { resolveDeno } from '../dist/sandbox/deno-binary.js';
import { createDirectLauncher, createSpawnerLauncher } from '../dist/sandbox/launcher.js';
import { createDenoRelayLauncher } from '../dist/sandbox/relay-launcher.js';
import { childrenOf, statOf } from './proc-cpu.mjs';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const N = arg('n', 300);
const PARALLEL = arg('parallel', 4);
const ROUNDS = arg('rounds', 2);
const BALLAST_MB = arg('ballast-mb', 0);
const WARMUP = 8;
const round = (x) => Math.round(x * 1000) / 1000;

const deno = await resolveDeno();
const dir = mkdtempSync(join(tmpdir(), 'bench-spawn-cost-'));
writeFileSync(join(dir, 'empty.js'), '');
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', DENO_DIR: join(dir, '.deno'), NO_COLOR: '1' };
const cmd = { file: deno.path, args: ['run', '-q', 'empty.js'], env, cwd: dir };
const ballast = BALLAST_MB > 0 ? Buffer.alloc(BALLAST_MB * 1024 * 1024, 1) : undefined;

/** Runs `once` N times, PARALLEL at a time, after a warm-up; returns the wall seconds. */
async function drive(once) {
  for (let i = 0; i < WARMUP; i++) await once();
  return async () => {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (next++ < N) await once();
      }),
    );
    return (performance.now() - t0) / 1000;
  };
}

const selfMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Starts through a Launcher (direct or spawner): pipes drained, stdin closed, exit awaited. */
async function viaLauncher(launcher) {
  return async () => {
    const p = await launcher.launch(cmd);
    p.stdout.resume();
    p.stderr.resume();
    p.stdin.end();
    await p.ended;
  };
}

async function measureDirect() {
  const launcher = createDirectLauncher();
  const run = await drive(await viaLauncher(launcher));
  const self0 = selfMs();
  const tree0 = statOf(process.pid);
  const seconds = await run();
  const tree1 = statOf(process.pid);
  const launcherMs = selfMs() - self0;
  const totalMs = launcherMs + (tree1.reapedMs - tree0.reapedMs);
  await launcher.close();
  return { seconds, launcherMs, totalMs };
}

async function measureSpawner() {
  return measureHelper(createSpawnerLauncher(), 'node');
}

async function measureRelay() {
  return measureHelper(createDenoRelayLauncher({ denoPath: deno.path }), 'deno');
}

async function measureHelper(launcher, comm) {
  const run = await drive(await viaLauncher(launcher));
  const helper = childrenOf(process.pid).find((pid) => statOf(pid).comm === comm);
  if (helper === undefined) throw new Error(`no ${comm} helper found`);
  const self0 = selfMs();
  const h0 = statOf(helper);
  const seconds = await run();
  const h1 = statOf(helper);
  const own = selfMs() - self0 + (h1.selfMs - h0.selfMs);
  await launcher.close();
  return { seconds, launcherMs: own, totalMs: own + (h1.reapedMs - h0.reapedMs) };
}

// The Deno launcher: lines in ("<id>\n"), lines out ("<id> o <bytes>" per output chunk, "<id> x <code>").
const DENO_LAUNCHER = `
const [deno, cwd, denoDir] = Deno.args;
const enc = new TextEncoder();
const say = (s) => { const b = enc.encode(s); let at = 0; while (at < b.length) at += Deno.stdout.writeSync(b.subarray(at)); };
const relay = async (id, stream) => { for await (const chunk of stream) say(id + ' o ' + chunk.length + '\\n'); };
const start = (id) => {
  const child = new Deno.Command(deno, { args: ['run', '-q', 'empty.js'], cwd, clearEnv: true,
    env: { PATH: '/usr/bin:/bin', DENO_DIR: denoDir, NO_COLOR: '1' }, stdin: 'piped', stdout: 'piped', stderr: 'piped' }).spawn();
  child.stdin.close();
  Promise.all([relay(id, child.stdout), relay(id, child.stderr), child.status]).then(([, , s]) => say(id + ' x ' + s.code + '\\n'));
};
let buf = '';
const dec = new TextDecoder();
for await (const chunk of Deno.stdin.readable) {
  buf += dec.decode(chunk, { stream: true });
  let nl;
  while ((nl = buf.indexOf('\\n')) >= 0) { start(buf.slice(0, nl)); buf = buf.slice(nl + 1); }
}
`;

async function measureDenoLauncher() {
  const script = join(dir, 'launcher.js');
  writeFileSync(script, DENO_LAUNCHER);
  const child = spawn(
    deno.path,
    ['run', '-q', `--allow-run=${deno.path}`, '--allow-read', script, deno.path, dir, env.DENO_DIR],
    { cwd: dir, env, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const waiting = new Map();
  let nextId = 0;
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const [id, kind] = buf.slice(0, nl).split(' ');
      buf = buf.slice(nl + 1);
      if (kind === 'x') waiting.get(id)?.();
    }
  });
  const once = () =>
    new Promise((resolve) => {
      const id = String(++nextId);
      waiting.set(id, () => {
        waiting.delete(id);
        resolve();
      });
      child.stdin.write(`${id}\n`);
    });
  const run = await drive(once);
  const self0 = selfMs();
  const l0 = statOf(child.pid);
  const seconds = await run();
  const l1 = statOf(child.pid);
  const own = selfMs() - self0 + (l1.selfMs - l0.selfMs);
  const exited = new Promise((r) => child.once('exit', r));
  child.stdin.end();
  await exited;
  return { seconds, launcherMs: own, totalMs: own + (l1.reapedMs - l0.reapedMs) };
}

const ways = { direct: measureDirect, spawner: measureSpawner, relay: measureRelay, deno: measureDenoLauncher };
const rounds = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    const result = {};
    for (const [name, measure] of Object.entries(ways)) {
      const m = await measure();
      result[name] = {
        per_sec: round(N / m.seconds),
        total_ms: round(m.totalMs / N),
        launcher_ms: round(m.launcherMs / N),
        children_ms: round((m.totalMs - m.launcherMs) / N),
      };
    }
    rounds.push(result);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  JSON.stringify(
    { n: N, parallel: PARALLEL, ballast_mb: (ballast?.length ?? 0) / 1048576, deno: deno.version, rounds },
    null,
    1,
  ),
);
