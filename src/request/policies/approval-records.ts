// The records of an approval, shared by the approval policy (approval.ts) and the CLI
// (`tools-runner approvals|approve|deny`): which calls need one, the runner's sealed
// tool.approval.request.v1, the operator's sealed decision, and the reading of every
// tool.approval.response.v1 tagged `approval:<id>` into at most one valid decision.
//
// Trust: any agent may write, edit or delete any of these records. The runner's approval request
// and the operator's decisions carry a MAC under the runner secret over their canonical fields, so
// an edited or forged one is recognised. An agent's decision counts only when the store says who
// wrote it: `created_by` (set by the store from the authenticated token, and equal to `updated_by`,
// so nobody else edited it) must be one of the approvers, and the store must have auth on (without
// auth `created_by` is whatever the writer's unverified token claims: agent decisions never count).
// A decision counts only for the arguments it names (`input_hash`) and only if made before expiry.

import type { StoreClient } from '../../breadcrumbs/index.js';
import { isNotFound } from '../../breadcrumbs/index.js';
import {
  APPROVAL_TAG_PREFIX,
  SCHEMA,
  ToolApprovalRequestContext,
  ToolApprovalResponseContext,
  type ToolApprovalRequestContext as ApprovalContext,
} from '../../breadcrumbs/messages.js';
import type { RequestKeys } from '../../breadcrumbs/request-keys.js';
import { sameText } from '../../breadcrumbs/request-keys.js';
import { canonicalJson } from '../../contract/canonical.js';
import type { Redactor } from '../../host-tools/index.js';
import { REDACTED } from '../../host-tools/index.js';
import type { Call } from '../policy.js';

/** The approver that stands for `tools-runner approve|deny` (decisions sealed with the runner secret). */
export const OPERATOR = 'operator';
/** Longest input preview written into an approval request, in characters. */
export const PREVIEW_MAX_CHARS = 1000;
/** Most agent-written responses of one approval the runner reads in full (each costs a store read). */
export const MAX_AGENT_RESPONSES = 100;

/** Why a call needs approval, who may give it and for how long it may wait. */
export interface ApprovalNeed {
  /** `contract`: the tool contract's `approval`; `confirm-external-actions`: a host tool's `requires_confirmation`. */
  policy: 'contract' | 'confirm-external-actions';
  approvers: string[];
  timeoutMs?: number;
  /** The contract's `separation_of_duties`: the requester's own approval never counts. */
  separationOfDuties?: true;
  /** The contract's `min_approvers` (> 1): distinct approvals needed. */
  minApprovers?: number;
}

/** Whether `call` needs an approval before it runs (undefined: it does not). */
export function approvalNeed(
  call: Pick<Call, 'contract' | 'route'>,
  confirmExternalActions: boolean,
): ApprovalNeed | undefined {
  const approval = call.contract.approval;
  const approvers =
    approval?.approvers && approval.approvers.length > 0 ? [...new Set(approval.approvers)] : [OPERATOR];
  const timeout = {
    ...(approval?.timeout_ms !== undefined ? { timeoutMs: approval.timeout_ms } : {}),
    ...(approval?.separation_of_duties === true ? { separationOfDuties: true as const } : {}),
    ...(approval?.min_approvers !== undefined && approval.min_approvers > 1
      ? { minApprovers: approval.min_approvers }
      : {}),
  };
  // A host tool with requires_confirmation (its mapped contract says approval `always`): the
  // operator's --confirm-external-actions decides — on, it waits for an approval; off, it runs
  // auto-approved and audited, as agentcli and Runloop do.
  // An approval the manifest states beyond that (approvers, a timeout) still applies with the flag off.
  if (call.route.kind === 'host' && call.route.tool.requiresConfirmation) {
    if (confirmExternalActions) return { policy: 'confirm-external-actions', approvers, ...timeout };
    const onlyMapped =
      approval?.when === 'always' &&
      approval.approvers === undefined &&
      approval.timeout_ms === undefined &&
      approval.separation_of_duties === undefined &&
      approval.min_approvers === undefined;
    if (!approval || onlyMapped) return undefined;
  }
  if (approval && approval.when !== 'never') {
    // A side-effect list with an unknown side effect fails closed: the call needs approval.
    const side = call.contract.side_effect;
    if (approval.when === 'always' || side === undefined || approval.when.side_effects.includes(side))
      return { policy: 'contract', approvers, ...timeout };
  }
  return undefined;
}

