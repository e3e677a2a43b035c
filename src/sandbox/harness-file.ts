// The harness file every sandbox process starts from, and its import map (sandbox.ts).

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { HARNESS_PATH, IMPORT_MAP_JSON } from './command.js';
import { TEMP_PREFIX } from './process.js';
import { transpileHarness } from './transpile.js';

/** The files of prepareHarness. */
export interface HarnessFiles {
  path: string;
  importMapPath: string;
  /**
   * An empty directory that is the cwd of every process without a permission that could read or
   * write files (`read`, `write`, `run`): such a process cannot touch any directory, so one empty
   * directory serves them all and no directory is made and removed per process (~1 ms of the
   * service's CPU per spawn, measured). The others get an empty temp dir of their own.
   */
  sharedCwd: string;
  remove(): Promise<void>;
}

/**
 * The entry module that runs the harness's JavaScript `js` as the body of a strict function. Deno scans
 * every module it loads with its own parser (for imports) before V8 compiles it: ~1.5 ms of CPU per
 * boot for the harness's code (bench/journal/2026-11-rounds.md), while a string literal costs it next to nothing.
 * The function keeps what a module gave the harness: its bindings stay in its own scope (none reaches
 * the global object), and strict code is hidden from tool code (`fn.caller`, a CallSite's
 * getFunction/getThis). Nothing can have been tampered with yet: this is the first code of the
 * process. `sourceURL` names the file in stack frames as a module would (the host drops frames of
 * `file://` URLs from a tool's stack).
 */
export function harnessEntry(js: string, url: string): string {
  return `new Function(${JSON.stringify(`'use strict';\n${js}\n//# sourceURL=${url}\n`)})();\n`;
}

/**
 * The harness every process starts from, and its import map. Deno strips the harness's types on every
 * boot (~8 ms of CPU, and no cache survives: DENO_DIR is nowhere), so the service strips them once
 * and writes the JavaScript (wrapped by harnessEntry), with the import map, to a private temp dir
 * (removed at close; by the next service's sweep if this one dies). Without esbuild, the TypeScript itself.
 */
export async function prepareHarness(): Promise<HarnessFiles> {
  const js = await transpileHarness(await readFile(HARNESS_PATH, 'utf8'));
  const dir = await mkdtemp(join(tmpdir(), `${TEMP_PREFIX}${process.pid}-harness-`));
  const importMapPath = join(dir, 'import-map.json');
  await writeFile(importMapPath, IMPORT_MAP_JSON, { mode: 0o400 });
  // The shared cwd stays empty: nobody writes into it (read and execute only; see sharedCwd).
  const sharedCwd = join(dir, 'cwd');
  await mkdir(sharedCwd, { mode: 0o500 });
  const remove = (): Promise<void> => rm(dir, { recursive: true, force: true });
  if (js === undefined) return { path: HARNESS_PATH, importMapPath, sharedCwd, remove };
  const path = join(dir, 'harness.js');
  await writeFile(path, harnessEntry(js, pathToFileURL(path).href), { mode: 0o400 });
  return { path, importMapPath, sharedCwd, remove };
}
