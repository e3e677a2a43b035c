// The runner's signing key for deployment stamps (see deployment.ts).
//
// Source, in order: `--runner-secret` (shared by every replica of a workspace; the stamp key is
// derived from it with a purpose label, so other uses of the same secret get unrelated keys), else
// `<data-dir>/runner.key` (32 random bytes, created once with mode 0600 and reused; created
// atomically, so concurrent starts agree on one key), else — for `--data-dir :memory:` — a random
// key that lives as long as the process (agent tools deployed by an earlier process then need to be
// deployed again).

import { createHmac, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';

const PURPOSE = 'tools-runner/deployment-stamp/v1';
const HEX = /^[0-9a-f]{64}$/;

/** Where the key came from (logged at start; tests and the README refer to it). */
export type RunnerKeySource = 'runner-secret' | 'key-file' | 'ephemeral';

/** Resolves the stamp key; throws config.invalid when the key file cannot be created or read. */
export function resolveRunnerKey(options: { runnerSecret: string | undefined; dataDir: string; logger: Logger }): { key: Buffer; source: RunnerKeySource; file?: string } {
  const { runnerSecret, dataDir, logger } = options;
  if (runnerSecret !== undefined && runnerSecret !== '') {
    logger.redact(runnerSecret);
    return { key: createHmac('sha256', runnerSecret).update(PURPOSE).digest(), source: 'runner-secret' };
  }
  if (dataDir === ':memory:') {
    logger.warn('no --runner-secret and --data-dir is :memory:: deployment stamps use a key that ends with this process');
    return { key: randomBytes(32), source: 'ephemeral' };
  }
  const file = join(dataDir, 'runner.key');
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
  return { key: createHmac('sha256', Buffer.from(text, 'hex')).update(PURPOSE).digest(), source: 'key-file', file };
}
