// The effects policy's review hook: the timeout / partial-effect taxonomy from the effects an
// executor counted, for side-effecting (and unknown) tools; read-only tools keep their codes.

import { describe, expect, it } from 'vitest';
import type { ToolContract } from '../../src/contract/contract.js';
import { ErrorCode } from '../../src/errors.js';
import { failure, type Effect, type ExecutionResult } from '../../src/result.js';
import { answeredWithoutRun, classify, MAX_LISTED_EFFECTS } from '../../src/request/policies/effects.js';

const TIMEOUT_MESSAGE = 'tool "w" exceeded its time limit of 500 ms';
const write: Effect = { kind: 'store.create', target: 'rec-1', at_ms: 3 };
const fetched: Effect = { kind: 'net.fetch', target: 'api.example.com:443', at_ms: 9 };

const call = (contract: ToolContract) => ({ contract, metadata: {} as Record<string, unknown> });
const failed = (
  code: ErrorCode,
  message: string,
  effects: Effect[] = [],
  details?: Record<string, unknown>,
): ExecutionResult => ({
  ok: false,
  error: failure(code, message, details),
  durationMs: 500,
  logs: [],
  logsTruncated: false,
  ...(effects.length > 0 ? { effects } : {}),
});

describe('the effects review', () => {
  it.each<[string, ToolContract]>([
    ['unknown (no side_effect)', {}],
    ['reversible-write', { side_effect: 'reversible-write' }],
    ['financial', { side_effect: 'financial' }],
  ])(
    'a %s tool that timed out after an effect answers timeout.unknown-commit, listing the effects',
    (_what, contract) => {
      const c = call(contract);
      const result = classify(c, failed(ErrorCode.Timeout, TIMEOUT_MESSAGE, [write, fetched], { timeoutMs: 500 }));
      expect(result).toMatchObject({ ok: false, durationMs: 500 });
      expect(!result.ok && result.error).toEqual({
        code: 'timeout.unknown-commit',
        message: `${TIMEOUT_MESSAGE}; it had 2 effects (store.create rec-1, net.fetch api.example.com:443), so its action may have committed: check before retrying`,
        retryable: false,
        details: {
          timeoutMs: 500,
          effects: [write, fetched],
          effects_count: 2,
          cause_code: 'timeout',
          execution: 'ran_result_lost',
        },
      });
      expect(c.metadata).toEqual({});
    },
  );

  it('a side-effecting tool that timed out before any effect answers timeout.before-submit (retryable)', () => {
    const result = classify(call({ side_effect: 'irreversible' }), failed(ErrorCode.Timeout, TIMEOUT_MESSAGE));
    expect(!result.ok && result.error).toEqual({
      code: 'timeout.before-submit',
      message: `${TIMEOUT_MESSAGE}; it had no effect yet, so nothing was submitted and it is safe to retry`,
      retryable: true,
      details: { cause_code: 'timeout', execution: 'never_started' },
    });
  });

  it('any other error after an effect is partial-effect with the original code in cause_code and its own message', () => {
    const result = classify(call({}), failed(ErrorCode.ToolError, 'boom', [write], { stack: 'at tool.ts:1:1' }));
    expect(!result.ok && result.error).toEqual({
      code: 'partial-effect',
      message: 'boom',
      retryable: false,
      details: {
        stack: 'at tool.ts:1:1',
        effects: [write],
        effects_count: 1,
        cause_code: 'tool.error',
        execution: 'ran_result_lost',
      },
    });
  });

  it('an error without effects keeps its code', () => {
    const original = failed(ErrorCode.ToolError, 'boom');
    expect(classify(call({ side_effect: 'irreversible' }), original)).toBe(original);
  });

  it('a read-only tool keeps timeout and its errors, whatever it did', () => {
    const timedOut = failed(ErrorCode.Timeout, TIMEOUT_MESSAGE, [fetched]);
    expect(classify(call({ side_effect: 'read-only' }), timedOut)).toBe(timedOut);
    const threw = failed(ErrorCode.ToolError, 'boom', [fetched]);
    expect(classify(call({ side_effect: 'read-only' }), threw)).toBe(threw);
    const never = failed(ErrorCode.Timeout, TIMEOUT_MESSAGE);
    expect(classify(call({ side_effect: 'read-only' }), never)).toBe(never);
  });

  it('a success lists its effects in metadata, capped with the total count', () => {
    const many = Array.from(
      { length: 70 },
      (_, i): Effect => ({ kind: 'net.connect', target: `h${i}.example.com:443` }),
    );
    const c = call({ side_effect: 'read-only' });
    const ok: ExecutionResult = {
      ok: true,
      output: {},
      durationMs: 1,
      logs: [],
      logsTruncated: false,
      effects: many,
      effectsDropped: 5,
    };
    expect(classify(c, ok)).toBe(ok);
    expect(c.metadata).toEqual({ effects: many.slice(0, MAX_LISTED_EFFECTS), effects_count: 75 });
    const quiet = call({});
    classify(quiet, { ok: true, output: {}, durationMs: 1, logs: [], logsTruncated: false });
    expect(quiet.metadata).toEqual({});
  });

  it('an unknown-commit message names the first three effects and how many more', () => {
    const effects = Array.from({ length: 5 }, (_, i): Effect => ({ kind: 'store.update', target: `r${i}` }));
    const result = classify(call({}), failed(ErrorCode.Timeout, TIMEOUT_MESSAGE, effects));
    expect(!result.ok && result.error.message).toBe(
      `${TIMEOUT_MESSAGE}; it had 5 effects (store.update r0, store.update r1, store.update r2 and 2 more), so its action may have committed: check before retrying`,
    );
    const oom = classify(call({}), failed(ErrorCode.MemoryLimit, 'out of memory', effects));
    expect(!oom.ok && oom.error).toMatchObject({
      code: 'partial-effect',
      message: 'out of memory',
      details: { cause_code: 'memory_limit', effects_count: 5 },
    });
  });

  it('a host program or RAP tool that was only started and reported its own error keeps that error; a timeout of one is unknown-commit', () => {
    const started = [{ kind: 'host.exec' as const, target: '/usr/bin/mail' }];
    const failed: ExecutionResult = {
      ok: false,
      durationMs: 5,
      logs: [],
      logsTruncated: false,
      effects: started,
      error: failure(ErrorCode.ToolError, 'exit status 2'),
    };
    const call = { contract: {}, metadata: {} };
    expect(classify(call, failed)).toMatchObject({
      ok: false,
      error: { code: 'tool.error', message: 'exit status 2', details: { effects: started, effects_count: 1 } },
    });
    const hung: ExecutionResult = { ...failed, error: failure(ErrorCode.Timeout, 'timed out') };
    expect(classify(call, hung)).toMatchObject({
      ok: false,
      error: { code: 'timeout.unknown-commit', details: { cause_code: 'timeout' } },
    });
  });
});

