// Resolves the 32-byte AES key of the secrets table: the configured `secretsKey` (64 hex chars or
// base64 of 32 bytes), else `<dataDir>/secrets.key` (generated once with mode 0600, then reused),
// else — for `:memory:` — a random key that lives as long as the process.

import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';

const HEX = /^[0-9a-fA-F]{64}$/;
const BASE64 = /^[A-Za-z0-9+/_-]{43}=?$/;

/** Decodes a key given as 64 hex chars or base64(url) of 32 bytes; undefined when it is neither. */
export function decodeKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (HEX.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (BASE64.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === 32) return bytes;
  }
  return undefined;
}

/** Returns the secrets key, creating `<dataDir>/secrets.key` on first start; throws config.invalid. */
export function resolveSecretsKey(options: {
  secretsKey: string | undefined;
  dataDir: string;
  logger: Logger;
}): Buffer {
  const { secretsKey, dataDir, logger } = options;
  if (secretsKey !== undefined) {
    const key = decodeKey(secretsKey);
    if (!key) {
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `secretsKey must be 64 hex characters or the base64 of 32 bytes (got a ${secretsKey.trim().length}-character value that is neither)`,
      );
    }
    return key;
  }
  if (dataDir === ':memory:') return randomBytes(32);
  const file = join(dataDir, 'secrets.key');
  try {
    const generated = randomBytes(32);
    writeFileSync(file, generated.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    logger.info('generated secrets key', { file });
    return generated;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `cannot create secrets key file "${file}": ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `cannot read secrets key file "${file}": ${(error as Error).message}`,
      { cause: error },
    );
  }
  const key = decodeKey(text);
  if (!key) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `secrets key file "${file}" must hold 64 hex characters or the base64 of 32 bytes`,
    );
  }
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o077) !== 0) logger.warn('secrets key file is readable by others', { file, mode: mode.toString(8) });
  return key;
}
