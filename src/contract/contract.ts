// The canonical tool contract (ARuntime's field set, which publishes no schema of its own): what a
// tool does to the world and the policies that follow from it — side effect, idempotency, approval,
// rate limits, retries, data classification, owner and deprecation.
//
// `tool.code.v1` carries it as `context.contract`; host tools (agentcli, Runloop, RAP) are mapped into
// it by their loaders. Every field is optional: an absent `side_effect` means *unknown*, and unknown
// fails closed wherever a gate depends on it (docs/contract.schema.json is generated from this file).

import { z } from 'zod';

/** The side-effect classes, from least to most consequential. */
export const SIDE_EFFECTS = [
  'read-only',
  'reversible-write',
  'irreversible',
  'financial',
  'external-communication',
  'code-execution',
  'administrative',
] as const;
export type SideEffect = (typeof SIDE_EFFECTS)[number];

const SideEffectSchema = z.enum(SIDE_EFFECTS);
const isoDate = z.iso.datetime({ offset: true });

/** One rate limit of a contract (also the shape of the operator's `--rate-limits` entries). */
export const RateLimit = z.strictObject({
  /** Calls allowed per window. */
  limit: z.int().min(1).max(1_000_000),
  /** Window length in ms (tokens refill evenly over it). */
  window_ms: z.int().min(1).max(86_400_000),
  /** Extra calls allowed at once beyond the steady rate (bucket size = limit + burst). */
  burst: z.int().min(0).max(1_000_000).optional(),
});

/** A tool's limits: all callers together, and each calling agent. */
export const RateLimits = z.strictObject({ per_tool: RateLimit.optional(), per_agent: RateLimit.optional() });
export type RateLimits = z.infer<typeof RateLimits>;

/** The `contract` of a tool. */
export const ToolContractSchema = z.strictObject({
  side_effect: SideEffectSchema.optional(),
  idempotent: z.boolean().optional(),
  approval: z
    .strictObject({
      /** `never`, `always`, or only for calls of these side-effect classes. */
      when: z.union([z.enum(['never', 'always']), z.strictObject({ side_effects: z.array(SideEffectSchema).min(1) })]),
      /** Agent ids (or `operator`) allowed to approve; empty/absent = the operator only. */
      approvers: z.array(z.string().min(1).max(200)).max(100).optional(),
      /** How long an approval request waits before it counts as denied. */
      timeout_ms: z
        .int()
        .min(1000)
        .max(7 * 86_400_000)
        .optional(),
      /** The requester's own approval never counts (its verified identity, or the operator's `--as` name). */
      separation_of_duties: z.boolean().optional(),
      /** Distinct approvers whose approvals a call needs (default 1); one approver counts once. */
      min_approvers: z.int().min(1).max(20).optional(),
    })
    .optional(),
  rate_limits: RateLimits.optional(),
  retry: z
    .strictObject({
      max_attempts: z.int().min(1).max(10),
      backoff_ms: z.int().min(0).max(600_000).optional(),
      /** Codes worth retrying (a subset of the retryable ones). */
      on: z
        .array(z.enum(['sandbox.crashed', 'dependency.unavailable', 'rate.exceeded']))
        .min(1)
        .optional(),
    })
    .optional(),
  data_classification: z.enum(['public', 'internal', 'confidential', 'restricted']).optional(),
  owner: z.string().min(1).max(200).optional(),
  deprecation: z
    .strictObject({
      deprecated_at: isoDate.optional(),
      removal_at: isoDate.optional(),
      replacement: z.string().min(1).max(200).optional(),
    })
    .optional(),
});
export type ToolContract = z.infer<typeof ToolContractSchema>;

/** One problem of a contract, with its JSON path (e.g. `/contract/rate_limits/per_tool/limit`). */
export interface ContractIssue {
  path: string;
  message: string;
}

/** Validates `value` as a contract; every problem with its JSON path under `base`. */
export function parseContract(
  value: unknown,
  base = '/contract',
): { contract?: ToolContract; issues: ContractIssue[] } {
  const parsed = ToolContractSchema.safeParse(value);
  if (parsed.success) {
    const issues: ContractIssue[] = [];
    const d = parsed.data.deprecation;
    if (d?.deprecated_at && d.removal_at && Date.parse(d.removal_at) < Date.parse(d.deprecated_at)) {
      issues.push({
        path: `${base}/deprecation/removal_at`,
        message: `removal_at (${d.removal_at}) is before deprecated_at (${d.deprecated_at})`,
      });
    }
    const a = parsed.data.approval;
    // Only the operator can supply any number of distinct approvers (`tools-runner approve --as <name>`).
    const agents = new Set(a?.approvers ?? []);
    if (a?.min_approvers !== undefined && agents.size > 0 && !agents.has('operator') && a.min_approvers > agents.size) {
      issues.push({
        path: `${base}/approval/min_approvers`,
        message: `min_approvers is ${a.min_approvers}, but only ${agents.size} distinct approver(s) are named (${[...agents].join(', ')}); no call could ever be approved`,
      });
    }
    return issues.length > 0 ? { issues } : { contract: parsed.data, issues };
  }
  return {
    issues: parsed.error.issues.flatMap(precise).map((issue) => ({
      path: [base, ...issue.path.map(String)].join('/'),
      message:
        issue.code === 'unrecognized_keys'
          ? `unknown field(s) ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`
          : issue.message,
    })),
  };
}

/** A union's "Invalid input" as the issues of the branch the value was meant for (the one whose root type matched). */
function precise(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return [issue];
  const meant = issue.errors.filter(
    (branch) =>
      !branch.some(
        (inner) => inner.path.length === 0 && (inner.code === 'invalid_type' || inner.code === 'invalid_value'),
      ),
  );
  if (meant.length !== 1) return [issue];
  return (meant[0] ?? []).map((inner) => ({ ...inner, path: [...issue.path, ...inner.path] })).flatMap(precise);
}

