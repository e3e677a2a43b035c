// Caller identity with auth on (issue 22 point 2): the store's verified writer of a request is its
// caller everywhere — idempotency key spaces, per-agent rate limits, an approval's requested_by, the
// audit line, the tool's context.request.agentId. Two agents with their own tokens: bob tags his
// requests `agent:alice` (and rotates tags); none of it makes him alice. The tag stays a label.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG, ToolApprovalRequestContext } from '../../src/breadcrumbs/messages.js';
import { silentLogger } from '../../src/logger.js';
import { answer, cleanupAll, runCli, startRunnerWithStore, tempDir, toolContext, WS } from './harness.js';

const OWNER = '00000000-0000-0000-0000-000000000001';
const ADMIN_KEY = 'e2e-admin-key-identity';
const AUTH = ['--auth-secret', 'e2e-auth-secret-identity-0123456789', '--admin-key', ADMIN_KEY];

const opened: StoreClient[] = [];
function agent(url: string, agentId: string): StoreClient {
  const c = createStoreClient({
    baseUrl: url,
    logger: silentLogger(),
    auth: { mint: { owner_id: OWNER, agent_id: agentId, adminKey: ADMIN_KEY } },
  });
  opened.push(c);
  return c;
}

/** Writes a request as `c`, tagged `agent:<label>` (what the request claims), with extra context. */
async function send(
  c: StoreClient,
  tool: string,
  input: Record<string, unknown>,
  label: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const rid = crypto.randomUUID();
  await c.createBreadcrumb({
    title: `Request: ${tool}`,
    schema_name: SCHEMA.ToolRequest,
    tags: [TAG.Request, WS, TAG.agent(label)],
    context: { tool, input, requestId: rid, ...extra },
  });
  return rid;
}

// Who the tool was told called it, and a value only a real run produces (a replay repeats it).
const WHO =
  'export async function execute(input, context) { return { who: context.request.agentId ?? null, run: crypto.randomUUID() }; }';
type Who = { who: string | null; run: string };

let url: string;
let auditDir: string;
let alice: StoreClient;
let bob: StoreClient;
let mallory: StoreClient;

beforeAll(async () => {
  auditDir = tempDir('tr-e2e-audit-');
  ({ url } = await startRunnerWithStore([...AUTH, '--audit-dir', auditDir]));
  alice = agent(url, 'alice');
  bob = agent(url, 'bob');
  mallory = agent(url, 'mallory');
  const put = (context: Record<string, unknown>) =>
    alice.createBreadcrumb({
      title: String(context['name']),
      schema_name: SCHEMA.ToolCode,
      tags: [TAG.Tool, TAG.tool(String(context['name'])), WS],
      context,
    });
  await put(toolContext('id-who', WHO, { contract: { side_effect: 'reversible-write', idempotent: true } }));
  await put(
    toolContext('id-rate', WHO, {
      contract: { side_effect: 'read-only', rate_limits: { per_agent: { limit: 1, window_ms: 3_600_000 } } },
    }),
  );
  await put(
    toolContext('id-approve', WHO, { contract: { side_effect: 'irreversible', approval: { when: 'always' } } }),
  );
}, 60_000);

afterAll(async () => {
  for (const c of opened.splice(0)) c.close();
  await cleanupAll();
});

