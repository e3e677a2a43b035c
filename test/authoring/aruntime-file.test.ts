// Tool files carrying an ARuntime description (`aruntime`): imported into the context's contract and
// limits (upstream and bare shapes), validated into the ToolDefinition, conflicts named by both paths.

import { describe, expect, it } from 'vitest';
import { parseToolFile } from '../../src/authoring/tool-files.js';
import { defaultConfig } from '../../src/config/index.js';
import { createSchemaValidator, validateToolDefinition } from '../../src/screen/index.js';

const config = defaultConfig();
const validator = createSchemaValidator();

const CONTEXT = {
  name: 'notify',
  description: 'Sends a notice',
  version: '1.2.0',
  code: {
    language: 'typescript',
    source: 'export async function execute(input: { to: string }) { return { sent: input.to }; }',
  },
  input_schema: { type: 'object', properties: { to: { type: 'string', description: 'who' } }, required: ['to'] },
  output_schema: { type: 'object', properties: { sent: { type: 'string' } }, required: ['sent'] },
  examples: [{ description: 'one', input: { to: 'a' }, output: { sent: 'a' } }],
};

const ARUNTIME = {
  toolId: 'notify',
  owner: 'ops',
  sideEffectClass: 'external communication',
  idempotency: { idempotent: false, keyRequired: true },
  approvalTriggers: { on: ['external communication'], approvers: ['operator'] },
  timeoutSeconds: 2.5,
  rateLimits: { perAgent: { limit: 5, windowSeconds: 60 } },
  deprecation: { replacement: 'notify-v2' },
  compensation: 'none',
};

const CONTRACT = {
  owner: 'ops',
  side_effect: 'external-communication',
  idempotent: false,
  approval: { when: { side_effects: ['external-communication'] }, approvers: ['operator'] },
  rate_limits: { per_agent: { limit: 5, window_ms: 60_000 } },
  deprecation: { replacement: 'notify-v2' },
};

function parse(doc: unknown) {
  return parseToolFile('tools/notify.json', JSON.stringify(doc), 'workspace:tools');
}

function contextOf(doc: unknown): Record<string, unknown> {
  const file = parse(doc);
  if (!file.ok) throw new Error(`expected the file to parse: ${file.error}`);
  return file.breadcrumb.context as Record<string, unknown>;
}

function errorOf(doc: unknown): string {
  const file = parse(doc);
  if (file.ok) throw new Error('expected the file to be refused');
  return file.error;
}

describe('tool files with an ARuntime description', () => {
  it('upstream shape: the description fills contract and limits.timeout_ms, and the definition carries it', () => {
    const context = contextOf({ schema_name: 'tool.code.v1', context: CONTEXT, aruntime: ARUNTIME });
    expect(context['contract']).toEqual(CONTRACT);
    expect(context['limits']).toEqual({ timeout_ms: 2500 });
    expect(context).not.toHaveProperty('aruntime');
    const checked = validateToolDefinition(context, { origin: 'bootstrap', config, validator });
    expect(checked.errors).toEqual([]);
    expect(checked.tool?.contract).toEqual(CONTRACT);
    expect(checked.tool?.timeoutMs).toBe(2500);
  });

  it('bare shape: `aruntime` among the context fields is taken out of the stored context', () => {
    const context = contextOf({ ...CONTEXT, aruntime: ARUNTIME });
    expect(context).not.toHaveProperty('aruntime');
    expect(context['contract']).toEqual(CONTRACT);
  });

  it('fills absent definition fields and agrees with equal ones', () => {
    const { version: _v, input_schema: _i, ...rest } = CONTEXT;
    const context = contextOf({
      context: { ...rest, limits: { memory_mb: 64 }, contract: { owner: 'ops', data_classification: 'internal' } },
      aruntime: {
        ...ARUNTIME,
        version: '1.2.0',
        description: CONTEXT.description,
        inputSchema: CONTEXT.input_schema,
        egressPolicy: { allow: ['hooks.example.com'] },
        authenticationRef: 'HOOK_TOKEN',
      },
    });
    expect(context).toMatchObject({
      version: '1.2.0',
      input_schema: CONTEXT.input_schema,
      limits: { memory_mb: 64, timeout_ms: 2500 },
      permissions: { net: ['hooks.example.com'] },
      required_secrets: ['HOOK_TOKEN'],
      contract: { ...CONTRACT, data_classification: 'internal' },
    });
  });

  it.each([
    [
      { contract: { side_effect: 'irreversible' } },
      {},
      'aruntime.sideEffectClass ("external-communication") conflicts with context.contract.side_effect ("irreversible")',
    ],
    [
      { limits: { timeout_ms: 2000 } },
      {},
      'aruntime.timeoutSeconds (2.5) conflicts with context.limits.timeout_ms (2000)',
    ],
    [{}, { toolId: 'other' }, 'aruntime.toolId ("other") conflicts with context.name ("notify")'],
    [{}, { version: '2.0.0' }, 'aruntime.version ("2.0.0") conflicts with context.version ("1.2.0")'],
    [
      { permissions: { net: false } },
      { egressPolicy: { allow: ['b.example.com'] } },
      'aruntime.egressPolicy.allow (["b.example.com"]) conflicts with context.permissions.net (false)',
    ],
    [
      { permissions: { net: ['a.example.com'] } },
      { egressPolicy: { allow: ['b.example.com'] } },
      'aruntime.egressPolicy.allow (["b.example.com"]) conflicts with context.permissions.net (["a.example.com"])',
    ],
    [
      { contract: { owner: 'someone', idempotent: true } },
      {},
      'aruntime.idempotency (false) conflicts with context.contract.idempotent (true); aruntime.owner ("ops") conflicts with context.contract.owner ("someone")',
    ],
    [
      {},
      { sideEffectClass: 'destructive' },
      /^aruntime\.sideEffectClass: unknown side-effect class "destructive" \(known: /,
    ],
    [
      {},
      { timeoutSeconds: -1, rateLimits: { budget: { usd: 1 } } },
      'aruntime.timeoutSeconds: must be a number of seconds >= 0, got -1',
    ],
    [
      {},
      { rateLimits: { budget: { usd: 1 } } },
      'aruntime.rateLimits.budget: a code tool carries no budget (only Runloop host tools do); remove it',
    ],
  ])('context %j with aruntime %j is refused: %s', (contextOver, aruntimeOver, message) => {
    const error = errorOf({ context: { ...CONTEXT, ...contextOver }, aruntime: { ...ARUNTIME, ...aruntimeOver } });
    if (typeof message === 'string') expect(error).toBe(message);
    else expect(error).toMatch(message);
  });

  it('egressPolicy "none" agrees with permissions.net false', () => {
    expect(
      contextOf({
        context: { ...CONTEXT, permissions: { net: false } },
        aruntime: { ...ARUNTIME, egressPolicy: 'none' },
      })['permissions'],
    ).toEqual({ net: false });
  });

  it('refuses an ARuntime description inside an upstream context', () => {
    expect(errorOf({ context: { ...CONTEXT, aruntime: ARUNTIME } })).toBe(
      'context.aruntime: the ARuntime description belongs at the top level of the file, next to context',
    );
  });
});
