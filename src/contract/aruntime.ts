// ARuntime tool descriptions <-> our contract and tool facts (docs/tool-contracts.md "ARuntime descriptions").
//
// ARuntime publishes a field set, not a schema, so the shape here is ours, in ARuntime's camelCase:
// durations in seconds (millisecond precision), side-effect classes in ARuntime's spelling on export
// (`reversible write`, `financial/high-impact`, ...; both spellings accepted on import). Carried both
// ways: toolId, version, description, owner, inputSchema, outputSchema, dataClassification,
// egressPolicy ({allow: hosts}), authenticationRef (secret names), approvalTriggers, sideEffectClass,
// idempotency.idempotent, timeoutSeconds, retryPolicy, rateLimits (+ Runloop budget), observability.tags,
// deprecation. Derived on export and ignored on import (listed in `ignored`): permissionClass,
// idempotency.keyRequired. Not carried (accepted on import, listed in `ignored`): compensation,
// concurrency, errors, auditFields and other observability keys. Any other field, or a value we cannot
// map, is an error naming its path; nothing is guessed (an absent sideEffectClass stays unknown).

import {
  parseContract,
  SIDE_EFFECTS,
  sideEffectPolicy,
  type ContractIssue,
  type SideEffect,
  type ToolContract,
} from './contract.js';

/** Every field of an ARuntime tool description. */
export const ARUNTIME_FIELDS = [
  'toolId',
  'version',
  'description',
  'owner',
  'inputSchema',
  'outputSchema',
  'dataClassification',
  'egressPolicy',
  'authenticationRef',
  'permissionClass',
  'approvalTriggers',
  'sideEffectClass',
  'idempotency',
  'compensation',
  'timeoutSeconds',
  'retryPolicy',
  'concurrency',
  'rateLimits',
  'errors',
  'observability',
  'auditFields',
  'deprecation',
] as const;

/** ARuntime's spelling of each side-effect class. */
export const ARUNTIME_SIDE_EFFECTS: Readonly<Record<SideEffect, string>> = {
  'read-only': 'read-only',
  'reversible-write': 'reversible write',
  irreversible: 'irreversible',
  financial: 'financial/high-impact',
  'external-communication': 'external communication',
  'code-execution': 'code execution',
  administrative: 'administrative',
};

const CLASS_BY_NAME = new Map<string, SideEffect>([
  ...SIDE_EFFECTS.map((effect) => [effect, effect] as const),
  ...SIDE_EFFECTS.map((effect) => [ARUNTIME_SIDE_EFFECTS[effect], effect] as const),
  ['financial', 'financial'],
  ['high-impact', 'financial'],
]);

/** What we carry of a tool besides its contract (all optional but the name). */
export interface ToolFacts {
  name: string;
  version?: string;
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  timeoutMs?: number;
  /** Hosts the tool may reach ([] = none). */
  net?: string[];
  /** Secrets resolved for each call. */
  secrets?: string[];
  tags?: string[];
  budget?: { tokens?: number; usd?: number };
}

/** An ARuntime tool description (our shape of ARuntime's field set). */
export type ARuntimeTool = { toolId: string } & Partial<
  Record<Exclude<(typeof ARUNTIME_FIELDS)[number], 'toolId'>, unknown>
>;

const seconds = (ms: number): number => ms / 1000;
const limitOut = (l: { limit: number; window_ms: number; burst?: number }) => ({
  limit: l.limit,
  windowSeconds: seconds(l.window_ms),
  ...(l.burst !== undefined ? { burst: l.burst } : {}),
});
const PERMISSION_CLASS: Record<SideEffect, string> = {
  'read-only': 'read',
  'reversible-write': 'write',
  irreversible: 'write',
  financial: 'write',
  'external-communication': 'write',
  'code-execution': 'execute',
  administrative: 'admin',
};