function auditLines(): Array<Record<string, unknown>> {
  return readdirSync(auditDir)
    .flatMap((f) =>
      readFileSync(join(auditDir, f), 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    )
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('caller identity with auth on: the verified writer, never the agent: tag', () => {
  it("idempotency: bob tagging agent:alice with alice's key gets no replay of her answer; he has his own key space", async () => {
    const aliceFirst = await answer(alice, await send(alice, 'id-who', {}, 'alice', { idempotency_key: 'invoice-7' }));
    expect(aliceFirst).toMatchObject({ status: 'success', output: { who: 'alice' } });
    const bobAsAlice = await answer(bob, await send(bob, 'id-who', {}, 'alice', { idempotency_key: 'invoice-7' }));
    // a fresh run for bob: not alice's output, no replayed_from
    expect(bobAsAlice).toMatchObject({ status: 'success', output: { who: 'bob' } });
    expect((bobAsAlice.output as Who).run).not.toBe((aliceFirst.output as Who).run);
    expect(bobAsAlice.metadata['replayed_from']).toBeUndefined();
    // each repeat replays its own writer's first answer, whatever the tag says
    const bobAgain = await answer(bob, await send(bob, 'id-who', {}, 'someone-else', { idempotency_key: 'invoice-7' }));
    expect(bobAgain.output).toEqual(bobAsAlice.output);
    expect(bobAgain.metadata['replayed_from']).toMatchObject({ rid: bobAsAlice.request_id });
    const aliceAgain = await answer(alice, await send(alice, 'id-who', {}, 'bob', { idempotency_key: 'invoice-7' }));
    expect(aliceAgain.output).toEqual(aliceFirst.output);
    expect(aliceAgain.metadata['replayed_from']).toMatchObject({ rid: aliceFirst.request_id });

    // the audit line names the verified writer; the tag is kept as a label
    const lines = auditLines().filter((l) => l['tool'] === 'id-who');
    expect(lines.find((l) => l['rid'] === bobAsAlice.request_id)).toMatchObject({
      agent: 'bob',
      agent_verified: true,
      agent_label: 'alice',
    });
    expect(lines.find((l) => l['rid'] === aliceFirst.request_id)).toMatchObject({
      agent: 'alice',
      agent_verified: true,
      agent_label: 'alice',
    });
  });

  it("per-agent rate limit: bob rotating agent: tags (his own, then alice's) stays in his one bucket; alice keeps hers", async () => {
    expect(await answer(bob, await send(bob, 'id-rate', {}, 'bob-1'))).toMatchObject({
      status: 'success',
      output: { who: 'bob' },
    });
    for (const label of ['bob-2', 'bob-3', 'alice']) {
      const refused = await answer(bob, await send(bob, 'id-rate', {}, label));
      expect(refused.error).toMatchObject({ code: 'rate.exceeded', details: { scope: 'agent' } });
      expect(refused.error?.message).toMatch(/^rate limit of "id-rate" for agent "bob" reached \(1 per 3600000 ms\)/);
    }
    expect(await answer(alice, await send(alice, 'id-rate', {}, 'alice'))).toMatchObject({
      status: 'success',
      output: { who: 'alice' },
    });
  });

  it('approvals: the approval request (and `tools-runner approvals`) shows the verified requester, not the tag', async () => {
    const rid = await send(bob, 'id-approve', {}, 'alice', { requestedBy: 'alice' });
    let approval: { id: string; requested_by: string } | undefined;
    await expect
      .poll(
        async () => {
          const items = await bob.listAll({ schema_name: SCHEMA.ToolApprovalRequest, tag: WS, include_context: true });
          const item = items.find((i) => i.context?.['rid'] === rid);
          if (item)
            approval = { id: item.id, requested_by: ToolApprovalRequestContext.parse(item.context).requested_by };
          return approval !== undefined;
        },
        { timeout: 30_000, interval: 100 },
      )
      .toBe(true);
    expect(approval?.requested_by).toBe('bob');
    const listed = runCli(['approvals', 'json', '--store-url', url, '--admin-key', ADMIN_KEY]);
    expect(await listed.exited).toBe(0);
    const rows = JSON.parse(listed.stdout.join('\n')) as Array<{ id: string; requested_by: string }>;
    expect(rows.find((r) => r.id === approval?.id)?.requested_by).toBe('bob');
    const approve = runCli(['approve', approval!.id, '--store-url', url, '--admin-key', ADMIN_KEY]);
    expect(await approve.exited).toBe(0);
    expect(await answer(bob, rid)).toMatchObject({
      status: 'success',
      output: { who: 'bob' },
      metadata: { approved_by: 'operator' },
    });
  });

  it('a request changed by another writer has no single author: permission.denied, never run as its writer', async () => {
    const rid = await send(bob, 'id-approve', { note: 'pay 10' }, 'bob');
    let requestId: string | undefined;
    await expect
      .poll(
        async () => {
          const items = await bob.listAll({ schema_name: SCHEMA.ToolApprovalRequest, tag: WS, include_context: true });
          const item = items.find((i) => i.context?.['rid'] === rid);
          requestId = item?.context?.['request_breadcrumb_id'] as string | undefined;
          return requestId !== undefined;
        },
        { timeout: 30_000, interval: 100 },
      )
      .toBe(true);
    // mallory rewrites bob's waiting request (same owner: the store lets her)
    await mallory.updateBreadcrumb(requestId!, {
      context: { tool: 'id-approve', input: { note: 'pay 10000' }, requestId: rid },
    });
    // the update wakes the request; an operator approval would too (refused or not, the answer is the same)
    await runCli(['approve', (await approvalIdOf(rid))!, '--store-url', url, '--admin-key', ADMIN_KEY]).exited;
    const response = await answer(bob, rid);
    expect(response.error).toMatchObject({
      code: 'permission.denied',
      message:
        'the request was written by "bob" and changed afterwards by "mallory"; a request runs only as its writer sent it',
    });
  });

  it("requests written by the runner's own surfaces are attributed to that surface's principal (tools-runner call: its token)", async () => {
    const call = runCli(['call', 'id-who', '{}', '--store-url', url, '--admin-key', ADMIN_KEY]);
    expect(await call.exited).toBe(0);
    const response = JSON.parse(call.stdout.join('\n')) as { output: Who; request_id: string };
    expect(response.output.who).toBe('tools-runner-cli');
    expect(auditLines().find((l) => l['rid'] === response.request_id)).toMatchObject({
      agent: 'tools-runner-cli',
      agent_verified: true,
      agent_label: 'tools-runner-cli',
    });
  });
});

async function approvalIdOf(rid: string): Promise<string | undefined> {
  const items = await bob.listAll({ schema_name: SCHEMA.ToolApprovalRequest, tag: WS, include_context: true });
  return items.find((i) => i.context?.['rid'] === rid)?.id;
}
