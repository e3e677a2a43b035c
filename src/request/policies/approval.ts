// The approval policy: a call that needs approval (approval-records.ts `approvalNeed`: the tool
// contract's `approval`, or `--confirm-external-actions` for a host tool with `requires_confirmation`)
// does not run until an allowed approver says so.
//
// States of one request, all kept in the store (nothing here survives a restart, nothing needs to):
// - no approval request yet: the runner writes ONE `tool.approval.request.v1` (Idempotency-Key
//   derived from the request breadcrumb id with the runner secret, fields sealed with a MAC) and
//   parks the request, woken by `approval:<approval id>` or at `expires_at`;
// - waiting: every admission (a wake, a periodic look, a restart's scan) finds the same record by
//   its key (409 → read it, check the seal), reads the decisions (approval-records.ts `readDecision`)
//   and parks again when there is none;
// - approved: the call runs with `metadata.approval_id`; denied: `approval.required` naming the
//   approver and reason; expired without a valid decision: `approval.required` (timeout = deny).
// The approval is bound to the call: a request whose input, tool or version changed since the
// approval was requested, or whose approval record was deleted or altered, is answered
// `approval.required` (fail closed), never run on the old approval.

import {
  createStoreAuthProbe,
  isConflict,
  conflictId,
  type StoreAuthProbe,
  type StoreClient,
} from '../../breadcrumbs/index.js';
import {
  APPROVAL_TAG_PREFIX,
  SCHEMA,
  TAG,
  type ToolApprovalRequestContext as ApprovalContext,
} from '../../breadcrumbs/messages.js';
import type { RequestKeys } from '../../breadcrumbs/request-keys.js';
import { ErrorCode } from '../../errors.js';
import { CONFIRMATION_REFUSED, createRedactor } from '../../host-tools/index.js';
import type { Logger } from '../../logger.js';
import { errorResult } from '../../result.js';
import type { Call, Gate, Policy } from '../policy.js';
import {
  approvalNeed,
  inputPreview,
  readApprovalRequest,
  readDecision,
  sealApprovalRequest,
  type ApprovalNeed,
} from './approval-records.js';

export interface ApprovalPolicyOptions {
  client: StoreClient;
  keys: RequestKeys;
  workspace: string;
  logger: Logger;
  /** `--confirm-external-actions`: host tools with `requires_confirmation` need an approval. */
  confirmExternalActions: boolean;
  /** Wait when the contract names no `approval.timeout_ms` (`--approval-timeout-ms`). */
  defaultTimeoutMs: number;
  /** Secret values known to the runner (never shown in an input preview). */
  secretValues?: () => Iterable<string>;
  /** The operator's `--redact` patterns (applied to input previews too). */
  redactPatterns?: readonly string[];
  /** Whether the store authenticates writers (shared with the request handler); default: a probe of `client`. */
  storeAuth?: StoreAuthProbe;
  now?: () => number;
}

const RUN: Gate = { kind: 'run' };

