// Typed shapes (zod) of the breadcrumbs the runner reads and writes
// (README "Requests, responses and error codes").
//
// These are *structural* parsers: they check that a breadcrumb has the fields the runner needs and
// keep every other field (loose objects), because agents and the upstream server add fields freely.
// Precise validation of tool definitions (exact messages, JSON paths) lives in src/screen/.

import { z } from 'zod';
import { agentLabelOf } from './caller.js';

export const SCHEMA = {
  ToolRequest: 'tool.request.v1',
  ToolResponse: 'tool.response.v1',
  ToolCode: 'tool.code.v1',
  ToolLegacy: 'tool.v1',
  ToolCreateRequest: 'tool.create.request.v1',
  ToolCreateResponse: 'tool.create.response.v1',
  ToolCatalog: 'tool.catalog.v1',
  /** Ours: a replica's lease on a request (docs: docs/reliability.md "Claims"). */
  ToolClaim: 'tool.claim.v1',
  /** Ours: a call waiting for an approver (docs/tool-contracts.md "Approvals"). */
  ToolApprovalRequest: 'tool.approval.request.v1',
  /** An approver's decision on a tool.approval.request.v1 (tagged `approval:<request id>`). */
  ToolApprovalResponse: 'tool.approval.response.v1',
  /** Ours: an idempotency key bound to its first request (docs/tool-contracts.md "Idempotency keys"). */
  ToolIdempotency: 'tool.idempotency.v1',
  /** Ours: what a running call reported with context.progress (docs/tools.md "Progress"). */
  ToolProgress: 'tool.progress.v1',
} as const;

export const TAG = {
  Request: 'tool:request',
  Response: 'tool:response',
  Catalog: 'tool:catalog',
  Claim: 'tool:claim',
  /** Tag of the runner's tool.approval.request.v1 records. */
  Approval: 'tool:approval',
  /** Tag of the runner's tool.progress.v1 records. */
  Progress: 'tool:progress',
  Tool: 'tool',
  /** `request:<rid>` */
  request: (rid: string) => `request:${rid}`,
  /** `tool:<name>` */
  tool: (name: string) => `tool:${name}`,
  /** `agent:<id>` */
  agent: (id: string) => `agent:${id}`,
} as const;

/**
 * Prefix of the provenance mark `created-by:agent:<id>` the runner puts on what a tool creates for
 * agent `<id>` (tools can neither set nor remove it): the store counts such a record against that
 * agent's quota when the runner's own identity wrote it (src/store/quota.ts).
 */
export const CHARGED_AGENT_TAG_PREFIX = 'created-by:agent:';

/** Prefix of the tag that ties an approval's response to its request: `approval:<approval request breadcrumb id>`. */
export const APPROVAL_TAG_PREFIX = 'approval:';

/** The rid a `request:<rid>` tag names, or undefined for any other tag. */
export function ridOfRequestTag(tag: string): string | undefined {
  return tag.startsWith('request:') ? tag.slice('request:'.length) : undefined;
}

/** The `agent:<id>` tags of a record (a request's are copied onto its answer). */
export function agentTagsOf(tags: readonly string[]): string[] {
  return tags.filter((tag) => tag.startsWith('agent:'));
}

// The store's own API shapes (breadcrumb bodies and views, secrets, event frames).
export * from './store-shapes.js';

// ---- tool.request.v1 / tool.response.v1 --------------------------------------------------------

/** Context of `tool.request.v1`. `rid = requestId || breadcrumb.id`. */
export const ToolRequestContext = z.looseObject({
  tool: z.string().min(1),
  input: z.unknown(),
  requestId: z.string().min(1).optional(),
  requestedBy: z.string().optional(),
  config_id: z.string().optional(),
  return_to_llm: z.boolean().optional(),
  /** Which version of the tool: exact (`2.1.0`) or a range (`^2`, `~2.1`, `2.x`); absent = the default version. */
  version: z.string().min(1).max(100).optional(),
  /** The caller's idempotency key: a repeat with the same key and input gets the stored result. */
  idempotency_key: z.string().min(1).max(200).optional(),
  /** The caller's demand for a fresh, never-reused sandbox process for this call (the only value: `process`). */
  isolation: z
    .literal('process', {
      error: (issue) =>
        `must be "process" (the only isolation a caller can demand), got ${JSON.stringify(issue.input)?.slice(0, 100) ?? String(issue.input)}`,
    })
    .optional(),
});
export type ToolRequestContext = z.infer<typeof ToolRequestContext>;

