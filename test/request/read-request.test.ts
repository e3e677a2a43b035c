// readRequest against agent-chosen `context.version` and `context.idempotency_key`: anything beyond
// the bounds is a path-precise input.invalid before any policy or store call sees it; odd but bounded
// characters pass through unchanged (they are only ever hashed, never put in a header or a tag).

import { describe, expect, it } from 'vitest';
import { requestIdentity } from '../../src/breadcrumbs/messages.js';
import { readRequest } from '../../src/request/read.js';

const read = (extra: Record<string, unknown>) => {
  const context = { tool: 't', input: {}, ...extra };
  return readRequest({ context }, requestIdentity({ id: 'b1', tags: ['tool:request'], context }));
};

describe('readRequest: version and idempotency_key', () => {
  it.each([
    [
      'a 10 KB idempotency key',
      { idempotency_key: 'k'.repeat(10_240) },
      /^malformed tool\.request\.v1: idempotency_key: Too big: expected string to have <=200 characters$/,
    ],
    ['an empty idempotency key', { idempotency_key: '' }, /^malformed tool\.request\.v1: idempotency_key: Too small/],
    [
      'a numeric idempotency key',
      { idempotency_key: 42 },
      /^malformed tool\.request\.v1: idempotency_key: Invalid input: expected string, received number$/,
    ],
    [
      'a 10 KB version',
      { version: '1'.repeat(10_240) },
      /^malformed tool\.request\.v1: version: Too big: expected string to have <=100 characters$/,
    ],
    [
      'an object version',
      { version: { major: 2 } },
      /^malformed tool\.request\.v1: version: Invalid input: expected string, received object$/,
    ],
    [
      'isolation "warm"',
      { isolation: 'warm' },
      /^malformed tool\.request\.v1: isolation: must be "process" \(the only isolation a caller can demand\), got "warm"$/,
    ],
    [
      'isolation true',
      { isolation: true },
      /^malformed tool\.request\.v1: isolation: must be "process" \(the only isolation a caller can demand\), got true$/,
    ],
    [
      'a 10 KB isolation',
      { isolation: 'p'.repeat(10_240) },
      /^malformed tool\.request\.v1: isolation: must be "process" \(the only isolation a caller can demand\), got "p{99}$/,
    ],
    [
      'isolation null',
      { isolation: null },
      /^malformed tool\.request\.v1: isolation: must be "process" \(the only isolation a caller can demand\), got null$/,
    ],
  ])('%s is input.invalid naming the field', (_what, extra, message) => {
    const result = read(extra);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.result.ok ? '' : result.result.error.code).toBe('input.invalid');
      expect(result.result.ok ? '' : result.result.error.message).toMatch(message);
    }
  });

  it('isolation "process" is the caller\'s demand for a fresh process', () => {
    expect(read({ isolation: 'process' })).toEqual({ ok: true, input: {}, isolation: 'process' });
  });

  it('a request edited by another writer than its own (auth on) is permission.denied before anything runs', () => {
    const context = { tool: 't', input: {} };
    const identity = {
      ...requestIdentity({ id: 'b1', tags: ['tool:request'], context }),
      callerProblem:
        'the request was written by "bob" and changed afterwards by "mallory"; a request runs only as its writer sent it',
    };
    const result = readRequest({ context }, identity);
    expect(result).toMatchObject({
      ok: false,
      result: { ok: false, error: { code: 'permission.denied', message: identity.callerProblem } },
    });
  });

  it('non-ASCII, control and bidi characters within the bounds are kept as sent', () => {
    const key = 'ключ\u0000\u202e\u{1F511}';
    expect(read({ idempotency_key: key, version: '^2' })).toEqual({
      ok: true,
      input: {},
      idempotencyKey: key,
      version: '^2',
    });
  });
});

// requestIdentity builds its result with stores instead of spreads (one hidden class per request):
// these pin which fields it sets in each case.
describe('requestIdentity', () => {
  it('takes the rid from a usable requestId and the label from the agent tag', () => {
    const identity = requestIdentity({
      id: 'b1',
      tags: ['tool:request', 'agent:ann'],
      context: { tool: 'echo', requestId: 'r-1' },
    });
    expect(identity).toStrictEqual({ breadcrumbId: 'b1', tool: 'echo', rid: 'r-1', agentId: 'ann', agentLabel: 'ann' });
  });

  it('answers under the breadcrumb id without a requestId, or with an unusable one (and says why)', () => {
    expect(requestIdentity({ id: 'b2', tags: ['tool:request'], context: { tool: '' } })).toStrictEqual({
      breadcrumbId: 'b2',
      tool: '(none)',
      rid: 'b2',
    });
    expect(requestIdentity({ id: 'b3', tags: [], context: { tool: 'echo', requestId: 7 } })).toStrictEqual({
      breadcrumbId: 'b3',
      tool: 'echo',
      rid: 'b3',
      problem: 'requestId must be a string, got number',
    });
    expect(requestIdentity({ id: 'b4', tags: [] })).toStrictEqual({ breadcrumbId: 'b4', tool: '(none)', rid: 'b4' });
  });
});
