// The exact Deno command of a sandbox process (docs/sandbox.md §3): explicit minimal environment,
// no config/lock/remote/npm, the heap flag, the allow list (if any) and ALWAYS the private-range deny
// list. The harness file is the entry module; tool code never is.

import { fileURLToPath } from 'node:url';
import { DENY_NET } from './net-policy.js';

/** Path of the trusted harness (same relative place from src/sandbox and dist/sandbox). */
export const HARNESS_PATH = fileURLToPath(new URL('../../sandbox/harness.ts', import.meta.url));

/** Fixed PATH of the child: Deno needs no PATH lookups, and nothing of the service's env leaks. */
export const CHILD_PATH = '/usr/local/bin:/usr/bin:/bin';

export interface DenoCommandInput {
  denoPath: string;
  /** Already validated and normalised hosts ("api.example.com:443"); [] = no network. */
  net: readonly string[];
  memoryMb: number;
  /** Per-process DENO_DIR (throwaway). */
  denoDir: string;
  /** Per-process empty working directory. */
  cwd: string;
  harnessPath?: string;
}

export interface DenoCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

/** Builds the command line, environment and cwd of one sandbox process. */
export function buildDenoCommand(input: DenoCommandInput): DenoCommand {
  const args = [
    'run',
    '-q',
    '--no-prompt',
    '--no-config',
    '--no-lock',
    '--no-remote',
    '--no-npm',
    `--v8-flags=--max-old-space-size=${Math.floor(input.memoryMb)}`,
  ];
  if (input.net.length > 0) args.push(`--allow-net=${input.net.join(',')}`);
  args.push(`--deny-net=${DENY_NET.join(',')}`);
  args.push(input.harnessPath ?? HARNESS_PATH);
  return {
    file: input.denoPath,
    args,
    env: {
      PATH: CHILD_PATH,
      DENO_DIR: input.denoDir,
      DENO_NO_PACKAGE_JSON: '1',
      DENO_NO_UPDATE_CHECK: '1',
      NO_COLOR: '1',
    },
    cwd: input.cwd,
  };
}
