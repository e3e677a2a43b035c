// The harness file every sandbox process starts from, and its import map (sandbox.ts).

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HARNESS_PATH, IMPORT_MAP_JSON } from './command.js';
import { TEMP_PREFIX } from './process.js';
import { transpileHarness } from './transpile.js';

/**
 * The harness every process starts from, and its import map. Deno strips the harness's types on every
 * boot (~8 ms of CPU, and no cache survives: DENO_DIR is nowhere), so the service strips them once
 * and writes the JavaScript, with the import map, to a private temp dir (removed at close; by the
 * next service's sweep if this one dies). Without esbuild, the TypeScript itself.
 */
export async function prepareHarness(): Promise<{ path: string; importMapPath: string; remove(): Promise<void> }> {
  const js = await transpileHarness(await readFile(HARNESS_PATH, 'utf8'));
  const dir = await mkdtemp(join(tmpdir(), `${TEMP_PREFIX}${process.pid}-harness-`));
  const importMapPath = join(dir, 'import-map.json');
  await writeFile(importMapPath, IMPORT_MAP_JSON, { mode: 0o400 });
  const remove = (): Promise<void> => rm(dir, { recursive: true, force: true });
  if (js === undefined) return { path: HARNESS_PATH, importMapPath, remove };
  const path = join(dir, 'harness.js');
  await writeFile(path, js, { mode: 0o400 });
  return { path, importMapPath, remove };
}
