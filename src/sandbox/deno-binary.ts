// Finds the Deno binary (the pinned `deno` npm dependency unless `denoPath` says otherwise) and checks
// that it runs and is recent enough. Failures are clear config.invalid errors at startup, not crashes.

import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { ErrorCode, RunnerError, coerceError } from '../errors.js';

/** Oldest Deno whose sandbox behaviour (permission flags, deny list, --no-prompt) we have verified. */
export const REQUIRED_DENO_VERSION = '2.9.6';

const VERSION_TIMEOUT_MS = 15_000;

/** The binary the pinned npm dependency installed, falling back to the platform package. */
export function defaultDenoCandidates(): string[] {
  const require = createRequire(import.meta.url);
  const exe = process.platform === 'win32' ? 'deno.exe' : 'deno';
  const candidates: string[] = [];
  const pkgs = ['deno', platformPackage()];
  for (const pkg of pkgs) {
    try {
      candidates.push(join(dirname(require.resolve(`${pkg}/package.json`)), exe));
    } catch {
      // not installed: try the next one
    }
  }
  return candidates;
}

function platformPackage(): string {
  const libc = process.platform === 'linux' ? '-glibc' : '';
  return `@deno/${process.platform}-${process.arch}${libc}`;
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Compares dotted numeric versions: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** Resolves and checks the Deno binary; throws RunnerError(config.invalid) naming the path or version. */
export async function resolveDeno(denoPath?: string): Promise<{ path: string; version: string }> {
  let path: string | undefined;
  if (denoPath !== undefined) {
    if (await isExecutableFile(denoPath)) path = denoPath;
    else throw new RunnerError(ErrorCode.ConfigInvalid, `Deno not found at ${denoPath}`);
  } else {
    const candidates = defaultDenoCandidates();
    for (const candidate of candidates) {
      if (await isExecutableFile(candidate)) {
        path = candidate;
        break;
      }
    }
    if (path === undefined) {
      const tried =
        candidates.length > 0 ? candidates.join(', ') : `the "deno" and "${platformPackage()}" npm packages`;
      throw new RunnerError(ErrorCode.ConfigInvalid, `Deno not found at ${tried}`);
    }
  }
  let stdout: string;
  try {
    const run = await execa(path, ['--version'], {
      env: { NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
      extendEnv: false,
      timeout: VERSION_TIMEOUT_MS,
    });
    stdout = run.stdout;
  } catch (err) {
    throw new RunnerError(ErrorCode.ConfigInvalid, `Deno at ${path} failed to run: ${coerceError(err).message}`, {
      cause: err,
    });
  }
  const match = /^deno (\d+\.\d+\.\d+)/m.exec(stdout);
  if (!match?.[1]) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `Deno at ${path} did not report a version (output ${JSON.stringify(stdout.slice(0, 200))})`,
    );
  }
  const version = match[1];
  if (compareVersions(version, REQUIRED_DENO_VERSION) < 0) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `Deno ${version} is older than the required ${REQUIRED_DENO_VERSION}`,
    );
  }
  return { path, version };
}
