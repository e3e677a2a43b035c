// The root logger never writes a registered secret: not as is, and not in the encodings a tool or a
// library might print it in (JSON escapes, hex, URL encoding, base64/base64url at any alignment).

import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';

function capture(secret: string) {
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => lines.push(line) });
  logger.redact(secret);
  return { logger, lines };
}

const SECRET = 'sk-live-Zq9"\\x/+ü€ 42';

describe('log redaction', () => {
  const bytes = Buffer.from(SECRET, 'utf8');
  it.each([
    ['the value itself', SECRET],
    ['hex', bytes.toString('hex')],
    ['upper-case hex', bytes.toString('hex').toUpperCase()],
    ['URL-encoded', encodeURIComponent(SECRET)],
    ['URL-encoded, lower-case escapes', encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())],
    ['form-encoded', encodeURIComponent(SECRET).replace(/%20/g, '+')],
    ['base64', bytes.toString('base64')],
    ['base64url', bytes.toString('base64url')],
    ['base64 after 1 byte', Buffer.concat([Buffer.from('a'), bytes]).toString('base64')],
    ['base64 after 2 bytes', Buffer.concat([Buffer.from('ab'), bytes]).toString('base64')],
    ['base64 of an Authorization header', Buffer.from(`user:${SECRET}`).toString('base64')],
    [
      'base64url inside a longer token',
      Buffer.concat([Buffer.from('{"k":"'), bytes, Buffer.from('"}')]).toString('base64url'),
    ],
  ])('%s', (_what, encoded) => {
    const { logger, lines } = capture(SECRET);
    logger.info('a message', { value: `before ${encoded} after`, nested: { list: [encoded] } });
    expect(lines).toHaveLength(1);
    const line = lines[0] as string;
    expect(line).toContain('[REDACTED]');
    // No 6-character run of the secret's encodings survives.
    const parsed = JSON.parse(line) as { value: string };
    expect(parsed.value.startsWith('before ')).toBe(true);
    expect(line).not.toContain(encoded.slice(2, -2));
  });

  it('redacts in child loggers and in messages, and leaves other text alone', () => {
    const { logger, lines } = capture('hunter2-password');
    logger.child({ tool: 'x' }).warn('failed with hunter2-password', { other: 'plain text' });
    expect(lines[0]).not.toContain('hunter2');
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      msg: 'failed with [REDACTED]',
      other: 'plain text',
      tool: 'x',
    });
  });

  it('ignores values shorter than 4 characters', () => {
    const { logger, lines } = capture('abc');
    logger.info('abc stays');
    expect(lines[0]).toContain('abc stays');
  });
});
