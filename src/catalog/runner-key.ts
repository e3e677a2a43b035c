// The runner secret, and the keys derived from it: deployment stamps (deployment.ts) and request
// keys — Idempotency-Keys, claim MACs, answer tags (breadcrumbs/request-keys.ts). Each use gets its
// own key, derived with a purpose label, so no two uses share one.
//
// One secret format everywhere: a runner secret is text, and `<data-dir>/runner.key` holds exactly the
// text you would pass as `--runner-secret` (so `--runner-secret "$(cat <data-dir>/runner.key)"` is the
// same runner). The text stands for its UTF-8 bytes, except `hex:<64 hex digits>`, which stands for
// those 32 bytes (the form of generated key files). Key files written before this format held the bare
// 64 hex digits; they are read as `hex:<digits>` (the same key) and the service rewrites them.
//
// Source, in order: `--runner-secret` (shared by every replica of a workspace), else
// `<data-dir>/runner.key`. Only the service creates that file (32 random bytes, mode 0600, created
// atomically, so concurrent starts agree on one key); client commands (`bootstrap`, `export`, `mcp`
// with --store-url, `approvals`, ...) only read it and, when it is missing, fail saying what to pass:
// a key of their own would verify nothing the service wrote. For `--data-dir :memory:` the service
// uses a random key that lives as long as the process (agent tools deployed by an earlier process
// then need to be deployed again). Against an external store (`--store-url`) a key file is used only
// if it already exists: replicas on other machines would each generate their own and disagree on
// every key, so there the secret is required.

import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequestKeys, type RequestKeys } from '../breadcrumbs/request-keys.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';

const PURPOSE = 'tools-runner/deployment-stamp/v1';
const LEGACY_HEX = /^[0-9a-f]{64}$/;
const HEX_SECRET = /^hex:[0-9a-fA-F]{64}$/;

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

/** The bytes a runner secret stands for: `hex:<64 hex digits>` is those 32 bytes, any other text its UTF-8. */
export function runnerSecretBytes(text: string): Buffer {
  if (text.startsWith('hex:')) {
    if (!HEX_SECRET.test(text))
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        'a runner secret starting with "hex:" must be followed by exactly 64 hex digits',
      );
    return Buffer.from(text.slice(4), 'hex');
  }
  return Buffer.from(text, 'utf8');
}

/** Who asks for the key: the service may create the key file; a client command only reads it. */
export type RunnerKeyRole = 'service' | 'client';

export interface RunnerKeyOptions {
  runnerSecret: string | undefined;
  dataDir: string;
  logger: Logger;
  storeUrl?: string | undefined;
  /**
   * The embedded store's shared database (`start --db`, password redacted): other replicas run on
   * it too, so a key file of this data dir (one per replica) would give each replica its own claim
   * keys and every replica would run every request. The secret must be given, as with `storeUrl`.
   */
  sharedDb?: string | undefined;
  /** Default 'client': never creates a key file. */
  role?: RunnerKeyRole;
}

