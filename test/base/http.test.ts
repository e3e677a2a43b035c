// The one set of HTTP helpers (src/http.ts): body parsing with each listener's codes, and the
// loopback check that decides where auth may be off.

import { describe, expect, it } from 'vitest';
import { HttpError, isLoopbackHost, parseJson, parseJsonObject } from '../../src/http.js';

const failure = (fn: () => unknown): { status: number; code: string; message: string } => {
  try {
    fn();
  } catch (error) {
    if (error instanceof HttpError) return { status: error.status, code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected an HttpError');
};

describe('parseJson / parseJsonObject', () => {
  it.each([
    ['', {}, 'invalid_json', 'request body is empty; expected a JSON object'],
    ['{"a":', {}, 'invalid_json', 'request body is not valid JSON: '],
    ['[1]', {}, 'invalid_body', 'request body must be a JSON object, got array'],
    ['null', {}, 'invalid_body', 'request body must be a JSON object, got null'],
    ['{"a":', { invalidJson: 'input.invalid' }, 'input.invalid', 'request body is not valid JSON: '],
    ['"x"', { notObject: 'bad_request' }, 'bad_request', 'request body must be a JSON object, got string'],
  ])('%j with codes %j is 400 %s', (text, codes, code, message) => {
    const got = failure(() => parseJsonObject(text, codes));
    expect(got).toMatchObject({ status: 400, code });
    expect(got.message.startsWith(message)).toBe(true);
  });

  it('parseJson accepts any JSON value; parseJsonObject returns the object', () => {
    expect(parseJson('[1,2]')).toEqual([1, 2]);
    expect(parseJsonObject(' {"a":1} ')).toEqual({ a: 1 });
  });
});

describe('isLoopbackHost', () => {
  it.each([
    'localhost',
    'LOCALHOST.',
    'app.localhost',
    '127.0.0.1',
    '127.1.2.3',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
  ])('%s is loopback', (host) => expect(isLoopbackHost(host)).toBe(true));
  it.each(['0.0.0.0', '', '10.0.0.1', 'localhost.example.com', '128.0.0.1', '::', '::ffff:10.0.0.1', 'example.com'])(
    '%s is not',
    (host) => expect(isLoopbackHost(host)).toBe(false),
  );
});