/** Our tool as an ARuntime description. */
export function toARuntime(facts: ToolFacts, contract: ToolContract): ARuntimeTool {
  const c = contract;
  const when = c.approval?.when;
  const policy = sideEffectPolicy(c.side_effect, c.idempotent === undefined ? {} : { idempotent: c.idempotent });
  const rateLimits = {
    ...(c.rate_limits?.per_tool ? { perTool: limitOut(c.rate_limits.per_tool) } : {}),
    ...(c.rate_limits?.per_agent ? { perAgent: limitOut(c.rate_limits.per_agent) } : {}),
    ...(facts.budget ? { budget: facts.budget } : {}),
  };
  return {
    toolId: facts.name,
    ...(facts.version !== undefined ? { version: facts.version } : {}),
    ...(facts.description !== undefined ? { description: facts.description } : {}),
    ...(c.owner !== undefined ? { owner: c.owner } : {}),
    ...(facts.inputSchema !== undefined ? { inputSchema: facts.inputSchema } : {}),
    ...(facts.outputSchema !== undefined ? { outputSchema: facts.outputSchema } : {}),
    ...(c.data_classification !== undefined ? { dataClassification: c.data_classification } : {}),
    ...(facts.net !== undefined ? { egressPolicy: { allow: facts.net } } : {}),
    ...(facts.secrets !== undefined ? { authenticationRef: facts.secrets } : {}),
    ...(c.side_effect !== undefined ? { permissionClass: PERMISSION_CLASS[c.side_effect] } : {}),
    ...(c.approval
      ? {
          approvalTriggers: {
            on:
              typeof when === 'string'
                ? when
                : (when?.side_effects ?? []).map((effect) => ARUNTIME_SIDE_EFFECTS[effect]),
            ...(c.approval.approvers !== undefined ? { approvers: c.approval.approvers } : {}),
            ...(c.approval.timeout_ms !== undefined ? { timeoutSeconds: seconds(c.approval.timeout_ms) } : {}),
            ...(c.approval.separation_of_duties !== undefined
              ? { separationOfDuties: c.approval.separation_of_duties }
              : {}),
            ...(c.approval.min_approvers !== undefined ? { minApprovers: c.approval.min_approvers } : {}),
          },
        }
      : {}),
    ...(c.side_effect !== undefined ? { sideEffectClass: ARUNTIME_SIDE_EFFECTS[c.side_effect] } : {}),
    idempotency: {
      ...(c.idempotent !== undefined ? { idempotent: c.idempotent } : {}),
      keyRequired: policy.needsIdempotencyKey,
    },
    ...(facts.timeoutMs !== undefined ? { timeoutSeconds: seconds(facts.timeoutMs) } : {}),
    ...(c.retry
      ? {
          retryPolicy: {
            maxAttempts: c.retry.max_attempts,
            ...(c.retry.backoff_ms !== undefined ? { backoffSeconds: seconds(c.retry.backoff_ms) } : {}),
            ...(c.retry.on !== undefined ? { retryOn: c.retry.on } : {}),
          },
        }
      : {}),
    ...(Object.keys(rateLimits).length > 0 ? { rateLimits } : {}),
    ...(facts.tags !== undefined ? { observability: { tags: facts.tags } } : {}),
    ...(c.deprecation
      ? {
          deprecation: {
            ...(c.deprecation.deprecated_at !== undefined ? { deprecatedAt: c.deprecation.deprecated_at } : {}),
            ...(c.deprecation.removal_at !== undefined ? { removalAt: c.deprecation.removal_at } : {}),
            ...(c.deprecation.replacement !== undefined ? { replacement: c.deprecation.replacement } : {}),
          },
        }
      : {}),
  };
}

/** The outcome of importing an ARuntime description: our facts and contract, or every problem by path. */
export type ARuntimeImport =
  | { ok: true; facts: Partial<ToolFacts>; contract: ToolContract; ignored: string[] }
  | { ok: false; issues: ContractIssue[] };