/** Creates the policy. */
export function approvalPolicy(options: ApprovalPolicyOptions): Policy {
  const { client, keys, workspace, logger } = options;
  const now = options.now ?? Date.now;
  const probe = options.storeAuth ?? createStoreAuthProbe(client, { now });

  const storeAuthenticates = async (): Promise<boolean> => {
    try {
      return await probe.authenticates();
    } catch (error) {
      logger.warn('store health unreadable; agent approvals do not count for now', { error });
      return false;
    }
  };

  const refuse = (call: Call, message: string, details: Record<string, unknown>): Gate => ({
    kind: 'answer',
    result: errorResult(ErrorCode.ApprovalRequired, message, { tool: call.route.tool.name, ...details }),
  });

  /** The request's approval record: created now, or found again by its key. */
  const ensureRecord = async (
    call: Call,
    need: ApprovalNeed,
    signal: AbortSignal,
  ): Promise<{ id: string; context: ApprovalContext; created: boolean } | Gate> => {
    const { identity } = call;
    const redactor = createRedactor(options.secretValues?.() ?? [], options.redactPatterns ?? []);
    const context = sealApprovalRequest(keys, {
      request_breadcrumb_id: identity.breadcrumbId,
      rid: identity.rid,
      tool: call.route.tool.name,
      version: call.version,
      input_hash: call.inputHash,
      input_preview: inputPreview(call.input, redactor),
      requested_by: identity.agentId ?? '(anonymous)',
      approvers: need.approvers,
      policy: need.policy,
      expires_at: new Date(now() + (need.timeoutMs ?? options.defaultTimeoutMs)).toISOString(),
      ...(need.separationOfDuties ? { separation_of_duties: true as const } : {}),
      ...(need.minApprovers !== undefined ? { min_approvers: need.minApprovers } : {}),
    });
    try {
      const { id } = await client.createBreadcrumb(
        {
          title: `Approval: ${call.route.tool.name}@${call.version}`,
          schema_name: SCHEMA.ToolApprovalRequest,
          tags: [workspace, TAG.Approval],
          context,
        },
        { idempotencyKey: keys.approvalKey(identity.breadcrumbId), signal },
      );
      return { id, context, created: true };
    } catch (error) {
      if (!isConflict(error)) throw error;
      const existing = conflictId(error);
      if (existing === undefined)
        return refuse(
          call,
          `the approval request of request ${JSON.stringify(identity.rid)} cannot be read back (the store did not name it); counts as denied`,
          {},
        );
      const read = await readApprovalRequest(client, keys, existing, signal);
      if (read.kind === 'not-found')
        return refuse(
          call,
          `approval request ${existing} of request ${JSON.stringify(identity.rid)} was deleted; a deleted approval request counts as denied`,
          { approval_id: existing },
        );
      if (read.kind !== 'ok' || read.context.request_breadcrumb_id !== identity.breadcrumbId) {
        const why = read.kind === 'ok' ? 'it belongs to another request' : read.why;
        return refuse(
          call,
          `approval request ${existing} of request ${JSON.stringify(identity.rid)} is not valid (${why}); counts as denied`,
          { approval_id: existing },
        );
      }
      return { id: existing, context: read.context, created: false };
    }
  };

  return {
    name: 'approval',
    async admit(call, signal) {
      const need = approvalNeed(call, options.confirmExternalActions);
      if (!need) return RUN;
      const tool = call.route.tool.name;
      const log = logger.child({ rid: call.identity.rid, tool });
      const record = await ensureRecord(call, need, signal);
      if ('kind' in record) return record;
      const { id, context } = record;
      if (record.created)
        log.info('approval requested', {
          approvalId: id,
          approvers: context.approvers,
          expiresAt: context.expires_at,
          policy: context.policy,
        });
      const label = `"${tool}"@${context.version}`;
      // Bound to the call: changed arguments, tool or version need a new request (and approval).
      if (context.input_hash !== call.inputHash) {
        return refuse(
          call,
          `the input of request ${JSON.stringify(call.identity.rid)} changed after approval ${id} was requested (approval for ${context.input_hash}, input now ${call.inputHash}); send a new request`,
          { approval_id: id },
        );
      }
      if (context.tool !== tool || context.version !== call.version) {
        return refuse(
          call,
          `approval ${id} was requested for "${context.tool}"@${context.version}, but the call is now for "${tool}"@${call.version}; send a new request`,
          { approval_id: id },
        );
      }
      const found = await readDecision({ client, keys, approval: { id, context }, storeAuthenticates, signal });
      for (const ignored of found.ignored)
        log.warn('approval response ignored', { approvalId: id, responseId: ignored.responseId, why: ignored.why });
      const decision = found.decision;
      if (decision?.decision === 'approve') {
        const approvedBy = decision.approvers ?? [decision.approver];
        call.metadata['approval_id'] = id;
        call.metadata['approved_by'] = approvedBy.join(', ');
        log.info('call approved', { approvalId: id, approvers: approvedBy });
        return RUN;
      }
      if (decision?.decision === 'deny') {
        log.info('call denied', { approvalId: id, approver: decision.approver });
        const reason = decision.reason !== undefined ? `: ${decision.reason}` : ' (no reason given)';
        return refuse(call, `approval ${id} for ${label} was denied by ${decision.approver}${reason}`, {
          approval_id: id,
          decision: 'deny',
          approver: decision.approver,
          ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
        });
      }
      const expiresMs = Date.parse(context.expires_at);
      if (!(now() < expiresMs)) {
        log.info('approval timed out', { approvalId: id, expiresAt: context.expires_at });
        const partial =
          found.approvedBy.length > 0
            ? ` (${found.approvedBy.length} of ${found.needed} required approvals: ${found.approvedBy.join(', ')})`
            : '';
        const timedOut = `approval ${id} for ${label} timed out at ${context.expires_at} with no decision from ${context.approvers.join(', ')}${partial}; timeout counts as deny`;
        // agentcli/Runloop callers know the confirmation refusal by its text: it comes first.
        const message =
          context.policy === 'confirm-external-actions' ? `${CONFIRMATION_REFUSED} (${timedOut})` : timedOut;
        return refuse(call, message, {
          approval_id: id,
          decision: 'timeout',
          expires_at: context.expires_at,
          ...(found.approvedBy.length > 0 ? { approved_by: found.approvedBy } : {}),
        });
      }
      return {
        kind: 'park',
        reason: `waiting for approval ${id} of ${label} by ${context.approvers.join(', ')}${found.needed > 1 ? ` (${found.approvedBy.length} of ${found.needed} distinct approvals so far)` : ''} until ${context.expires_at}`,
        until: expiresMs,
        wakeOn: [`${APPROVAL_TAG_PREFIX}${id}`],
      };
    },
  };
}
