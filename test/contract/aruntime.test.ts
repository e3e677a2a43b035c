// ARuntime tool descriptions <-> our contract and facts: the exact export, the round trip of every
// field we carry, both spellings of the side-effect classes, and path-precise import errors.

import { describe, expect, it } from 'vitest';
import { ARUNTIME_SIDE_EFFECTS, fromARuntime, toARuntime, type ToolFacts } from '../../src/contract/aruntime.js';
import { SIDE_EFFECTS, type ToolContract } from '../../src/contract/contract.js';

const FACTS: ToolFacts = {
  name: 'pay-invoice',
  version: '2.1.0',
  description: 'Pays an invoice',
  inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  outputSchema: { type: 'object' },
  timeoutMs: 1500,
  net: ['api.pay.example'],
  secrets: ['PAY_KEY'],
  tags: ['payments'],
  budget: { tokens: 100, usd: 0.25 },
};

const CONTRACT: ToolContract = {
  side_effect: 'financial',
  idempotent: false,
  approval: {
    when: { side_effects: ['financial', 'reversible-write'] },
    approvers: ['operator', 'agent-9'],
    timeout_ms: 60_500,
  },
  rate_limits: { per_tool: { limit: 10, window_ms: 1000 }, per_agent: { limit: 2, window_ms: 250, burst: 1 } },
  retry: { max_attempts: 3, backoff_ms: 200, on: ['dependency.unavailable', 'rate.exceeded'] },
  data_classification: 'confidential',
  owner: 'payments-team',
  deprecation: {
    deprecated_at: '2026-01-01T00:00:00Z',
    removal_at: '2026-06-01T00:00:00Z',
    replacement: 'pay-invoice@3',
  },
};

function issuesOf(value: unknown): Array<{ path: string; message: string }> {
  const result = fromARuntime(value);
  if (result.ok) throw new Error('expected the description to be refused');
  return result.issues;
}

describe('toARuntime', () => {
  it('writes every field we carry in ARuntime spelling and units', () => {
    expect(toARuntime(FACTS, CONTRACT)).toEqual({
      toolId: 'pay-invoice',
      version: '2.1.0',
      description: 'Pays an invoice',
      owner: 'payments-team',
      inputSchema: FACTS.inputSchema,
      outputSchema: { type: 'object' },
      dataClassification: 'confidential',
      egressPolicy: { allow: ['api.pay.example'] },
      authenticationRef: ['PAY_KEY'],
      permissionClass: 'write',
      approvalTriggers: {
        on: ['financial/high-impact', 'reversible write'],
        approvers: ['operator', 'agent-9'],
        timeoutSeconds: 60.5,
      },
      sideEffectClass: 'financial/high-impact',
      idempotency: { idempotent: false, keyRequired: true },
      timeoutSeconds: 1.5,
      retryPolicy: { maxAttempts: 3, backoffSeconds: 0.2, retryOn: ['dependency.unavailable', 'rate.exceeded'] },
      rateLimits: {
        perTool: { limit: 10, windowSeconds: 1 },
        perAgent: { limit: 2, windowSeconds: 0.25, burst: 1 },
        budget: { tokens: 100, usd: 0.25 },
      },
      observability: { tags: ['payments'] },
      deprecation: {
        deprecatedAt: '2026-01-01T00:00:00Z',
        removalAt: '2026-06-01T00:00:00Z',
        replacement: 'pay-invoice@3',
      },
    });
  });

  it('an empty contract exports no side-effect class (unknown), only the derived idempotency', () => {
    expect(toARuntime({ name: 't' }, {})).toEqual({ toolId: 't', idempotency: { keyRequired: false } });
  });
});