const SECRET_KEY = /pass(word|phrase)?|secret|token|api[-_]?key|auth|credential|private[-_]?key|cookie|session/i;

/** The input as an approver sees it: secret-looking fields (whole values), known secret values and `--redact` matches replaced, capped at `maxChars`. */
export function inputPreview(input: unknown, redactor: Redactor, maxChars = PREVIEW_MAX_CHARS): string {
  const mask = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(mask);
    if (typeof value === 'object' && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(value))
        out[key] = SECRET_KEY.test(key) && child !== null ? REDACTED : mask(child);
      return out;
    }
    return value;
  };
  const text = JSON.stringify(redactor.deep(mask(input))) ?? 'null';
  if (text.length <= maxChars) return text;
  let cut = text.slice(0, maxChars);
  // Never end on half a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}… (${text.length - cut.length} more characters)`;
}

/** The fields of an approval request the runner writes (and its MAC covers). */
export interface ApprovalFields {
  request_breadcrumb_id: string;
  rid: string;
  tool: string;
  version: string;
  input_hash: string;
  input_preview: string;
  requested_by: string;
  approvers: string[];
  policy: string;
  expires_at: string;
  /** Present (true) when the requester's own approval never counts. */
  separation_of_duties?: true;
  /** Present when more than one distinct approval is needed. */
  min_approvers?: number;
}

/** The MAC of an approval request's fields (every field but `mac`, extra fields included). */
export function approvalRequestMac(keys: RequestKeys, fields: ApprovalFields | ApprovalContext): string {
  const { mac: _ignored, ...rest } = fields as ApprovalFields & { mac?: unknown };
  return keys.approvalMac('request', canonicalJson(rest));
}

/** The fields of an approval request, sealed with the runner secret. */
export function sealApprovalRequest(keys: RequestKeys, fields: ApprovalFields): ApprovalContext {
  return { ...fields, mac: approvalRequestMac(keys, fields) };
}

/** What reading an approval request found. */
export type ApprovalRead =
  | { kind: 'ok'; id: string; context: ApprovalContext; createdAt?: string }
  | { kind: 'not-found'; id: string }
  | { kind: 'not-approval'; id: string; why: string };

/** Reads breadcrumb `id` as one of this runner's approval requests (MAC checked). */
export async function readApprovalRequest(
  client: StoreClient,
  keys: RequestKeys,
  id: string,
  signal?: AbortSignal,
): Promise<ApprovalRead> {
  let full;
  try {
    full = await client.getBreadcrumbFull(id, signal ? { signal } : undefined);
  } catch (error) {
    if (isNotFound(error)) return { kind: 'not-found', id };
    throw error;
  }
  if (full.schema_name !== SCHEMA.ToolApprovalRequest)
    return {
      kind: 'not-approval',
      id,
      why: `it is a ${full.schema_name ?? 'breadcrumb without schema'}, not a ${SCHEMA.ToolApprovalRequest}`,
    };
  const parsed = ToolApprovalRequestContext.safeParse(full.context);
  if (!parsed.success) return { kind: 'not-approval', id, why: 'its context is not an approval request' };
  if (!sameText(approvalRequestMac(keys, parsed.data), parsed.data.mac))
    return {
      kind: 'not-approval',
      id,
      why: "it does not carry this runner's seal (written or altered by someone else, or another runner secret)",
    };
  return { kind: 'ok', id, context: parsed.data, ...(full.created_at ? { createdAt: full.created_at } : {}) };
}

