// The canonical tool contract: path-precise validation, the side-effect crosswalk (every class, and
// unknown failing closed), imports from RAP/MCP annotations, and the published JSON Schema.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  contractJsonSchema,
  parseContract,
  SIDE_EFFECTS,
  sideEffectFromMcp,
  sideEffectFromRap,
  sideEffectPolicy,
} from '../../src/contract/contract.js';

describe('parseContract', () => {
  it('accepts a full contract', () => {
    const value = {
      side_effect: 'financial',
      idempotent: false,
      approval: {
        when: { side_effects: ['financial'] },
        approvers: ['operator', 'agent-9'],
        timeout_ms: 60_000,
        separation_of_duties: true,
        min_approvers: 3,
      },
      rate_limits: { per_tool: { limit: 10, window_ms: 1000 }, per_agent: { limit: 2, window_ms: 1000, burst: 1 } },
      retry: { max_attempts: 3, backoff_ms: 200, on: ['dependency.unavailable'] },
      data_classification: 'confidential',
      owner: 'payments-team',
      deprecation: { deprecated_at: '2026-01-01T00:00:00Z', removal_at: '2026-06-01T00:00:00Z', replacement: 'pay@2' },
    };
    expect(parseContract(value)).toEqual({ contract: value, issues: [] });
    expect(parseContract({})).toEqual({ contract: {}, issues: [] });
  });

  it.each([
    [{ side_effect: 'destructive' }, '/contract/side_effect', /read-only/],
    [{ idempotent: 'yes' }, '/contract/idempotent', /boolean/],
    [{ approval: { when: 'sometimes' } }, '/contract/approval/when', /./],
    [{ approval: { when: { side_effects: [] } } }, '/contract/approval/when/side_effects', /./],
    [
      { approval: { when: 'always', separation_of_duties: 'yes' } },
      '/contract/approval/separation_of_duties',
      /boolean/,
    ],
    [{ approval: { when: 'always', min_approvers: 0 } }, '/contract/approval/min_approvers', />=1/],
    [{ approval: { when: 'always', min_approvers: 2.5 } }, '/contract/approval/min_approvers', /expected int/],
    [{ approval: { when: 'always', min_approvers: 21 } }, '/contract/approval/min_approvers', /<=20/],
    [
      { approval: { when: 'always', approvers: ['alice', 'bob', 'alice'], min_approvers: 3 } },
      '/contract/approval/min_approvers',
      /^min_approvers is 3, but only 2 distinct approver\(s\) are named \(alice, bob\); no call could ever be approved$/,
    ],
    [{ rate_limits: { per_tool: { limit: 0, window_ms: 1000 } } }, '/contract/rate_limits/per_tool/limit', />=1/],
    [{ rate_limits: { per_agent: { limit: 1 } } }, '/contract/rate_limits/per_agent/window_ms', /./],
    [{ retry: { max_attempts: 50 } }, '/contract/retry/max_attempts', /<=10/],
    [{ retry: { max_attempts: 2, on: ['tool.error'] } }, '/contract/retry/on/0', /./],
    [{ deprecation: { removal_at: 'next tuesday' } }, '/contract/deprecation/removal_at', /./],
    [
      { deprecation: { deprecated_at: '2026-06-01T00:00:00Z', removal_at: '2026-01-01T00:00:00Z' } },
      '/contract/deprecation/removal_at',
      /before deprecated_at/,
    ],
    [{ sideEffect: 'read-only' }, '/contract', /unknown field\(s\) "sideEffect"/],
  ])('%j is refused at its path', (value, path, message) => {
    const result = parseContract(value);
    expect(result.contract).toBeUndefined();
    expect(result.issues[0]?.path).toBe(path);
    expect(result.issues[0]?.message).toMatch(message);
  });

  it('refuses a non-object', () => {
    expect(parseContract('read-only').issues[0]?.path).toBe('/contract');
  });
});

describe('side-effect crosswalk', () => {
  it('maps every class to all four MCP hints', () => {
    for (const effect of [...SIDE_EFFECTS, undefined]) {
      const { mcp } = sideEffectPolicy(effect);
      expect(Object.keys(mcp).sort()).toEqual(['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint']);
    }
  });

  it.each([
    [
      'read-only',
      { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
      { readOnly: true },
      false,
      'none',
    ],
    ['reversible-write', { readOnlyHint: false, destructiveHint: false }, {}, false, 'policy'],
    [
      'irreversible',
      { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
      { destructive: true },
      true,
      'confirm',
    ],
    ['administrative', { destructiveHint: true }, { destructive: true }, true, 'confirm'],
    ['code-execution', { destructiveHint: true }, { destructive: true }, true, 'confirm'],
    ['financial', { destructiveHint: true, openWorldHint: true }, { destructive: true }, true, 'confirm'],
    ['external-communication', { destructiveHint: true, openWorldHint: true }, { destructive: true }, true, 'confirm'],
  ] as const)('%s', (effect, hints, rap, confirm, gate) => {
    const policy = sideEffectPolicy(effect);
    expect(policy.mcp).toMatchObject(hints);
    expect(policy.rap).toEqual(rap);
    expect(policy.requiresConfirmation).toBe(confirm);
    expect(policy.gate).toBe(gate);
  });

  it('an unknown side effect fails closed and exports the most cautious hints', () => {
    expect(sideEffectPolicy(undefined)).toEqual({
      mcp: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      rap: {},
      requiresConfirmation: true,
      gate: 'fail-closed',
      needsIdempotencyKey: false,
    });
  });

  it('financial and external-communication need an idempotency key', () => {
    expect(sideEffectPolicy('financial').needsIdempotencyKey).toBe(true);
    expect(sideEffectPolicy('external-communication').needsIdempotencyKey).toBe(true);
    expect(sideEffectPolicy('irreversible').needsIdempotencyKey).toBe(false);
  });

  it('imports RAP annotations and MCP hints', () => {
    expect(sideEffectFromRap({ readOnly: true, destructive: true })).toBeUndefined();
    expect(sideEffectFromRap({ readOnly: true, destructive: false })).toBe('read-only');
    expect(sideEffectFromRap({ destructive: true })).toBe('irreversible');
    expect(sideEffectFromRap({ readOnly: 'true' })).toBeUndefined();
    expect(sideEffectFromRap(undefined)).toBeUndefined();
    expect(sideEffectFromMcp({ readOnlyHint: true })).toBe('read-only');
    expect(sideEffectFromMcp({ destructiveHint: false })).toBe('reversible-write');
    expect(sideEffectFromMcp({ openWorldHint: true })).toBeUndefined();
  });
});

describe('JSON Schema', () => {
  it('docs/contract.schema.json is the schema generated from the code', () => {
    const file = JSON.parse(
      readFileSync(new URL('../../docs/contract.schema.json', import.meta.url), 'utf8'),
    ) as unknown;
    expect(file).toEqual(contractJsonSchema());
  });
});
