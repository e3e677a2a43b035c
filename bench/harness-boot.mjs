// CPU of one sandbox boot (Deno with the sandbox's command: flags, env, import map; stdin at EOF, so the
// harness boots, says hello and exits), per entry file, printed as one JSON object:
//   empty:          an empty file (Deno's own boot, the floor)
//   harness_module: the harness's JavaScript (as prepareHarness strips it) as the entry module itself
//   harness:        the entry prepareHarness writes (the harness as the body of a strict Function)
// Each figure is utime+stime of the children this process reaped (/proc/self/stat cutime+cstime:
// exact sums, read in 10 ms ticks, so a batch of --runs processes is timed at once), in alternated
// rounds; per variant the mean over the rounds and each round's figure, and the difference to `empty`.
// node bench/harness-boot.mjs [--runs=50] [--rounds=6]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveDeno } from '../dist/sandbox/deno-binary.js';
import { prepareHarness } from '../dist/sandbox/harness-file.js';
import { bootCpuMs, intArg as arg } from './_boot-cpu.mjs';

const RUNS = arg('runs', 50);
const ROUNDS = arg('rounds', 6);
const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

const deno = (await resolveDeno()).path;
const harness = await prepareHarness();
const dir = mkdtempSync(join(tmpdir(), 'harness-boot-'));
try {
  const entry = readFileSync(harness.path, 'utf8');
  const prefix = 'new Function(';
  if (!entry.startsWith(prefix)) throw new Error(`unexpected harness entry (no esbuild?): ${entry.slice(0, 60)}`);
  // the Function's body: the harness's JavaScript after 'use strict';
  const body = JSON.parse(entry.slice(prefix.length, entry.lastIndexOf(')()')));
  const variants = {
    empty: join(dir, 'empty.js'),
    harness_module: join(dir, 'harness-module.js'),
    harness: harness.path,
  };
  writeFileSync(variants.empty, '');
  writeFileSync(variants.harness_module, body.slice(body.indexOf('\n') + 1));

  const batch = (path) =>
    bootCpuMs({
      deno,
      harness,
      entryPath: path,
      runs: RUNS,
      check: (out) => path === variants.empty || out.startsWith('TRH2'),
    });

  const names = Object.keys(variants);
  const figures = Object.fromEntries(names.map((name) => [name, []]));
  batch(variants.empty); // page cache
  for (let r = 0; r < ROUNDS; r++)
    for (const name of r % 2 === 0 ? names : [...names].reverse()) figures[name].push(batch(variants[name]));
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const out = {
    runs_per_round: RUNS,
    rounds: ROUNDS,
    entry_bytes: { harness_module: Buffer.byteLength(body), harness: Buffer.byteLength(entry) },
    cpu_ms_per_boot: {},
  };
  for (const name of names)
    out.cpu_ms_per_boot[name] = {
      mean: round(mean(figures[name])),
      over_empty: round(mean(figures[name]) - mean(figures.empty)),
      rounds: figures[name].map((x) => round(x)),
    };
  console.log(JSON.stringify(out));
} finally {
  rmSync(dir, { recursive: true, force: true });
  await harness.remove();
}
