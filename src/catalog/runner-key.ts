// The runner secret, and the keys derived from it: deployment stamps (deployment.ts) and request
// keys — Idempotency-Keys, claim MACs, answer tags (breadcrumbs/request-keys.ts). Each use gets its
// own key, derived with a purpose label, so no two uses share one.
//
// Source, in order: `--runner-secret` (shared by every replica of a workspace), else
// `<data-dir>/runner.key` (32 random bytes, created once with mode 0600 and reused; created
// atomically, so concurrent starts agree on one key), else — for `--data-dir :memory:` — a random
// key that lives as long as the process (agent tools deployed by an earlier process then need to be
// deployed again). Against an external store (`--store-url`) a key file is used only if it already
// exists (a CLI command beside an embedded store): replicas on other machines would each generate
// their own and disagree on every key, so there the secret is required.

import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequestKeys, type RequestKeys } from '../breadcrumbs/request-keys.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';

const PURPOSE = 'tools-runner/deployment-stamp/v1';
const HEX = /^[0-9a-f]{64}$/;

/** Where the key came from (logged at start; tests and the README refer to it). */
export type RunnerKeySource = 'runner-secret' | 'key-file' | 'ephemeral';

/** Purpose label of the request keys (Idempotency-Keys, claim MACs, answer tags). */
export const REQUEST_KEYS_PURPOSE = 'tools-runner/request-keys/v1';

/** The key for one purpose, derived from the runner secret. */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return createHmac('sha256', master).update(purpose).digest();
}

/** The resolved runner secret: `key` signs deployment stamps, `master` derives every other key. */
export interface RunnerKey {
  key: Buffer;
  master: Buffer;
  source: RunnerKeySource;
  file?: string;
}

/** Resolves the runner secret; throws config.invalid when it is needed but missing, or the key file is unusable. */
export function resolveRunnerKey(options: { runnerSecret: string | undefined; dataDir: string; logger: Logger; storeUrl?: string | undefined }): RunnerKey {
  const { runnerSecret, dataDir, logger } = options;
  const resolved = (master: Buffer, source: RunnerKeySource, file?: string): RunnerKey => ({ key: deriveKey(master, PURPOSE), master, source, ...(file ? { file } : {}) });
  if (runnerSecret !== undefined && runnerSecret !== '') {
    logger.redact(runnerSecret);
    return resolved(Buffer.from(runnerSecret, 'utf8'), 'runner-secret');
  }
  if (dataDir === ':memory:') {
    if (options.storeUrl !== undefined) throw missingSecret(options.storeUrl);
    logger.warn('no --runner-secret and --data-dir is :memory:: deployment stamps use a key that ends with this process');
    return resolved(randomBytes(32), 'ephemeral');
  }
  const file = join(dataDir, 'runner.key');
  if (options.storeUrl !== undefined && !existsSync(file)) throw missingSecret(options.storeUrl);
  try {
    mkdirSync(dataDir, { recursive: true });
    const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(temp, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
    try {
      // link() fails when the file exists, so exactly one of several concurrent starts creates it,
      // and nobody ever reads a half-written key.
      linkSync(temp, file);
      logger.info('generated runner key', { file });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(temp);
    }
  } catch (error) {
    throw new RunnerError(ErrorCode.ConfigInvalid, `cannot create runner key file "${file}": ${(error as Error).message}`, { cause: error });
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new RunnerError(ErrorCode.ConfigInvalid, `cannot read runner key file "${file}": ${(error as Error).message}`, { cause: error });
  }
  if (!HEX.test(text)) throw new RunnerError(ErrorCode.ConfigInvalid, `runner key file "${file}" must hold 64 lower-case hex characters`);
  return resolved(Buffer.from(text, 'hex'), 'key-file', file);
}

/** The request keys of this runner secret (for commands that read what the runner signed: catalog, answers). */
export function resolveRequestKeys(options: { runnerSecret: string | undefined; dataDir: string; logger: Logger; storeUrl?: string | undefined }): RequestKeys {
  return createRequestKeys(deriveKey(resolveRunnerKey(options).master, REQUEST_KEYS_PURPOSE));
}

function missingSecret(storeUrl: string): RunnerError {
  return new RunnerError(
    ErrorCode.ConfigInvalid,
    `--store-url ${storeUrl} needs --runner-secret (or TOOLS_RUNNER_RUNNER_SECRET): every replica and \`tools-runner bootstrap\` derive their claim keys and deployment stamps from it, so set the same value (16+ characters, e.g. \`openssl rand -hex 32\`) everywhere`,
  );
}