/** Longest `requestId` the runner accepts as a request's id. */
export const MAX_REQUEST_ID_LENGTH = 200;
// Control, format (bidi, zero-width), lone-surrogate and line-separator characters.
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;

/** How the runner identifies one tool.request.v1 (the rules, written once). */
export interface RequestIdentity {
  /** The request breadcrumb's id: assigned by the store, the key everything is derived from. */
  breadcrumbId: string;
  /** What answers are tagged with (`request:<rid>`): the agent's `requestId`, else the breadcrumb id. */
  rid: string;
  /** The requested tool's name, or `(none)`. */
  tool: string;
  /**
   * The caller (breadcrumbs/caller.ts `callerOf`): the store's verified writer when the store
   * authenticates writers, else the request's label. From the record alone (`requestIdentity`), the label.
   */
  agentId?: string;
  /** Whether `agentId` is the store's authenticated writer (set by the handler from the `/full` record). */
  verified?: boolean;
  /** What the request says about itself (`agent:<id>` tag, else `context.requestedBy`): only a label when verified. */
  agentLabel?: string;
  /** Set when the request cannot be attributed to one writer (caller.ts); it is answered permission.denied with this. */
  callerProblem?: string;
  /** Set when the request cannot be processed as sent; it is answered `input.invalid` with this. */
  problem?: string;
}

/** Why `value` cannot serve as a request id, or undefined when it can. */
export function requestIdProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `requestId must be a string, got ${value === null ? 'null' : typeof value}`;
  if (value === '') return 'requestId must not be empty';
  if (value.length > MAX_REQUEST_ID_LENGTH)
    return `requestId is ${value.length} characters long; at most ${MAX_REQUEST_ID_LENGTH} are allowed`;
  const bad = UNPRINTABLE.exec(value);
  if (bad)
    return `requestId contains the unprintable character U+${(bad[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')} at index ${bad.index}`;
  return undefined;
}

/** The identity of a request breadcrumb (rid fallback, tool name, the agent it names: a label until the handler verifies it). */
export function requestIdentity(item: {
  id: string;
  tags: readonly string[];
  context?: Record<string, unknown> | undefined;
}): RequestIdentity {
  const context = item.context ?? {};
  const rawTool = context['tool'];
  const tool = typeof rawTool === 'string' && rawTool !== '' ? rawTool : '(none)';
  const agentId = agentLabelOf(item.tags, context);
  const requestId = context['requestId'];
  const problem = requestId === undefined ? undefined : requestIdProblem(requestId);
  // An unusable requestId is answered under the breadcrumb id, where the requester can still find it.
  // One literal, then stores (not spreads): built once per request, on V8's fast path.
  const identity: RequestIdentity = {
    breadcrumbId: item.id,
    tool,
    rid: requestId === undefined || problem ? item.id : (requestId as string),
  };
  if (agentId !== undefined) {
    identity.agentId = agentId;
    identity.agentLabel = agentId;
  }
  if (problem) identity.problem = problem;
  return identity;
}

