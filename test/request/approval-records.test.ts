// Which calls need an approval (approvalNeed) and what an approver is shown (inputPreview): pure
// functions of the approval policy, over plain call data.

import { describe, expect, it } from 'vitest';
import type { Route } from '../../src/catalog/catalog.js';
import type { ToolContract } from '../../src/contract/contract.js';
import { createRedactor } from '../../src/legacy/index.js';
import { approvalNeed, inputPreview, PREVIEW_MAX_CHARS } from '../../src/request/policies/approval-records.js';

const code = { kind: 'code', tool: { name: 't' } } as unknown as Route;
const host = (requiresConfirmation: boolean) => ({ kind: 'host', tool: { name: 'h', requiresConfirmation } }) as unknown as Route;
const need = (contract: ToolContract, route: Route = code, confirm = true) => approvalNeed({ contract, route }, confirm);

describe('approvalNeed', () => {
  it('follows the contract: never, always, a side-effect list (an unknown side effect fails closed)', () => {
    expect(need({})).toBeUndefined();
    expect(need({ side_effect: 'financial', approval: { when: 'never' } })).toBeUndefined();
    expect(need({ side_effect: 'read-only', approval: { when: 'always' } })).toEqual({ policy: 'contract', approvers: ['operator'] });
    expect(need({ side_effect: 'financial', approval: { when: { side_effects: ['financial'] }, approvers: ['alice', 'alice', 'operator'], timeout_ms: 5000 } })).toEqual({ policy: 'contract', approvers: ['alice', 'operator'], timeoutMs: 5000 });
    expect(need({ side_effect: 'read-only', approval: { when: { side_effects: ['financial'] } } })).toBeUndefined();
    expect(need({ approval: { when: { side_effects: ['financial'] } } })).toEqual({ policy: 'contract', approvers: ['operator'] });
    expect(need({ approval: { when: 'always', approvers: [] } })).toEqual({ policy: 'contract', approvers: ['operator'] });
  });

  it('carries separation of duties and min_approvers (> 1) into the need; min_approvers 1 is the default and left out', () => {
    expect(need({ approval: { when: 'always', approvers: ['alice', 'bob'], separation_of_duties: true, min_approvers: 2 } })).toEqual({ policy: 'contract', approvers: ['alice', 'bob'], separationOfDuties: true, minApprovers: 2 });
    expect(need({ approval: { when: 'always', separation_of_duties: false, min_approvers: 1 } })).toEqual({ policy: 'contract', approvers: ['operator'] });
    // A requires_confirmation host tool with the flag off still waits when the manifest asks for two approvers.
    expect(need({ approval: { when: 'always', min_approvers: 2 } }, host(true), false)).toEqual({ policy: 'contract', approvers: ['operator'], minApprovers: 2 });
  });

  it('--confirm-external-actions: a host tool with requires_confirmation needs the operator, only while the flag is on', () => {
    expect(need({}, host(true), true)).toEqual({ policy: 'confirm-external-actions', approvers: ['operator'] });
    expect(need({}, host(true), false)).toBeUndefined();
    expect(need({}, host(false), true)).toBeUndefined();
    expect(need({ approval: { when: 'never' } }, host(true), true)).toEqual({ policy: 'confirm-external-actions', approvers: ['operator'] });
    expect(need({ side_effect: 'irreversible', approval: { when: 'always', approvers: ['alice'] } }, host(true), false)).toEqual({ policy: 'contract', approvers: ['alice'] });
    // requires_confirmation maps to approval `always`; with the flag off that mapping alone asks nobody.
    expect(need({ approval: { when: 'always' } }, host(true), false)).toBeUndefined();
    expect(need({ approval: { when: 'always' } }, host(true), true)).toEqual({ policy: 'confirm-external-actions', approvers: ['operator'] });
  });
});

describe('inputPreview', () => {
  it('masks secret-looking fields, known secret values and --redact matches, at any depth', () => {
    const redactor = createRedactor(['s3cr3t-value-42'], ['card-\\d{4}']);
    const preview = inputPreview({ user: 'bob', Password: 'pw-1', nested: [{ apiKey: 'k', authorization: 'Bearer x', token: { value: 'inner' } }], note: 'uses s3cr3t-value-42 and card-1234' }, redactor);
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