describe('round trip ours → ARuntime → ours', () => {
  it('keeps every field we carry', () => {
    const back = fromARuntime(JSON.parse(JSON.stringify(toARuntime(FACTS, CONTRACT))));
    expect(back).toEqual({
      ok: true,
      facts: FACTS,
      contract: CONTRACT,
      ignored: ['aruntime.idempotency.keyRequired', 'aruntime.permissionClass'],
    });
  });

  it.each([
    [{ name: 'a' }, {}],
    [
      { name: 'a', net: [], secrets: [] },
      { side_effect: 'read-only', approval: { when: 'never' } },
    ],
    [
      { name: 'a', timeoutMs: 1 },
      { side_effect: 'code-execution', approval: { when: 'always' }, idempotent: true },
    ],
    [
      { name: 'a' },
      {
        side_effect: 'financial',
        approval: { when: 'always', approvers: ['alice', 'bob'], separation_of_duties: true, min_approvers: 2 },
      },
    ],
    ...SIDE_EFFECTS.map((effect) => [{ name: 'a' }, { side_effect: effect }] as const),
  ] as Array<[ToolFacts, ToolContract]>)('%j %j', (facts, contract) => {
    const back = fromARuntime(toARuntime(facts, contract));
    expect(back.ok && back.facts).toEqual(facts);
    expect(back.ok && back.contract).toEqual(contract);
  });
});