// Contract field -> ARuntime field, to report parseContract's issues at the path the author wrote.
const RENAME: Record<string, string> = {
  side_effect: 'sideEffectClass',
  idempotent: 'idempotency',
  approval: 'approvalTriggers',
  when: 'on',
  timeout_ms: 'timeoutSeconds',
  rate_limits: 'rateLimits',
  per_tool: 'perTool',
  per_agent: 'perAgent',
  window_ms: 'windowSeconds',
  retry: 'retryPolicy',
  max_attempts: 'maxAttempts',
  backoff_ms: 'backoffSeconds',
  on: 'retryOn',
  data_classification: 'dataClassification',
  deprecated_at: 'deprecatedAt',
  removal_at: 'removalAt',
  separation_of_duties: 'separationOfDuties',
  min_approvers: 'minApprovers',
};

/** The ARuntime path of a contract issue pointer (`/rate_limits/per_tool/window_ms` -> `rateLimits.perTool.windowSeconds`). */
function aruntimePath(base: string, pointer: string): string {
  return pointer
    .split('/')
    .filter((part) => part !== '' && part !== 'side_effects')
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : `${out}.${RENAME[part] ?? part}`), base);
}

/** Reads an ARuntime description (`base` names it in messages, e.g. `aruntime`). Never throws. */
export function fromARuntime(value: unknown, base = 'aruntime'): ARuntimeImport {
  const issues: ContractIssue[] = [];
  const fail = (path: string, message: string): undefined => void issues.push({ path: `${base}${path}`, message });
  const show = (v: unknown): string => {
    const text = JSON.stringify(v) ?? String(v);
    return text.length > 80 ? `${text.slice(0, 79)}…` : text;
  };
  if (!isObject(value))
    return {
      ok: false,
      issues: [{ path: base, message: `an ARuntime tool description must be an object, got ${show(value)}` }],
    };
  const unknown = Object.keys(value).filter((key) => !(ARUNTIME_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0)
    fail(
      '',
      `unknown ARuntime field(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')} (known: ${ARUNTIME_FIELDS.join(', ')})`,
    );

  const str = (path: string, v: unknown): string | undefined =>
    typeof v === 'string' && v !== '' ? v : fail(path, `must be a non-empty string, got ${show(v)}`);
  const strs = (path: string, v: unknown): string[] | undefined =>
    Array.isArray(v) && v.every((item) => typeof item === 'string')
      ? [...v]
      : fail(path, `must be an array of strings, got ${show(v)}`);
  const ms = (path: string, v: unknown): number | undefined => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      return fail(path, `must be a number of seconds >= 0, got ${show(v)}`);
    const out = Math.round(v * 1000);
    return Math.abs(out - v * 1000) > 1e-6
      ? fail(path, `must be a whole number of milliseconds, got ${show(v)} s`)
      : out;
  };
  const fields = (path: string, v: unknown, allowed: readonly string[]): Record<string, unknown> | undefined => {
    if (!isObject(v)) return fail(path, `must be an object, got ${show(v)}`);
    const extra = Object.keys(v).filter((key) => !allowed.includes(key));
    if (extra.length > 0)
      fail(path, `unknown field(s) ${extra.map((k) => JSON.stringify(k)).join(', ')} (known: ${allowed.join(', ')})`);
    return v;
  };
  const sideEffect = (path: string, v: unknown): SideEffect | undefined => {
    const known = typeof v === 'string' ? CLASS_BY_NAME.get(v.trim().toLowerCase()) : undefined;
    return (
      known ??
      fail(
        path,
        `unknown side-effect class ${show(v)} (known: ${SIDE_EFFECTS.map((e) => ARUNTIME_SIDE_EFFECTS[e]).join(', ')}; or ${SIDE_EFFECTS.join(', ')})`,
      )
    );
  };

  const facts: Partial<ToolFacts> = {};
  const contract: Record<string, unknown> = {};
  const ignored: string[] = [];
  const v = value;
  if (v.toolId !== undefined) facts.name = str('.toolId', v.toolId);
  if (v.version !== undefined) facts.version = str('.version', v.version);
  if (v.description !== undefined)
    facts.description =
      typeof v.description === 'string'
        ? v.description
        : fail('.description', `must be a string, got ${show(v.description)}`);
  if (v.owner !== undefined) contract.owner = str('.owner', v.owner);
  for (const key of ['inputSchema', 'outputSchema'] as const) {
    if (v[key] !== undefined)
      facts[key] = isObject(v[key]) ? v[key] : fail(`.${key}`, `must be a JSON Schema object, got ${show(v[key])}`);
  }
  if (v.dataClassification !== undefined) contract.data_classification = v.dataClassification;
  if (v.egressPolicy !== undefined) {
    if (v.egressPolicy === 'none') facts.net = [];
    else {
      const egress = fields('.egressPolicy', v.egressPolicy, ['allow']);
      if (egress) facts.net = strs('.egressPolicy.allow', egress.allow);
    }
  }
  if (v.authenticationRef !== undefined)
    facts.secrets =
      typeof v.authenticationRef === 'string' ? [v.authenticationRef] : strs('.authenticationRef', v.authenticationRef);
  if (v.sideEffectClass !== undefined) contract.side_effect = sideEffect('.sideEffectClass', v.sideEffectClass);
  if (v.idempotency !== undefined) {
    if (typeof v.idempotency === 'boolean') contract.idempotent = v.idempotency;
    else {
      const idem = fields('.idempotency', v.idempotency, ['idempotent', 'keyRequired']);
      if (idem?.idempotent !== undefined)
        contract.idempotent =
          typeof idem.idempotent === 'boolean'
            ? idem.idempotent
            : fail('.idempotency.idempotent', `must be a boolean, got ${show(idem.idempotent)}`);
      if (idem?.keyRequired !== undefined) ignored.push(`${base}.idempotency.keyRequired`);
    }
  }
  if (v.approvalTriggers !== undefined)
    contract.approval = approvalFrom(v.approvalTriggers, { fail, fields, ms, strs, sideEffect, show });
  if (v.timeoutSeconds !== undefined) {
    const timeout = ms('.timeoutSeconds', v.timeoutSeconds);
    if (timeout === 0) fail('.timeoutSeconds', 'must be more than 0 seconds, got 0');
    else if (timeout !== undefined) facts.timeoutMs = timeout;
  }
  if (v.retryPolicy !== undefined) {
    const retry = fields('.retryPolicy', v.retryPolicy, ['maxAttempts', 'backoffSeconds', 'retryOn']);
    if (retry) {
      contract.retry = {
        max_attempts: retry.maxAttempts,
        ...(retry.backoffSeconds !== undefined
          ? { backoff_ms: ms('.retryPolicy.backoffSeconds', retry.backoffSeconds) }
          : {}),
        ...(retry.retryOn !== undefined ? { on: retry.retryOn } : {}),
      };
    }
  }
  if (v.rateLimits !== undefined) {
    const limits = fields('.rateLimits', v.rateLimits, ['perTool', 'perAgent', 'budget']);
    const limit = (key: 'perTool' | 'perAgent'): Record<string, unknown> | undefined => {
      const l = fields(`.rateLimits.${key}`, limits?.[key], ['limit', 'windowSeconds', 'burst']);
      return (
        l && {
          limit: l.limit,
          window_ms: ms(`.rateLimits.${key}.windowSeconds`, l.windowSeconds),
          ...(l.burst !== undefined ? { burst: l.burst } : {}),
        }
      );
    };
    const rate = {
      ...(limits?.perTool !== undefined ? { per_tool: limit('perTool') } : {}),
      ...(limits?.perAgent !== undefined ? { per_agent: limit('perAgent') } : {}),
    };
    if (Object.keys(rate).length > 0) contract.rate_limits = rate;
    if (limits?.budget !== undefined) facts.budget = budgetFrom(limits.budget, { fail, fields, show });
  }
  if (v.observability !== undefined) {
    if (!isObject(v.observability)) fail('.observability', `must be an object, got ${show(v.observability)}`);
    else {
      if (v.observability.tags !== undefined) facts.tags = strs('.observability.tags', v.observability.tags);
      for (const key of Object.keys(v.observability)) if (key !== 'tags') ignored.push(`${base}.observability.${key}`);
    }
  }
  if (v.deprecation !== undefined) {
    const d = fields('.deprecation', v.deprecation, ['deprecatedAt', 'removalAt', 'replacement']);
    if (d) {
      contract.deprecation = {
        ...(d.deprecatedAt !== undefined ? { deprecated_at: d.deprecatedAt } : {}),
        ...(d.removalAt !== undefined ? { removal_at: d.removalAt } : {}),
        ...(d.replacement !== undefined ? { replacement: d.replacement } : {}),
      };
    }
  }
  for (const key of ['permissionClass', 'compensation', 'concurrency', 'errors', 'auditFields'] as const)
    if (v[key] !== undefined) ignored.push(`${base}.${key}`);

  if (issues.length > 0) return { ok: false, issues };
  const parsed = parseContract(contract, '');
  if (!parsed.contract)
    return {
      ok: false,
      issues: parsed.issues.map((issue) => ({ path: aruntimePath(base, issue.path), message: issue.message })),
    };
  return { ok: true, facts, contract: parsed.contract, ignored };
}

