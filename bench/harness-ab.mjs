// A/B of harness sources: the CPU of one process-mode echo call (a fresh Deno process with the
// sandbox's command: boot, the harness, one job, exit) per harness file, alternated in rounds, as the
// service would start it (the entry prepareHarness writes: the stripped harness as a strict Function's
// body). The first file is the base; each other file's figure is given as the mean of its per-round
// differences to the base, with their standard error and how many rounds were lower.
// CPU is utime+stime of the children this process reaped (bench/_boot-cpu.mjs).
//
// A harness of another commit: git show <commit>:sandbox/harness.ts > /tmp/base.ts
// Run (after npm run build): node bench/harness-ab.mjs /tmp/base.ts sandbox/harness.ts [--runs=40] [--rounds=12]
// The job carries a nonce (a harness before the host drew it ignores the member).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { resolveDeno } from '../dist/sandbox/deno-binary.js';
import { harnessEntry, prepareHarness } from '../dist/sandbox/harness-file.js';
import { createToolCompiler, transpileHarness } from '../dist/sandbox/transpile.js';
import { bootCpuMs, intArg as arg } from './_boot-cpu.mjs';

const RUNS = arg('runs', 40);
const ROUNDS = arg('rounds', 12);
const files = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (files.length < 2) {
  process.stderr.write(
    'usage: node bench/harness-ab.mjs <base harness.ts> <other harness.ts>... [--runs=40] [--rounds=12]\n',
  );
  process.exit(2);
}
const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

const deno = (await resolveDeno()).path;
const harness = await prepareHarness(); // its import map and shared cwd
const compiler = await createToolCompiler();
const dir = mkdtempSync(join(tmpdir(), 'harness-ab-'));
try {
  const echo = JSON.parse(
    readFileSync(new URL('../bootstrap-breadcrumbs/tools-self-contained/echo.json', import.meta.url), 'utf8'),
  ).context.code.source;
  const tool = compiler.compile(echo);
  if (!tool.factory) throw new Error('echo did not compile to a module factory (no esbuild?)');
  const job = `${JSON.stringify({
    nonce: randomBytes(16).toString('hex'),
    t: 'job',
    seq: 1,
    source64: '',
    lang: tool.lang,
    factory: { id: tool.factory.id, code: tool.factory.code },
    input: { message: 'hello' },
    secrets: {},
    request: { id: 'bench-1', workspace: 'workspace:tools' },
    maxResultBytes: 1 << 20,
    reuse: false,
  })}\n`;

  const entries = [];
  for (const [i, file] of files.entries()) {
    const js = await transpileHarness(readFileSync(file, 'utf8'));
    if (js === undefined) throw new Error(`${file}: esbuild could not strip its types`);
    const path = join(dir, `${i}-${basename(file, '.ts')}.js`);
    writeFileSync(path, harnessEntry(js, pathToFileURL(path).href), { mode: 0o444 });
    entries.push({ name: `${i}:${file}`, path, rounds: [] });
  }
  const batch = (path) =>
    bootCpuMs({
      deno,
      harness,
      entryPath: path,
      runs: RUNS,
      input: job,
      check: (out) => out.includes('R1 {"echo":"hello"'),
    });
  batch(entries[0].path); // page cache
  for (let r = 0; r < ROUNDS; r++)
    for (const entry of r % 2 === 0 ? entries : [...entries].reverse()) entry.rounds.push(batch(entry.path));
  const base = entries[0].rounds;
  const out = { runs_per_round: RUNS, rounds: ROUNDS, cpu_ms_per_call: {} };
  for (const entry of entries) {
    const diffs = entry.rounds.map((x, i) => x - base[i]);
    const d = mean(diffs);
    const se = Math.sqrt(diffs.reduce((a, x) => a + (x - d) ** 2, 0) / Math.max(1, diffs.length - 1) / diffs.length);
    out.cpu_ms_per_call[entry.name] = {
      mean: round(mean(entry.rounds)),
      vs_base: round(d),
      standard_error: round(se),
      rounds_lower: diffs.filter((x) => x < 0).length,
      rounds: entry.rounds.map((x) => round(x)),
    };
  }
  console.log(JSON.stringify(out));
} finally {
  rmSync(dir, { recursive: true, force: true });
  await harness.remove();
}