/** Resolves the runner secret; throws config.invalid when it is needed but missing, or the key file is unusable. */
export function resolveRunnerKey(options: RunnerKeyOptions): RunnerKey {
  const { runnerSecret, dataDir, logger } = options;
  const service = options.role === 'service';
  const resolved = (master: Buffer, source: RunnerKeySource, file?: string): RunnerKey => ({
    key: deriveKey(master, PURPOSE),
    master,
    source,
    ...(file ? { file } : {}),
  });
  if (runnerSecret !== undefined && runnerSecret !== '') {
    logger.redact(runnerSecret);
    return resolved(runnerSecretBytes(runnerSecret), 'runner-secret');
  }
  if (service && options.sharedDb !== undefined) throw missingSharedSecret(options.sharedDb);
  if (dataDir === ':memory:') {
    if (options.storeUrl !== undefined) throw missingSecret(options.storeUrl);
    if (!service)
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        "no runner key: --data-dir :memory: keeps no key file. Pass the service's --runner-secret (TOOLS_RUNNER_RUNNER_SECRET), or its --data-dir (TOOLS_RUNNER_DATA_DIR)",
      );
    logger.warn(
      'no --runner-secret and --data-dir is :memory:: deployment stamps use a key that ends with this process',
    );
    return resolved(randomBytes(32), 'ephemeral');
  }
  const file = join(dataDir, 'runner.key');
  if (!existsSync(file)) {
    if (!service) throw missingKeyFile(file);
    if (options.storeUrl !== undefined) throw missingSecret(options.storeUrl);
    createKeyFile(dataDir, file, logger);
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `cannot read runner key file "${file}": ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (LEGACY_HEX.test(text)) {
    text = `hex:${text}`;
    if (service) upgradeKeyFile(file, text, logger);
  }
  let master: Buffer;
  try {
    master = text.length >= 16 ? runnerSecretBytes(text) : Buffer.alloc(0);
  } catch {
    master = Buffer.alloc(0);
  }
  if (master.length === 0)
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `runner key file "${file}" must hold a runner secret: 16 or more characters, or hex:<64 hex digits>`,
    );
  logger.redact(text);
  return resolved(master, 'key-file', file);
}

/** Creates `<dataDir>/runner.key` with a new random secret unless it exists (the service only). */
function createKeyFile(dataDir: string, file: string, logger: Logger): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(temp, `hex:${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
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
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `cannot create runner key file "${file}": ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** Rewrites a key file of the old format (bare hex) as the same key in the --runner-secret format. */
function upgradeKeyFile(file: string, text: string, logger: Logger): void {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    writeFileSync(temp, `${text}\n`, { mode: 0o600 });
    renameSync(temp, file);
    logger.info('runner key file rewritten in the --runner-secret format (same key)', { file });
  } catch (error) {
    // Still usable as it is: the old format is read as the same key.
    try {
      unlinkSync(temp);
    } catch {
      // nothing was written
    }
    logger.warn('could not rewrite the runner key file in the --runner-secret format', {
      file,
      error: (error as Error).message,
    });
  }
}

/** The request keys of this runner secret (for commands that read what the runner signed: catalog, answers). */
export function resolveRequestKeys(options: RunnerKeyOptions): RequestKeys {
  return requestKeysOf(resolveRunnerKey(options));
}

/** The request keys derived from a resolved runner key. */
export function requestKeysOf(runnerKey: RunnerKey): RequestKeys {
  return createRequestKeys(deriveKey(runnerKey.master, REQUEST_KEYS_PURPOSE));
}

function missingSecret(storeUrl: string): RunnerError {
  return new RunnerError(
    ErrorCode.ConfigInvalid,
    `--store-url ${storeUrl} needs --runner-secret (or TOOLS_RUNNER_RUNNER_SECRET): every replica and \`tools-runner bootstrap\` derive their claim keys and deployment stamps from it, so set the same value (16+ characters, e.g. \`openssl rand -hex 32\`) everywhere`,
  );
}

function missingSharedSecret(db: string): RunnerError {
  return new RunnerError(
    ErrorCode.ConfigInvalid,
    `--db ${db} needs --runner-secret (or TOOLS_RUNNER_RUNNER_SECRET): replicas sharing a database share its requests, and they claim them with keys derived from the runner secret — a key file per --data-dir would differ between replicas and each would run every request. Set the same value (16+ characters, e.g. \`openssl rand -hex 32\`) on every replica`,
  );
}

function missingKeyFile(file: string): RunnerError {
  return new RunnerError(
    ErrorCode.ConfigInvalid,
    `no runner key: ${file} does not exist (a client command never makes its own; the service creates it in its --data-dir). Pass the service's --data-dir (TOOLS_RUNNER_DATA_DIR), or its --runner-secret (TOOLS_RUNNER_RUNNER_SECRET)`,
  );
}