/** The fields an operator decision's MAC covers. */
export interface DecisionFields {
  approvalId: string;
  decision: 'approve' | 'deny';
  inputHash: string;
  reason?: string | undefined;
  decidedAt: string;
  /** The operator's `--as <name>`: who decided (absent: the operator, unnamed). */
  decidedBy?: string | undefined;
}

/** The MAC of an operator decision. */
export function decisionMac(keys: RequestKeys, f: DecisionFields): string {
  // `decided_by` is covered only when present, so decisions sealed before it existed still verify.
  const named = f.decidedBy !== undefined ? { decided_by: f.decidedBy } : {};
  return keys.approvalMac(
    'decision',
    canonicalJson({
      approval_id: f.approvalId,
      decision: f.decision,
      input_hash: f.inputHash,
      reason: f.reason ?? null,
      decided_at: f.decidedAt,
      ...named,
    }),
  );
}

/** The identity of an operator decision: `operator`, or `operator:<name>` when decided with `--as <name>`. */
export function operatorIdentity(decidedBy: string | undefined): string {
  return decidedBy === undefined ? OPERATOR : `${OPERATOR}:${decidedBy}`;
}

/** Why `name` cannot be an operator's `--as` name, or undefined when it can. */
export function operatorNameProblem(name: string): string | undefined {
  return /^[A-Za-z0-9._@-]{1,64}$/.test(name)
    ? undefined
    : `--as must be 1-64 characters of A-Z a-z 0-9 . _ @ -, got ${JSON.stringify(name.slice(0, 80))}`;
}

/** One decision that counts. */
export interface Decision {
  decision: 'approve' | 'deny';
  /** `operator` (`operator:<name>` with `--as`), or the agent id the store recorded as the writer. */
  approver: string;
  /** For an approval that needed several: every distinct approver that counted, sorted. */
  approvers?: string[];
  reason?: string;
  /** The tool.approval.response.v1 breadcrumb. */
  responseId: string;
}

/** A response that does not count, and why. */
export interface Ignored {
  responseId: string;
  why: string;
}

/** What the responses of one approval add up to. */
export interface DecisionRead {
  /** The decision that counts: a valid denial, else an approval once enough distinct approvers approved. */
  decision?: Decision;
  /** Every response that counts (an approver's repeat included). */
  valid: Decision[];
  /** The distinct approvers whose approval counts so far, sorted (an approver twice counts once). */
  approvedBy: string[];
  /** Distinct approvals needed. */
  needed: number;
  ignored: Ignored[];
}

/**
 * Reads the responses tagged `approval:<id>`: the decision that counts (a valid denial wins; an
 * approval counts once `min_approvers` distinct approvers approved; under separation of duties the
 * requester's own approval never counts) and the ignored ones.
 */