describe('a code tool that can have no external effect', () => {
  const route = (tool: { net: string[]; api: false | 'read' | 'write'; extraPermissions: string[] }) =>
    ({
      kind: 'code',
      tool,
      breadcrumbId: 'b',
      breadcrumbVersion: 1,
      owner: 'agent:a',
      version: '1.0.0',
    }) as unknown as import('../../src/catalog/catalog.js').Route;

  it.each<[string, { net: string[]; api: false | 'read' | 'write'; extraPermissions: string[] }, string]>([
    ['no permission at all', { net: [], api: false, extraPermissions: [] }, 'timeout'],
    ['only store-api reads', { net: [], api: 'read', extraPermissions: [] }, 'timeout'],
    ['a network host', { net: ['api.example.com'], api: false, extraPermissions: [] }, 'timeout.before-submit'],
    ['store-api writes', { net: [], api: 'write', extraPermissions: [] }, 'timeout.before-submit'],
    [
      'an extra Deno permission (uncounted)',
      { net: [], api: false, extraPermissions: ['write'] },
      'timeout.unknown-commit',
    ],
  ])('%s: a timeout answers %s', (_what, tool, code) => {
    const original = failed(ErrorCode.Timeout, TIMEOUT_MESSAGE);
    const result = classify({ ...call({}), route: route(tool) }, original);
    expect(!result.ok && result.error.code).toBe(code);
    expect(!result.ok && result.error.retryable).toBe(code === 'timeout.before-submit');
    if (code === 'timeout') expect(result).toBe(original);
  });
});

describe('what an answer says ran', () => {
  it('a timeout or crash without effects on a later claim attempt may have run: not retryable', () => {
    const later = { ...call({ side_effect: 'irreversible' }), claimAttempt: 2 };
    const timedOut = classify(later, failed(ErrorCode.Timeout, TIMEOUT_MESSAGE));
    expect(!timedOut.ok && timedOut.error).toEqual({
      code: 'timeout.unknown-commit',
      message: `${TIMEOUT_MESSAGE}; it had no effect counted, but attempt 2 of this request: an earlier attempt (on a replica that stopped) may have run it: check before retrying`,
      retryable: false,
      details: { cause_code: 'timeout', execution: 'may_have_run' },
    });
    const crashed = classify(later, failed(ErrorCode.SandboxCrashed, 'the sandbox process died'));
    expect(!crashed.ok && crashed.error).toMatchObject({
      code: 'sandbox.crashed',
      retryable: false,
      details: { execution: 'may_have_run' },
    });
  });

  it('a crash on the first attempt without effects never started anything: retryable', () => {
    const crashed = classify(call({}), failed(ErrorCode.SandboxCrashed, 'the sandbox process died'));
    expect(!crashed.ok && crashed.error).toMatchObject({
      code: 'sandbox.crashed',
      retryable: true,
      details: { execution: 'never_started' },
    });
  });
});

describe('an answer without a run now', () => {
  const refused = (): ExecutionResult => failed(ErrorCode.RateExceeded, 'rate limit of tool "w" reached');
  it('on a later claim attempt a retryable refusal says the call may have run, and is not retryable', () => {
    const result = answeredWithoutRun({ claimAttempt: 2, contract: {} }, refused());
    expect(!result.ok && result.error).toMatchObject({
      code: 'rate.exceeded',
      retryable: false,
      details: { execution: 'may_have_run' },
    });
  });

  it('on the first attempt, or for a read-only tool, it stays as it is', () => {
    const first = refused();
    expect(answeredWithoutRun({ claimAttempt: 1, contract: {} }, first)).toBe(first);
    const readOnly = refused();
    expect(answeredWithoutRun({ claimAttempt: 3, contract: { side_effect: 'read-only' } }, readOnly)).toBe(readOnly);
  });
});
