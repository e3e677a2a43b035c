// The caller of a request (breadcrumbs/caller.ts): with a store that authenticates writers, the
// verified writer (`created_by`) whatever the request's `agent:` tag or `requestedBy` say; without,
// the label. And the probe that asks the store's /health whether it authenticates.

import { describe, expect, it } from 'vitest';
import { callerOf, createStoreAuthProbe } from '../../src/breadcrumbs/caller.js';

const record = (extra: Record<string, unknown> = {}) => ({
  tags: ['tool:request', 'workspace:tools', 'agent:alice'],
  context: { tool: 't', input: {}, requestedBy: 'carol' },
  ...extra,
});

describe('callerOf', () => {
  it.each([
    [
      'auth off: the agent: tag is the identity',
      record({ created_by: 'bob', updated_by: 'bob' }),
      false,
      { agentId: 'alice', verified: false, label: 'alice' },
    ],
    [
      'auth off, no tag: requestedBy',
      { ...record(), tags: ['tool:request'] },
      false,
      { agentId: 'carol', verified: false, label: 'carol' },
    ],
    ['auth off, nothing: anonymous', { tags: [], context: { tool: 't' } }, false, { verified: false }],
    [
      'auth on: the verified writer, the tag is a label',
      record({ created_by: 'bob', updated_by: 'bob' }),
      true,
      { agentId: 'bob', verified: true, label: 'alice' },
    ],
    [
      'auth on, no tag: still the writer',
      { tags: [], context: {}, created_by: 'bob', updated_by: 'bob' },
      true,
      { agentId: 'bob', verified: true },
    ],
    [
      'auth on, a record without a writer: anonymous, never the label',
      record({ created_by: null }),
      true,
      { verified: true, label: 'alice' },
    ],
  ])('%s', (_what, full, authenticated, expected) => {
    expect(callerOf(full, authenticated)).toEqual(expected);
  });

  it('auth on: a request changed by another writer has a problem naming both', () => {
    expect(callerOf(record({ created_by: 'bob', updated_by: 'mallory' }), true)).toEqual({
      agentId: 'bob',
      verified: true,
      label: 'alice',
      problem:
        'the request was written by "bob" and changed afterwards by "mallory"; a request runs only as its writer sent it',
    });
  });
});

describe('createStoreAuthProbe', () => {
  it('reads auth "on" from /health, reuses it for ttlMs, keeps the last answer through a failed look', async () => {
    let now = 0;
    let calls = 0;
    let answer: unknown = { status: 'ok', auth: 'on' };
    const probe = createStoreAuthProbe(
      {
        health: async () => {
          calls++;
          if (answer instanceof Error) throw answer;
          return answer;
        },
      },
      { ttlMs: 1000, now: () => now },
    );
    expect(await probe.authenticates()).toBe(true);
    expect(await probe.authenticates()).toBe(true);
    expect(calls).toBe(1);
    now = 1500;
    answer = new Error('store down');
    expect(await probe.authenticates()).toBe(true);
    expect(calls).toBe(2);
    answer = 'ok'; // upstream's text body: says nothing about auth
    now = 3000;
    expect(await probe.authenticates()).toBe(false);
  });

  it('throws while the store was never readable (a label is never trusted by accident)', async () => {
    const probe = createStoreAuthProbe({
      health: async () => {
        throw new Error('ECONNREFUSED');
      },
    });
    await expect(probe.authenticates()).rejects.toThrow('ECONNREFUSED');
  });
});