export const ToolErrorBody = z.looseObject({
  code: z.string(),
  message: z.string(),
  retryable: z.boolean(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type ToolErrorBody = z.infer<typeof ToolErrorBody>;

/** Context of `tool.response.v1`, tagged `[WS, tool:response, request:<rid>]`. */
export const ToolResponseContext = z.looseObject({
  request_id: z.string(),
  tool: z.string(),
  status: z.enum(['success', 'error']),
  output: z.unknown().optional(),
  error: ToolErrorBody.optional(),
  execution_time_ms: z.number(),
  metadata: z.record(z.string(), z.unknown()),
  timestamp: z.string(),
});
export type ToolResponseContext = z.infer<typeof ToolResponseContext>;

// ---- tool.code.v1 ------------------------------------------------------------------------------

/** `permissions` of a tool. `api` is ours: the grant for `context.api`. */
export const ToolPermissions = z.looseObject({
  net: z.union([z.boolean(), z.array(z.string())]).optional(),
  read: z.unknown().optional(),
  write: z.unknown().optional(),
  env: z.unknown().optional(),
  run: z.unknown().optional(),
  ffi: z.unknown().optional(),
  sys: z.unknown().optional(),
  hrtime: z.unknown().optional(),
  api: z.union([z.literal(false), z.enum(['read', 'write'])]).optional(),
});
export type ToolPermissions = z.infer<typeof ToolPermissions>;

export const ToolExample = z.looseObject({
  description: z.string().optional(),
  input: z.unknown(),
  output: z.unknown().optional(),
  explanation: z.string().optional(),
  /** `exact`: the output must deep-equal `output`; default: it must validate against output_schema. */
  match: z.enum(['exact', 'schema']).optional(),
});
export type ToolExample = z.infer<typeof ToolExample>;

/** Context of `tool.v1` (legacy host tool, published by the runner from local manifests). */
export const ToolLegacyContext = z.looseObject({
  name: z.string(),
  description: z.string().optional(),
  input_schema: z.unknown().optional(),
  output_schema: z.unknown().optional(),
  transport: z.string().optional(),
  format: z.string().optional(),
  manifest_digest: z.string().optional(),
  requires_confirmation: z.boolean().optional(),
});
export type ToolLegacyContext = z.infer<typeof ToolLegacyContext>;

// ---- tool.create.request.v1 / tool.create.response.v1 ------------------------------------------

export const ToolCreateRequestContext = z.looseObject({
  request_id: z.string().optional(),
  agent_id: z.string().optional(),
  tool_spec: z.record(z.string(), z.unknown()),
  /** The `version` of the existing tool this one replaces; without it an existing name is a conflict. */
  replaces_version: z.string().optional(),
});
export type ToolCreateRequestContext = z.infer<typeof ToolCreateRequestContext>;

export const CreateIssue = z.looseObject({
  code: z.string(),
  path: z.string(),
  message: z.string(),
  line: z.number().int().optional(),
  column: z.number().int().optional(),
  fix: z.string().optional(),
});
export type CreateIssue = z.infer<typeof CreateIssue>;

export const ToolCreateResponseContext = z.looseObject({
  request_id: z.string(),
  /** The id of the `tool.create.request.v1` breadcrumb this answers. */
  request_breadcrumb_id: z.string().optional(),
  status: z.enum(['created', 'updated', 'rejected']),
  tool: z.object({ id: z.string(), name: z.string(), version: z.string() }).optional(),
  errors: z.array(CreateIssue),
  warnings: z.array(CreateIssue),
  examples: z.array(
    z.looseObject({
      description: z.string(),
      ok: z.boolean(),
      duration_ms: z.number(),
      error: z.string().optional(),
    }),
  ),
});
export type ToolCreateResponseContext = z.infer<typeof ToolCreateResponseContext>;

// ---- tool.catalog.v1 / tool.claim.v1 -----------------------------------------------------------

/** One version of a tool in tool.catalog.v1 (removed versions are not listed). */
export const CatalogVersion = z.looseObject({
  version: z.string(),
  status: z.enum(['active', 'deprecated']),
  deprecated_at: z.string().optional(),
  removal_at: z.string().optional(),
  replacement: z.string().optional(),
});
export type CatalogVersion = z.infer<typeof CatalogVersion>;

export const CatalogEntry = z.looseObject({
  name: z.string(),
  description: z.string(),
  version: z.string(),
  kind: z.enum(['code', 'host']),
  inputSchema: z.unknown(),
  outputSchema: z.unknown().optional(),
  examples: z.array(z.unknown()),
  status: z.string(),
  /** Every runnable version of the name, newest first (`version` above is the default one). */
  versions: z.array(CatalogVersion).optional(),
  contract: z.record(z.string(), z.unknown()).optional(),
  /** Facts exports describe (ARuntime timeoutSeconds, egressPolicy, authenticationRef, observability, budget). */
  timeoutMs: z.number().optional(),
  net: z.array(z.string()).optional(),
  requiredSecrets: z.array(z.string()).optional(),
  tags: z.array(z.string()).optional(),
  budget: z.object({ tokens: z.number().optional(), usd: z.number().optional() }).optional(),
});
export type CatalogEntry = z.infer<typeof CatalogEntry>;

export const ToolCatalogContext = z.looseObject({
  workspace: z.string(),
  totalTools: z.number().int(),
  activeTools: z.number().int(),
  lastUpdated: z.string(),
  tools: z.array(CatalogEntry),
});
export type ToolCatalogContext = z.infer<typeof ToolCatalogContext>;

export const ToolClaimContext = z.looseObject({
  request_id: z.string(),
  /** Id of the tool.request.v1 breadcrumb (rid may be the agent's requestId instead). */
  request_breadcrumb_id: z.string().optional(),
  attempt: z.number().int().min(1),
  holder: z.string(),
  expires_at: z.string(),
  released: z.boolean().optional(),
  /** MAC over the lease fields under the runner secret (see request-keys.ts). */
  mac: z.string().optional(),
});
export type ToolClaimContext = z.infer<typeof ToolClaimContext>;

/** Context of a tool.idempotency.v1: a caller's idempotency key bound to the first request that used it. */
export const ToolIdempotencyContext = z.looseObject({
  agent_id: z.string(),
  tool: z.string(),
  idempotency_key: z.string(),
  version: z.string(),
  input_hash: z.string(),
  request_id: z.string(),
  request_breadcrumb_id: z.string(),
  created_at: z.string(),
  /** MAC over every field above under the runner secret (src/request/policies/idempotency.ts). */
  mac: z.string(),
});
export type ToolIdempotencyContext = z.infer<typeof ToolIdempotencyContext>;

// ---- tool.approval.request.v1 / tool.approval.response.v1 -------------------------------------

/** Context of the runner's `tool.approval.request.v1` (tagged `[WS, tool:approval]`), sealed with `mac`. */
export const ToolApprovalRequestContext = z.looseObject({
  request_breadcrumb_id: z.string(),
  rid: z.string(),
  tool: z.string(),
  version: z.string(),
  input_hash: z.string(),
  /** The input, redacted and capped, for the approver to read. */
  input_preview: z.string(),
  /** The caller (breadcrumbs/caller.ts: the verified writer with auth on), or `(anonymous)`. */
  requested_by: z.string(),
  /** Who may decide: agent ids and/or `operator`. */
  approvers: z.array(z.string()),
  /** Why approval is needed: `contract` (its `approval`) or `confirm-external-actions`. */
  policy: z.string(),
  expires_at: z.string(),
  /** The requester's own approval never counts. */
  separation_of_duties: z.literal(true).optional(),
  /** Distinct approvals needed (absent = 1). */
  min_approvers: z.int().min(1).optional(),
  mac: z.string(),
});
export type ToolApprovalRequestContext = z.infer<typeof ToolApprovalRequestContext>;

/** Context of a `tool.approval.response.v1` (tagged `approval:<approval request id>`). */
export const ToolApprovalResponseContext = z.looseObject({
  decision: z.enum(['approve', 'deny']),
  input_hash: z.string(),
  reason: z.string().max(2000).optional(),
  /** `operator` on a decision written by `tools-runner approve|deny` (then `approval_id`, `decided_at` and `mac` are set). */
  approver: z.string().optional(),
  approval_id: z.string().optional(),
  decided_at: z.string().optional(),
  /** The operator's `--as <name>` (sealed with the decision). */
  decided_by: z.string().optional(),
  mac: z.string().optional(),
});
export type ToolApprovalResponseContext = z.infer<typeof ToolApprovalResponseContext>;
