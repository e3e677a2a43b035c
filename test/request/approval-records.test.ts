// Which calls need an approval (approvalNeed) and what an approver is shown (inputPreview): pure
// functions of the approval policy, over plain call data.

import { describe, expect, it } from 'vitest';
import type { Route } from '../../src/catalog/catalog.js';
import type { ToolContract } from '../../src/contract/contract.js';
import { createRedactor } from '../../src/host-tools/index.js';
import { createRequestKeys } from '../../src/breadcrumbs/request-keys.js';
import { canonicalJson } from '../../src/contract/canonical.js';
import {
  approvalNeed,
  decisionMac,
  inputPreview,
  operatorIdentity,
  operatorNameProblem,
  PREVIEW_MAX_CHARS,
} from '../../src/request/policies/approval-records.js';

const code = { kind: 'code', tool: { name: 't' } } as unknown as Route;
const host = (requiresConfirmation: boolean) =>
  ({ kind: 'host', tool: { name: 'h', requiresConfirmation } }) as unknown as Route;
const need = (contract: ToolContract, route: Route = code, confirm = true) =>
  approvalNeed({ contract, route }, confirm);

describe('approvalNeed', () => {
  it('follows the contract: never, always, a side-effect list (an unknown side effect fails closed)', () => {
    expect(need({})).toBeUndefined();
    expect(need({ side_effect: 'financial', approval: { when: 'never' } })).toBeUndefined();
    expect(need({ side_effect: 'read-only', approval: { when: 'always' } })).toEqual({
      policy: 'contract',
      approvers: ['operator'],
    });
    expect(
      need({
        side_effect: 'financial',
        approval: {
          when: { side_effects: ['financial'] },
          approvers: ['alice', 'alice', 'operator'],
          timeout_ms: 5000,
        },
      }),
    ).toEqual({ policy: 'contract', approvers: ['alice', 'operator'], timeoutMs: 5000 });
    expect(need({ side_effect: 'read-only', approval: { when: { side_effects: ['financial'] } } })).toBeUndefined();
    expect(need({ approval: { when: { side_effects: ['financial'] } } })).toEqual({
      policy: 'contract',
      approvers: ['operator'],
    });
    expect(need({ approval: { when: 'always', approvers: [] } })).toEqual({
      policy: 'contract',
      approvers: ['operator'],
    });
  });

  it('carries separation of duties and min_approvers (> 1) into the need; min_approvers 1 is the default and left out', () => {
    expect(
      need({ approval: { when: 'always', approvers: ['alice', 'bob'], separation_of_duties: true, min_approvers: 2 } }),
    ).toEqual({ policy: 'contract', approvers: ['alice', 'bob'], separationOfDuties: true, minApprovers: 2 });
    expect(need({ approval: { when: 'always', separation_of_duties: false, min_approvers: 1 } })).toEqual({
      policy: 'contract',
      approvers: ['operator'],
    });
    // A requires_confirmation host tool with the flag off still waits when the manifest asks for two approvers.
    expect(need({ approval: { when: 'always', min_approvers: 2 } }, host(true), false)).toEqual({
      policy: 'contract',
      approvers: ['operator'],
      minApprovers: 2,
    });
  });

  it('--confirm-external-actions: a host tool with requires_confirmation needs the operator, only while the flag is on', () => {
    expect(need({}, host(true), true)).toEqual({ policy: 'confirm-external-actions', approvers: ['operator'] });
    expect(need({}, host(true), false)).toBeUndefined();
    expect(need({}, host(false), true)).toBeUndefined();
    expect(need({ approval: { when: 'never' } }, host(true), true)).toEqual({
      policy: 'confirm-external-actions',
      approvers: ['operator'],
    });
    expect(
      need({ side_effect: 'irreversible', approval: { when: 'always', approvers: ['alice'] } }, host(true), false),
    ).toEqual({ policy: 'contract', approvers: ['alice'] });
    // requires_confirmation maps to approval `always`; with the flag off that mapping alone asks nobody.
    expect(need({ approval: { when: 'always' } }, host(true), false)).toBeUndefined();
    expect(need({ approval: { when: 'always' } }, host(true), true)).toEqual({
      policy: 'confirm-external-actions',
      approvers: ['operator'],
    });
  });
});

describe('inputPreview', () => {
  it('masks secret-looking fields, known secret values and --redact matches, at any depth', () => {
    const redactor = createRedactor(['s3cr3t-value-42'], ['card-\\d{4}']);
    const preview = inputPreview(
      {
        user: 'bob',
        Password: 'pw-1',
        nested: [{ apiKey: 'k', authorization: 'Bearer x', token: { value: 'inner' } }],
        note: 'uses s3cr3t-value-42 and card-1234',
      },
      redactor,
    );
    expect(JSON.parse(preview)).toEqual({
      user: 'bob',
      Password: '***REDACTED***',
      nested: [{ apiKey: '***REDACTED***', authorization: '***REDACTED***', token: '***REDACTED***' }],
      note: 'uses ***REDACTED*** and ***REDACTED***',
    });
  });

  it('caps the preview, never splitting a surrogate pair, and says how much was cut', () => {
    const redactor = createRedactor([]);
    const text = inputPreview({ s: 'a'.repeat(PREVIEW_MAX_CHARS) }, redactor);
    expect(text).toBe(`{"s":"${'a'.repeat(PREVIEW_MAX_CHARS - 6)}… (8 more characters)`);
    const emoji = inputPreview('😀'.repeat(20), redactor, 6);
    expect(emoji).toBe('"😀😀… (37 more characters)');
    expect(inputPreview(null, redactor)).toBe('null');
  });
});

describe('operator decisions', () => {
  const keys = createRequestKeys(Buffer.alloc(32, 3));
  const fields = {
    approvalId: 'ap-1',
    decision: 'approve' as const,
    inputHash: 'sha256:00',
    reason: 'ok',
    decidedAt: '2026-11-25T00:00:00.000Z',
  };

  it('an unnamed decision is sealed exactly as before --as existed (older decisions still verify); a name is sealed with it', () => {
    const before = keys.approvalMac(
      'decision',
      canonicalJson({
        approval_id: 'ap-1',
        decision: 'approve',
        input_hash: 'sha256:00',
        reason: 'ok',
        decided_at: '2026-11-25T00:00:00.000Z',
      }),
    );
    expect(decisionMac(keys, fields)).toBe(before);
    expect(decisionMac(keys, { ...fields, decidedBy: 'carol' })).not.toBe(before);
    expect(decisionMac(keys, { ...fields, decidedBy: 'carol' })).not.toBe(
      decisionMac(keys, { ...fields, decidedBy: 'dana' }),
    );
    expect(keys.approvalDecisionKey('ap-1', 'carol')).not.toBe(keys.approvalDecisionKey('ap-1'));
  });

  it('names the operator identity, and refuses names that are not plain', () => {
    expect(operatorIdentity(undefined)).toBe('operator');
    expect(operatorIdentity('carol')).toBe('operator:carol');
    expect(operatorNameProblem('carol.smith@ops')).toBeUndefined();
    expect(operatorNameProblem('')).toBe('--as must be 1-64 characters of A-Z a-z 0-9 . _ @ -, got ""');
    expect(operatorNameProblem('a:b')).toBe('--as must be 1-64 characters of A-Z a-z 0-9 . _ @ -, got "a:b"');
    expect(operatorNameProblem('x'.repeat(65))).toMatch(/^--as must be 1-64 characters/);
  });
});
