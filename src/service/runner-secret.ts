// The runner secret: the key every Idempotency-Key, claim MAC and answer tag is derived from
// (breadcrumbs/request-keys.ts). All replicas serving one store must share it.
//
// Sources, first match wins: `--runner-secret` (any string of 16+ characters); with the embedded
// store, `<data-dir>/runner.key` (generated on first start, mode 0600; random per process for
// `:memory:`); with an external store and no secret configured, a public derivation from the
// workspace — replicas still agree, but other writers can predict the keys, so a warning says so.

import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { publicRunnerSecret } from '../breadcrumbs/request-keys.js';
import type { Config } from '../config/index.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';

const MIN_LENGTH = 16;

/** Resolves the runner secret; throws config.invalid for a short secret or an unusable key file. */
export function resolveRunnerSecret(config: Pick<Config, 'runnerSecret' | 'storeUrl' | 'dataDir' | 'workspace'>, logger: Logger): Buffer {
  if (config.runnerSecret !== undefined) {
    if (config.runnerSecret.length < MIN_LENGTH) {
      throw new RunnerError(ErrorCode.ConfigInvalid, `runnerSecret must be at least ${MIN_LENGTH} characters long (got ${config.runnerSecret.length})`);
    }
    return createHash('sha256').update(config.runnerSecret).digest();
  }
  if (config.storeUrl !== undefined) {
    logger.warn('no --runner-secret set for an external store: request keys are predictable, so other writers can squat them; set the same --runner-secret on every replica');
    return publicRunnerSecret(config.workspace);
  }
  if (config.dataDir === ':memory:') return randomBytes(32);
  const file = join(config.dataDir, 'runner.key');
  try {
    writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    logger.info('generated runner secret', { file });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new RunnerError(ErrorCode.ConfigInvalid, `cannot create runner secret file "${file}": ${(error as Error).message}`, { cause: error });
    }
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new RunnerError(ErrorCode.ConfigInvalid, `cannot read runner secret file "${file}": ${(error as Error).message}`, { cause: error });
  }
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new RunnerError(ErrorCode.ConfigInvalid, `runner secret file "${file}" must hold 64 hex characters`);
  return Buffer.from(text, 'hex');
}