describe('fromARuntime', () => {
  it('accepts both spellings of every side-effect class, case-insensitively', () => {
    for (const effect of SIDE_EFFECTS) {
      for (const name of [effect, ARUNTIME_SIDE_EFFECTS[effect], ARUNTIME_SIDE_EFFECTS[effect].toUpperCase()]) {
        const result = fromARuntime({ toolId: 't', sideEffectClass: name });
        expect(result.ok && result.contract).toEqual({ side_effect: effect });
      }
    }
    expect(fromARuntime({ sideEffectClass: 'high-impact' })).toMatchObject({
      ok: true,
      contract: { side_effect: 'financial' },
    });
  });

  it('accepts the short forms of approvalTriggers, idempotency, egressPolicy and authenticationRef', () => {
    expect(
      fromARuntime({ approvalTriggers: 'always', idempotency: true, egressPolicy: 'none', authenticationRef: 'KEY' }),
    ).toEqual({
      ok: true,
      facts: { net: [], secrets: ['KEY'] },
      contract: { approval: { when: 'always' }, idempotent: true },
      ignored: [],
    });
    expect(fromARuntime({ approvalTriggers: [] })).toMatchObject({
      ok: true,
      contract: { approval: { when: 'never' } },
    });
    expect(fromARuntime({ approvalTriggers: ['external communication'] })).toMatchObject({
      ok: true,
      contract: { approval: { when: { side_effects: ['external-communication'] } } },
    });
  });

  it('lists the fields it does not carry', () => {
    const result = fromARuntime({
      toolId: 't',
      compensation: { tool: 'undo' },
      concurrency: 2,
      errors: [],
      auditFields: ['who'],
      observability: { tags: [], traces: true },
    });
    expect(result).toEqual({
      ok: true,
      facts: { name: 't', tags: [] },
      contract: {},
      ignored: [
        'aruntime.observability.traces',
        'aruntime.compensation',
        'aruntime.concurrency',
        'aruntime.errors',
        'aruntime.auditFields',
      ],
    });
  });

  it.each([
    [
      { sideEffectClass: 'destructive' },
      'aruntime.sideEffectClass',
      'unknown side-effect class "destructive" (known: read-only, reversible write, irreversible, financial/high-impact, external communication, code execution, administrative; or read-only, reversible-write, irreversible, financial, external-communication, code-execution, administrative)',
    ],
    [{ sideEffectClass: 'unknown' }, 'aruntime.sideEffectClass', /^unknown side-effect class "unknown" \(known: /],
    [{ toolID: 't' }, 'aruntime', /^unknown ARuntime field\(s\) "toolID" \(known: toolId, version, /],
    [{ toolId: '' }, 'aruntime.toolId', 'must be a non-empty string, got ""'],
    [{ timeoutSeconds: 0.0005 }, 'aruntime.timeoutSeconds', 'must be a whole number of milliseconds, got 0.0005 s'],
    [{ timeoutSeconds: 0 }, 'aruntime.timeoutSeconds', 'must be more than 0 seconds, got 0'],
    [{ timeoutSeconds: '30' }, 'aruntime.timeoutSeconds', 'must be a number of seconds >= 0, got "30"'],
    [
      { approvalTriggers: 'sometimes' },
      'aruntime.approvalTriggers',
      'must be "never", "always" or an array of side-effect classes, got "sometimes"',
    ],
    [
      { approvalTriggers: { on: ['financial', 'paid'] } },
      'aruntime.approvalTriggers.on[1]',
      /^unknown side-effect class "paid"/,
    ],
    [
      { approvalTriggers: { on: 'always', who: ['x'] } },
      'aruntime.approvalTriggers',
      'unknown field(s) "who" (known: on, approvers, timeoutSeconds, separationOfDuties, minApprovers)',
    ],
    [
      { approvalTriggers: { on: 'always', minApprovers: 0 } },
      'aruntime.approvalTriggers.minApprovers',
      'Too small: expected number to be >=1',
    ],
    [
      { approvalTriggers: { on: 'always', separationOfDuties: 'yes' } },
      'aruntime.approvalTriggers.separationOfDuties',
      'Invalid input: expected boolean, received string',
    ],
    [{ idempotency: 'yes' }, 'aruntime.idempotency', 'must be an object, got "yes"'],
    [{ idempotency: { idempotent: 'yes' } }, 'aruntime.idempotency.idempotent', 'must be a boolean, got "yes"'],
    [
      { egressPolicy: { allow: 'api.example.com' } },
      'aruntime.egressPolicy.allow',
      'must be an array of strings, got "api.example.com"',
    ],
    [
      { dataClassification: 'secret' },
      'aruntime.dataClassification',
      /^Invalid option: expected one of "public"\|"internal"\|"confidential"\|"restricted"$/,
    ],
    [
      { rateLimits: { perTool: { limit: 0, windowSeconds: 1 } } },
      'aruntime.rateLimits.perTool.limit',
      'Too small: expected number to be >=1',
    ],
    [
      { rateLimits: { perAgent: { limit: 1, windowMs: 1000 } } },
      'aruntime.rateLimits.perAgent',
      'unknown field(s) "windowMs" (known: limit, windowSeconds, burst)',
    ],
    [{ rateLimits: { budget: { usd: -1 } } }, 'aruntime.rateLimits.budget.usd', 'must be a number >= 0, got -1'],
    [{ retryPolicy: { maxAttempts: 50 } }, 'aruntime.retryPolicy.maxAttempts', 'Too big: expected number to be <=10'],
    [
      { retryPolicy: { maxAttempts: 2, retryOn: ['tool.error'] } },
      'aruntime.retryPolicy.retryOn[0]',
      /^Invalid option: expected one of "sandbox.crashed"/,
    ],
    [
      { deprecation: { deprecatedAt: '2026-06-01T00:00:00Z', removalAt: '2026-01-01T00:00:00Z' } },
      'aruntime.deprecation.removalAt',
      'removal_at (2026-01-01T00:00:00Z) is before deprecated_at (2026-06-01T00:00:00Z)',
    ],
    ['read-only', 'aruntime', 'an ARuntime tool description must be an object, got "read-only"'],
  ])('%j is refused at %s', (value, path, message) => {
    const [issue] = issuesOf(value);
    expect(issue?.path).toBe(path);
    if (typeof message === 'string') expect(issue?.message).toBe(message);
    else expect(issue?.message).toMatch(message);
  });

  it('reports every problem, under the base it is given', () => {
    const result = fromARuntime({ sideEffectClass: 'x', idempotency: { idempotent: 1 } }, 'tools[2].aruntime');
    expect(!result.ok && result.issues.map((i) => i.path)).toEqual([
      'tools[2].aruntime.sideEffectClass',
      'tools[2].aruntime.idempotency.idempotent',
    ]);
  });
});
