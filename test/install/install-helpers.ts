// Helpers of the installed-copy tests: a local prebuild of better-sqlite3 (this checkout's compiled
// module, so installing does not compile it again) and running the installed `tools-runner` bin.

import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { runCli } from '../e2e/harness.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** An installed copy: the directory of its `tools-runner` bin. */
export interface Installed {
  bin: string;
}

/**
 * A directory holding `better-sqlite3-v<version>-node-v<abi>-<platform>-<arch>.tar.gz` made of this
 * checkout's compiled module, for prebuild-install (npm_config_better_sqlite3_local_prebuilds).
 */
export function localPrebuilds(work: string): string {
  const pkg = join(root, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string };
  const stage = join(work, 'prebuild-stage');
  mkdirSync(join(stage, 'build', 'Release'), { recursive: true });
  copyFileSync(
    join(pkg, 'build', 'Release', 'better_sqlite3.node'),
    join(stage, 'build', 'Release', 'better_sqlite3.node'),
  );
  const dir = join(work, 'prebuilds');
  mkdirSync(dir, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync('tar', ['-czf', join(dir, name), '-C', stage, 'build']);
  return dir;
}

/** Runs the installed `tools-runner` (through the harness: output collected, killed at cleanup). */
export function runInstalled(
  installed: Installed,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): ReturnType<typeof runCli> & { result: Promise<{ code: number | string; out: string; err: string }> } {
  const proc = runCli(
    args,
    { TOOLS_RUNNER_RUNNER_SECRET: '', ...options.env },
    { cwd: options.cwd, bin: join(installed.bin, 'tools-runner') },
  );
  return {
    ...proc,
    result: proc.exited.then((code) => ({ code, out: proc.stdout.join('\n'), err: proc.stderr.join('') })),
  };
}