export async function readDecision(options: {
  client: StoreClient;
  keys: RequestKeys;
  approval: { id: string; context: ApprovalContext };
  /** Whether the store authenticates writers (so `created_by` can be trusted). */
  storeAuthenticates: () => Promise<boolean>;
  signal?: AbortSignal;
}): Promise<DecisionRead> {
  const { client, keys, approval } = options;
  const opts = options.signal ? { signal: options.signal } : undefined;
  const { approvers, input_hash: inputHash, requested_by: requester } = approval.context;
  const expiresMs = Date.parse(approval.context.expires_at);
  const agents = approvers.filter((a) => a !== OPERATOR);
  const items = await client.listAll(
    { schema_name: SCHEMA.ToolApprovalResponse, tag: `${APPROVAL_TAG_PREFIX}${approval.id}`, include_context: true },
    opts,
  );
  const valid: Decision[] = [];
  const ignored: Ignored[] = [];
  let agentReads = 0;
  for (const item of items) {
    const parsed = ToolApprovalResponseContext.safeParse(item.context);
    if (!parsed.success) {
      ignored.push({ responseId: item.id, why: 'malformed: context needs decision "approve"|"deny" and input_hash' });
      continue;
    }
    const r = parsed.data;
    if (r.input_hash !== inputHash) {
      ignored.push({
        responseId: item.id,
        why: `for other arguments: input_hash ${JSON.stringify(r.input_hash)}, the call's is ${inputHash}`,
      });
      continue;
    }
    const reason = r.reason !== undefined ? { reason: r.reason } : {};
    if (r.approver === OPERATOR || r.mac !== undefined) {
      const fields = {
        approvalId: r.approval_id ?? '',
        decision: r.decision,
        inputHash: r.input_hash,
        reason: r.reason,
        decidedAt: r.decided_at ?? '',
        decidedBy: r.decided_by,
      };
      if (r.approval_id !== approval.id || !sameText(decisionMac(keys, fields), r.mac))
        ignored.push({ responseId: item.id, why: "claims to be the operator's but lacks a valid runner seal" });
      else if (!approvers.includes(OPERATOR))
        ignored.push({
          responseId: item.id,
          why: `the operator is not an approver (approvers: ${approvers.join(', ')})`,
        });
      else if (!(Date.parse(fields.decidedAt) <= expiresMs))
        ignored.push({
          responseId: item.id,
          why: `decided at ${fields.decidedAt}, after the approval expired (${approval.context.expires_at})`,
        });
      else
        valid.push({ decision: r.decision, approver: operatorIdentity(r.decided_by), ...reason, responseId: item.id });
      continue;
    }
    if (agents.length === 0) {
      ignored.push({
        responseId: item.id,
        why: 'not from an approver: only the operator may decide (tools-runner approve|deny)',
      });
      continue;
    }
    if (!(await options.storeAuthenticates())) {
      ignored.push({
        responseId: item.id,
        why: 'the store does not authenticate writers (auth off), so agent decisions do not count',
      });
      continue;
    }
    if (++agentReads > MAX_AGENT_RESPONSES) {
      ignored.push({
        responseId: item.id,
        why: `more than ${MAX_AGENT_RESPONSES} agent responses; the rest are not read`,
      });
      continue;
    }
    let full;
    try {
      full = await client.getBreadcrumbFull(item.id, opts);
    } catch (error) {
      if (isNotFound(error)) continue;
      throw error;
    }
    const writer = full.created_by ?? undefined;
    if (writer === undefined || !agents.includes(writer))
      ignored.push({
        responseId: item.id,
        why: `written by ${writer === undefined ? 'an unknown writer' : JSON.stringify(writer)}, not an approver (approvers: ${approvers.join(', ')})`,
      });
    else if (full.updated_by !== writer)
      ignored.push({
        responseId: item.id,
        why: `edited by ${JSON.stringify(full.updated_by ?? 'an unknown writer')} after ${JSON.stringify(writer)} wrote it`,
      });
    else if (!(Date.parse(full.created_at ?? '') <= expiresMs))
      ignored.push({
        responseId: item.id,
        why: `written at ${full.created_at ?? '(unknown)'}, after the approval expired (${approval.context.expires_at})`,
      });
    else valid.push({ decision: r.decision, approver: writer, ...reason, responseId: item.id });
  }
  const counted: Decision[] = [];
  for (const d of valid) {
    // Separation of duties: whoever asked for the call may not approve it (a denial only stops their own call).
    if (approval.context.separation_of_duties === true && d.decision === 'approve' && d.approver === requester) {
      ignored.push({
        responseId: d.responseId,
        why: `separation of duties: ${JSON.stringify(d.approver)} requested this call and may not approve it`,
      });
      continue;
    }
    counted.push(d);
  }
  const needed = approval.context.min_approvers ?? 1;
  const approvedBy: string[] = [];
  for (const d of counted)
    if (d.decision === 'approve' && !approvedBy.includes(d.approver)) approvedBy.push(d.approver);
  approvedBy.sort();
  const denial = counted.find((d) => d.decision === 'deny');
  const first = counted.find((d) => d.decision === 'approve');
  const approved =
    first && approvedBy.length >= needed ? { ...first, ...(needed > 1 ? { approvers: approvedBy } : {}) } : undefined;
  const decision = denial ?? approved;
  return { ...(decision ? { decision } : {}), valid: counted, approvedBy, needed, ignored };
}