/** A contract read from data another part wrote (a catalog entry's `contract`): valid, or `{}` (unknown, fails closed). */
export function contractOrUnknown(value: unknown): ToolContract {
  return value === undefined ? {} : (parseContract(value).contract ?? {});
}

/** MCP's four annotation hints. */
export interface McpHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** What a side effect implies elsewhere (docs/tool-contracts.md "Side effects and unknown"): hints, RAP annotations, the gate. */
export interface SideEffectPolicy {
  mcp: McpHints;
  rap: { readOnly?: true; destructive?: true };
  /** Runloop's `requires_confirmation`. */
  requiresConfirmation: boolean;
  /** `none`: run; `policy`: the contract decides; `confirm`: approval needed; `fail-closed`: unknown. */
  gate: 'none' | 'policy' | 'confirm' | 'fail-closed';
  /** Whether calls must carry an idempotency key. */
  needsIdempotencyKey: boolean;
}

/** The side-effect crosswalk; `idempotent`/`openWorld` fill the cells the class leaves open. */
export function sideEffectPolicy(
  sideEffect: SideEffect | undefined,
  facts: { idempotent?: boolean; openWorld?: boolean } = {},
): SideEffectPolicy {
  const openWorld = facts.openWorld ?? true;
  switch (sideEffect) {
    case 'read-only':
      return {
        mcp: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: openWorld },
        rap: { readOnly: true },
        requiresConfirmation: false,
        gate: 'none',
        needsIdempotencyKey: false,
      };
    case 'reversible-write':
      return {
        mcp: {
          readOnlyHint: false,
          destructiveHint: false,
          idempotentHint: facts.idempotent ?? false,
          openWorldHint: openWorld,
        },
        rap: {},
        requiresConfirmation: false,
        gate: 'policy',
        needsIdempotencyKey: false,
      };
    case 'irreversible':
    case 'administrative':
    case 'code-execution':
      return {
        mcp: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: openWorld },
        rap: { destructive: true },
        requiresConfirmation: true,
        gate: 'confirm',
        needsIdempotencyKey: false,
      };
    case 'financial':
    case 'external-communication':
      return {
        mcp: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
        rap: { destructive: true },
        requiresConfirmation: true,
        gate: 'confirm',
        needsIdempotencyKey: true,
      };
    default:
      return {
        mcp: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
        rap: {},
        requiresConfirmation: true,
        gate: 'fail-closed',
        needsIdempotencyKey: false,
      };
  }
}

/**
 * The RAP annotations of a contract: the crosswalk's readOnly/destructive, `idempotent` when the MCP
 * idempotent hint holds, and `destructive` for a tool that always needs approval (RAP runtimes prompt
 * before destructive tools, as Runloop's requires_confirmation asks) unless it is read-only.
 */
export function rapAnnotationsOf(contract: Pick<ToolContract, 'side_effect' | 'idempotent' | 'approval'> | undefined): {
  readOnly?: true;
  destructive?: true;
  idempotent?: true;
} {
  const policy = sideEffectPolicy(
    contract?.side_effect,
    contract?.idempotent === undefined ? {} : { idempotent: contract.idempotent },
  );
  const confirm = !policy.rap.readOnly && contract?.approval?.when === 'always';
  return {
    ...policy.rap,
    ...(confirm ? { destructive: true as const } : {}),
    ...(policy.mcp.idempotentHint ? { idempotent: true as const } : {}),
  };
}

/** The contract RAP annotations state: `side_effect` by sideEffectFromRap, `idempotent` when given as a boolean. */
export function contractFromRap(annotations: Record<string, unknown> | undefined): ToolContract {
  const sideEffect = sideEffectFromRap(annotations);
  const idempotent = annotations?.['idempotent'];
  return {
    ...(sideEffect ? { side_effect: sideEffect } : {}),
    ...(typeof idempotent === 'boolean' ? { idempotent } : {}),
  };
}

/** The side effect RAP annotations imply; neither, or both `readOnly` and `destructive` (a contradiction), is unknown. */
export function sideEffectFromRap(
  annotations: { readOnly?: unknown; destructive?: unknown } | undefined,
): SideEffect | undefined {
  const readOnly = annotations?.readOnly === true;
  const destructive = annotations?.destructive === true;
  if (readOnly && destructive) return undefined;
  if (readOnly) return 'read-only';
  if (destructive) return 'irreversible';
  return undefined;
}

/** A contract issue path (`/rate_limits/per_tool/0`) as a dotted JSON path under `at` (`tools[0].contract.rate_limits.per_tool[0]`). */
export function dottedPath(at: string, pointer: string): string {
  return pointer
    .split('/')
    .filter((part) => part !== '')
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : `${out}.${part}`), at);
}

/** The side effect MCP hints imply (only an explicit readOnlyHint or destructiveHint tells anything). */
export function sideEffectFromMcp(hints: Partial<McpHints> | undefined): SideEffect | undefined {
  if (hints?.readOnlyHint === true) return 'read-only';
  if (hints?.destructiveHint === false) return 'reversible-write';
  if (hints?.destructiveHint === true) return 'irreversible';
  return undefined;
}

/** The JSON Schema of the contract (written to docs/contract.schema.json by scripts/contract-schema.mjs). */
export function contractJsonSchema(): Record<string, unknown> {
  return {
    ...(z.toJSONSchema(ToolContractSchema) as Record<string, unknown>),
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'urn:tools-runner:tool-contract:v1',
    title: 'tools-runner tool contract',
  };
}
