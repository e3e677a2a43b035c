// `tools-runner approve <id> [--reason R]` (and `deny`, deny.ts): the operator's decision on one
// waiting approval request. The decision is a tool.approval.response.v1 tagged `approval:<id>`,
// sealed with a MAC under the runner secret (that seal is what makes it the operator's) and written
// with an Idempotency-Key derived from the approval id, so the operator decides each approval once.
// Unknown ids, records without the runner's seal, approvals the operator may not decide, decided
// or expired ones, and answered requests are refused with one line saying which.

import { isConflict } from '../../breadcrumbs/index.js';
import { APPROVAL_TAG_PREFIX, SCHEMA } from '../../breadcrumbs/messages.js';
import {
  decisionMac,
  OPERATOR,
  operatorIdentity,
  operatorNameProblem,
  readApprovalRequest,
  readDecision,
} from '../../request/policies/approval-records.js';
import { EXIT, type CommandContext } from '../command.js';
import { safeField } from '../sanitize.js';
import { cliStoreClient, exitForStoreProblem } from '../store-client.js';
import { isAnswered, storeAuthCheck } from './approvals.js';
import { cliKeys } from '../store-client.js';

/** Writes the operator's `decision` on the approval request named by the one positional argument. */
export async function decide(ctx: CommandContext, decision: 'approve' | 'deny'): Promise<number> {
  const { config, logger, out, err, positionals } = ctx;
  const command = decision;
  const [id, extra] = positionals;
  if (id === undefined || id === '' || extra !== undefined) {
    err(
      `usage: tools-runner ${command} <approval id> [--reason TEXT] [--as NAME]${extra !== undefined ? ` (unexpected argument ${JSON.stringify(extra)})` : ''}; tools-runner approvals lists the ids`,
    );
    return EXIT.Usage;
  }
  const decidedBy = config.as;
  const nameProblem = decidedBy === undefined ? undefined : operatorNameProblem(decidedBy);
  if (nameProblem !== undefined) {
    err(`tools-runner ${command}: ${nameProblem}`);
    return EXIT.Usage;
  }
  const who = operatorIdentity(decidedBy);
  const client = cliStoreClient(config, logger, 'tools-runner-cli', ['emitter', 'subscriber']);
  const fail = (line: string): number => {
    err(`tools-runner ${command}: ${line}`);
    return EXIT.Failed;
  };
  try {
    await client.token();
    const keys = cliKeys(ctx, command);
    if (typeof keys === 'string') {
      err(keys);
      return EXIT.Usage;
    }
    const read = await readApprovalRequest(client, keys, id);
    const name = JSON.stringify(safeField(id));
    if (read.kind === 'not-found')
      return fail(`no approval request ${name} (tools-runner approvals lists the waiting ones)`);
    if (read.kind === 'not-approval') return fail(`${name} is not an approval request of this runner: ${read.why}`);
    const c = read.context;
    const label = `"${safeField(c.tool)}"@${safeField(c.version)}`;
    if (!c.approvers.includes(OPERATOR))
      return fail(
        `approval ${name} for ${label} may be decided only by ${safeField(c.approvers.join(', '))}, not by the operator`,
      );
    if (decision === 'approve' && c.separation_of_duties === true && who === c.requested_by) {
      return fail(
        `approval ${name} for ${label} was requested by ${safeField(who)}; separation of duties: the requester may not approve it (another approver must)`,
      );
    }
    const found = await readDecision({
      client,
      keys,
      approval: { id: read.id, context: c },
      storeAuthenticates: storeAuthCheck(client),
    });
    if (found.decision) {
      const d = found.decision;
      const by = (d.approvers ?? [d.approver]).map(safeField).join(', ');
      return fail(
        `approval ${name} for ${label} was already decided: ${d.decision === 'approve' ? 'approved' : 'denied'} by ${by}${d.reason !== undefined ? ` (${safeField(d.reason)})` : ''}`,
      );
    }
    if (found.approvedBy.includes(who))
      return fail(
        `approval ${name} for ${label} was already approved by ${safeField(who)}; it needs ${found.needed} distinct approvers (so far: ${found.approvedBy.map(safeField).join(', ')})`,
      );
    const decidedAt = new Date().toISOString();
    if (!(Date.parse(c.expires_at) > Date.parse(decidedAt)))
      return fail(
        `approval ${name} for ${label} expired at ${safeField(c.expires_at)}; the request is answered approval.required (timeout counts as deny)`,
      );
    if (await isAnswered(client, keys, c.request_breadcrumb_id))
      return fail(
        `approval ${name} for ${label} is settled: request ${JSON.stringify(safeField(c.rid))} was already answered`,
      );
    const reason = config.reason;
    const mac = decisionMac(keys, {
      approvalId: read.id,
      decision,
      inputHash: c.input_hash,
      reason,
      decidedAt,
      decidedBy,
    });
    try {
      await client.createBreadcrumb(
        {
          title: `Approval ${decision}: ${c.tool}@${c.version}`,
          schema_name: SCHEMA.ToolApprovalResponse,
          tags: [config.workspace, `${APPROVAL_TAG_PREFIX}${read.id}`],
          context: {
            decision,
            input_hash: c.input_hash,
            ...(reason !== undefined ? { reason } : {}),
            approver: OPERATOR,
            approval_id: read.id,
            decided_at: decidedAt,
            ...(decidedBy !== undefined ? { decided_by: decidedBy } : {}),
            mac,
          },
        },
        { idempotencyKey: keys.approvalDecisionKey(read.id, decidedBy) },
      );
    } catch (error) {
      if (isConflict(error)) return fail(`approval ${name} for ${label} was already decided by ${safeField(who)}`);
      throw error;
    }
    const as = decidedBy !== undefined ? ` as ${safeField(who)}` : '';
    const more =
      decision === 'approve' && found.needed > found.approvedBy.length + 1
        ? `; ${found.approvedBy.length + 1} of ${found.needed} distinct approvals`
        : '';
    out(
      `${decision === 'approve' ? 'approved' : 'denied'} ${safeField(read.id)}${as}: ${label} requested by ${safeField(c.requested_by)} (request ${safeField(c.rid)})${more}`,
    );
    return EXIT.Ok;
  } catch (error) {
    return exitForStoreProblem(error, { config, err }, command);
  } finally {
    client.close();
  }
}

/** Runs `tools-runner approve`. */
export function run(ctx: CommandContext): Promise<number> {
  return decide(ctx, 'approve');
}