interface Readers {
  fail(path: string, message: string): undefined;
  fields(path: string, v: unknown, allowed: readonly string[]): Record<string, unknown> | undefined;
  ms(path: string, v: unknown): number | undefined;
  strs(path: string, v: unknown): string[] | undefined;
  sideEffect(path: string, v: unknown): SideEffect | undefined;
  show(v: unknown): string;
}

/** `approvalTriggers`: `"never"`, `"always"`, an array of side-effect classes ([] = never), or `{on, approvers?, timeoutSeconds?, separationOfDuties?, minApprovers?}`. */
function approvalFrom(raw: unknown, r: Readers): unknown {
  const object = isObject(raw)
    ? r.fields('.approvalTriggers', raw, ['on', 'approvers', 'timeoutSeconds', 'separationOfDuties', 'minApprovers'])
    : undefined;
  const on = isObject(raw) ? object?.on : raw;
  const at = isObject(raw) ? '.approvalTriggers.on' : '.approvalTriggers';
  let when: unknown;
  if (on === 'never' || on === 'always') when = on;
  else if (Array.isArray(on))
    when = on.length === 0 ? 'never' : { side_effects: on.map((item, i) => r.sideEffect(`${at}[${i}]`, item)) };
  else return r.fail(at, `must be "never", "always" or an array of side-effect classes, got ${r.show(on)}`);
  return {
    when,
    ...(object?.approvers !== undefined ? { approvers: r.strs('.approvalTriggers.approvers', object.approvers) } : {}),
    ...(object?.timeoutSeconds !== undefined
      ? { timeout_ms: r.ms('.approvalTriggers.timeoutSeconds', object.timeoutSeconds) }
      : {}),
    // checked by the contract schema (reported at these ARuntime paths)
    ...(object?.separationOfDuties !== undefined ? { separation_of_duties: object.separationOfDuties } : {}),
    ...(object?.minApprovers !== undefined ? { min_approvers: object.minApprovers } : {}),
  };
}

function budgetFrom(
  raw: unknown,
  r: Pick<Readers, 'fail' | 'fields' | 'show'>,
): { tokens?: number; usd?: number } | undefined {
  const b = r.fields('.rateLimits.budget', raw, ['tokens', 'usd']);
  if (!b) return undefined;
  const out: { tokens?: number; usd?: number } = {};
  if (b.tokens !== undefined) {
    if (typeof b.tokens === 'number' && Number.isSafeInteger(b.tokens) && b.tokens >= 0) out.tokens = b.tokens;
    else r.fail('.rateLimits.budget.tokens', `must be a whole number >= 0, got ${r.show(b.tokens)}`);
  }
  if (b.usd !== undefined) {
    if (typeof b.usd === 'number' && Number.isFinite(b.usd) && b.usd >= 0) out.usd = b.usd;
    else r.fail('.rateLimits.budget.usd', `must be a number >= 0, got ${r.show(b.usd)}`);
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
