// A tool file's `aruntime` object (an ARuntime tool description, src/contract/aruntime.ts) merged
// into the tool.code.v1 context the file defines.
//
// The description lives at the file's top level (next to `context`, or among the fields of a bare
// context file). It fills what the context leaves out: `contract` fields, `limits.timeout_ms` (from
// `timeoutSeconds`), `version`, `description`, `input_schema`, `output_schema`, `permissions.net`
// (from `egressPolicy`) and `required_secrets` (from `authenticationRef`). A value both give must be
// equal: a difference is an error naming both paths. `toolId` must equal `context.name`. A Runloop
// `budget` (`rateLimits.budget`) is refused: code tools carry none, and a budget nobody enforces
// would pass for one that is.

import { fromARuntime } from '../contract/aruntime.js';
import { canonicalJson } from '../screen/index.js';

// Contract field -> where the ARuntime description states it.
const CONTRACT_SOURCE: Record<string, string> = {
  side_effect: 'sideEffectClass',
  idempotent: 'idempotency',
  approval: 'approvalTriggers',
  rate_limits: 'rateLimits',
  retry: 'retryPolicy',
  data_classification: 'dataClassification',
  owner: 'owner',
  deprecation: 'deprecation',
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const same = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);
const show = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
};

/** The context with the ARuntime description merged in, or the first problems as one line. */
export function mergeARuntime(
  context: Record<string, unknown>,
  raw: unknown,
): { ok: true; context: Record<string, unknown> } | { ok: false; error: string } {
  const imported = fromARuntime(raw, 'aruntime');
  if (!imported.ok)
    return { ok: false, error: imported.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ') };
  const { facts, contract } = imported;
  const conflicts: string[] = [];
  const out: Record<string, unknown> = { ...context };
  const conflict = (from: string, fromValue: unknown, to: string, toValue: unknown): void =>
    void conflicts.push(`aruntime.${from} (${show(fromValue)}) conflicts with context.${to} (${show(toValue)})`);

  if (facts.budget !== undefined)
    return {
      ok: false,
      error: 'aruntime.rateLimits.budget: a code tool carries no budget (only Runloop host tools do); remove it',
    };
  if (facts.name !== undefined && facts.name !== context['name'])
    conflict('toolId', facts.name, 'name', context['name']);
  const fill = (from: string, value: unknown, to: string): void => {
    if (value === undefined) return;
    if (out[to] === undefined) out[to] = value;
    else if (!same(out[to], value)) conflict(from, value, to, out[to]);
  };
  fill('version', facts.version, 'version');
  fill('description', facts.description, 'description');
  fill('inputSchema', facts.inputSchema, 'input_schema');
  fill('outputSchema', facts.outputSchema, 'output_schema');
  fill('authenticationRef', facts.secrets, 'required_secrets');

  if (facts.net !== undefined) {
    const permissions = out['permissions'];
    if (permissions === undefined) out['permissions'] = { net: facts.net };
    else if (!isObject(permissions)) conflict('egressPolicy.allow', facts.net, 'permissions', permissions);
    else if (permissions['net'] === undefined) out['permissions'] = { ...permissions, net: facts.net };
    // `net: false` is no network, as `egressPolicy: "none"` / `{allow: []}`.
    else if (!same(permissions['net'] === false ? [] : permissions['net'], facts.net))
      conflict('egressPolicy.allow', facts.net, 'permissions.net', permissions['net']);
  }
  if (facts.timeoutMs !== undefined) {
    const limits = out['limits'];
    if (limits === undefined) out['limits'] = { timeout_ms: facts.timeoutMs };
    else if (!isObject(limits)) conflict('timeoutSeconds', facts.timeoutMs / 1000, 'limits', limits);
    else if (limits['timeout_ms'] === undefined) out['limits'] = { ...limits, timeout_ms: facts.timeoutMs };
    else if (limits['timeout_ms'] !== facts.timeoutMs)
      conflict('timeoutSeconds', facts.timeoutMs / 1000, 'limits.timeout_ms', limits['timeout_ms']);
  }

  const given = out['contract'];
  if (given === undefined) out['contract'] = contract;
  else if (isObject(given)) {
    for (const [key, value] of Object.entries(contract)) {
      if (given[key] !== undefined && !same(given[key], value))
        conflict(CONTRACT_SOURCE[key] ?? key, value, `contract.${key}`, given[key]);
    }
    out['contract'] = { ...contract, ...given };
  }
  return conflicts.length > 0 ? { ok: false, error: conflicts.join('; ') } : { ok: true, context: out };
}
