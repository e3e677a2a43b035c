// `tools-runner approvals [json]`: the calls of the workspace waiting for an approval — the runner's
// sealed tool.approval.request.v1 records that are not expired, not decided and whose request is
// not answered yet. Records without this runner's seal are left out (and counted on stderr).

import type { StoreClient } from '../../breadcrumbs/index.js';
import {
  SCHEMA,
  ToolApprovalRequestContext,
  type ToolApprovalRequestContext as ApprovalContext,
} from '../../breadcrumbs/messages.js';
import type { RequestKeys } from '../../breadcrumbs/request-keys.js';
import { sameText } from '../../breadcrumbs/request-keys.js';
import { approvalRequestMac, readDecision } from '../../request/policies/approval-records.js';
import { EXIT, type CommandContext } from '../command.js';
import { safeField } from '../sanitize.js';
import { cliKeys, cliStoreClient, exitForStoreProblem } from '../store-client.js';

/** Whether the store authenticates writers (its /health says `auth: on`). */
export function storeAuthCheck(client: StoreClient): () => Promise<boolean> {
  let answer: Promise<boolean> | undefined;
  return () =>
    (answer ??= client
      .health()
      .then((h) => (h as { auth?: unknown } | undefined)?.auth === 'on')
      .catch(() => false));
}

/** Whether the runner has answered the request (its unforgeable answer tag exists). */
export async function isAnswered(
  client: StoreClient,
  keys: RequestKeys,
  requestBreadcrumbId: string,
): Promise<boolean> {
  return (
    (
      await client.listBreadcrumbs({
        schema_name: SCHEMA.ToolResponse,
        tag: keys.answerTag(requestBreadcrumbId),
        limit: 1,
      })
    ).length > 0
  );
}

/** `1h 5m`, `42s`: how long until `ms`. */
export function expiresIn(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

interface Waiting {
  id: string;
  context: ApprovalContext;
  /** Distinct approvers that approved so far (min_approvers > 1). */
  approvedBy: string[];
}

/** Runs `tools-runner approvals`. */
export async function run(ctx: CommandContext): Promise<number> {
  const { config, logger, out, err, positionals } = ctx;
  const [format, extra] = positionals;
  if ((format !== undefined && format !== 'json') || extra !== undefined) {
    err(
      `tools-runner approvals: unexpected argument ${JSON.stringify(format !== 'json' ? format : extra)} (usage: tools-runner approvals [json])`,
    );
    return EXIT.Usage;
  }
  const client = cliStoreClient(config, logger, 'tools-runner-cli', ['subscriber']);
  try {
    await client.token();
    const keys = cliKeys(ctx, 'approvals');
    if (typeof keys === 'string') {
      err(keys);
      return EXIT.Usage;
    }
    const storeAuthenticates = storeAuthCheck(client);
    const items = await client.listAll({
      schema_name: SCHEMA.ToolApprovalRequest,
      tag: config.workspace,
      include_context: true,
    });
    const waiting: Waiting[] = [];
    let unsealed = 0;
    const now = Date.now();
    for (const item of items) {
      const parsed = ToolApprovalRequestContext.safeParse(item.context);
      if (!parsed.success || !sameText(approvalRequestMac(keys, parsed.data), parsed.data.mac)) {
        unsealed++;
        continue;
      }
      const context = parsed.data;
      if (!(Date.parse(context.expires_at) > now)) continue;
      if (await isAnswered(client, keys, context.request_breadcrumb_id)) continue;
      const found = await readDecision({ client, keys, approval: { id: item.id, context }, storeAuthenticates });
      if (found.decision) continue;
      waiting.push({ id: item.id, context, approvedBy: found.approvedBy });
    }
    waiting.sort((a, b) => Date.parse(a.context.expires_at) - Date.parse(b.context.expires_at));
    if (unsealed > 0)
      err(
        `tools-runner approvals: ${unsealed} approval record(s) without this runner's seal left out (written or altered by someone else, or another --runner-secret)`,
      );
    if (format === 'json') {
      out(
        JSON.stringify(
          waiting.map(({ id, context: c, approvedBy }) => ({
            id,
            tool: c.tool,
            version: c.version,
            requested_by: c.requested_by,
            approvers: c.approvers,
            policy: c.policy,
            rid: c.rid,
            input_hash: c.input_hash,
            input_preview: c.input_preview,
            expires_at: c.expires_at,
            ...(c.separation_of_duties ? { separation_of_duties: true } : {}),
            ...(c.min_approvers !== undefined ? { min_approvers: c.min_approvers, approved_by: approvedBy } : {}),
          })),
          null,
          2,
        ),
      );
      return EXIT.Ok;
    }
    if (waiting.length === 0) {
      out(`no approvals waiting in ${safeField(config.workspace)}`);
      return EXIT.Ok;
    }
    for (const { id, context: c, approvedBy } of waiting) {
      const rules = `${c.separation_of_duties ? '  not by the requester' : ''}${c.min_approvers !== undefined ? `  ${approvedBy.length} of ${c.min_approvers} approvals${approvedBy.length > 0 ? ` (${safeField(approvedBy.join(','))})` : ''}` : ''}`;
      out(
        `${safeField(id)}  ${safeField(c.tool)}@${safeField(c.version)}  requested by ${safeField(c.requested_by)}  expires in ${expiresIn(Date.parse(c.expires_at) - now)}  approvers ${safeField(c.approvers.join(','))}${rules}`,
      );
      out(`    input ${safeField(c.input_preview)}`);
    }
    return EXIT.Ok;
  } catch (error) {
    return exitForStoreProblem(error, { config, err }, 'approvals');
  } finally {
    client.close();
  }
}
