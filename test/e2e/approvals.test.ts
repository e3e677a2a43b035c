// Approvals end to end (issue 13 point 4): real runner processes with their store, tools whose
// contract needs an approval, and the operator's CLI (`tools-runner approvals|approve|deny`).
// A call that needs approval does not run until an allowed approver approves it for exactly its
// arguments; a denial or an expiry answers approval.required; a waiting request survives a restart;
// `--confirm-external-actions` makes a Runloop `requires_confirmation` tool wait the same way.

import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import {
  SCHEMA,
  TAG,
  ToolApprovalRequestContext,
  type ToolApprovalRequestContext as ApprovalContext,
} from '../../src/breadcrumbs/messages.js';
import { inputHash } from '../../src/contract/canonical.js';
import { silentLogger } from '../../src/logger.js';
import {
  answer,
  cleanupAll,
  runCli,
  startRunner,
  startRunnerWithStore,
  startStoreProcess,
  tempDir,
  toolContext,
  WS,
  type CliProcess,
} from './harness.js';

const bin = fileURLToPath(new URL('../fixtures/host-tools/bin/', import.meta.url));
const OWNER = '00000000-0000-0000-0000-000000000001';
const ADMIN_KEY = 'e2e-admin-key-approvals';
const AUTH = ['--auth-secret', 'e2e-auth-secret-approvals-0123456789', '--admin-key', ADMIN_KEY];

const opened: StoreClient[] = [];
function agent(url: string, agentId: string, adminKey?: string): StoreClient {
  const c = createStoreClient({
    baseUrl: url,
    logger: silentLogger(),
    auth: { mint: { owner_id: OWNER, agent_id: agentId, ...(adminKey ? { adminKey } : {}) } },
  });
  opened.push(c);
  return c;
}

afterAll(async () => {
  for (const c of opened.splice(0)) c.close();
  await cleanupAll();
});

/** A tool that leaves a `ran:<mark>` breadcrumb when it runs, so "did not run" can be checked. */
const MARKER = `export async function execute(input, context) {
  await context.api.createBreadcrumb({ title: 'ran', schema_name: 'e2e.ran.v1', tags: ['ran:' + input.mark], context: {} });
  return { ran: input.mark };
}`;

function markerTool(name: string, contract: Record<string, unknown>): Record<string, unknown> {
  return toolContext(name, MARKER, { permissions: { net: false, api: 'write' }, contract });
}

async function putTool(c: StoreClient, context: Record<string, unknown>): Promise<void> {
  const name = context['name'] as string;
  await c.createBreadcrumb({
    title: name,
    schema_name: SCHEMA.ToolCode,
    tags: [TAG.Tool, TAG.tool(name), WS],
    context,
  });
}

async function send(c: StoreClient, tool: string, input: Record<string, unknown>, agentId: string): Promise<string> {
  const rid = crypto.randomUUID();
  await c.createBreadcrumb({
    title: `Request: ${tool}`,
    schema_name: SCHEMA.ToolRequest,
    tags: [TAG.Request, WS, TAG.agent(agentId)],
    context: { tool, input, requestId: rid },
  });
  return rid;
}

/** The approval request the runner wrote for request `rid` (waits for it). */
async function approvalOf(c: StoreClient, rid: string): Promise<{ id: string; context: ApprovalContext }> {
  let found: { id: string; context: ApprovalContext } | undefined;
  await expect
    .poll(
      async () => {
        const items = await c.listAll({ schema_name: SCHEMA.ToolApprovalRequest, tag: WS, include_context: true });
        const item = items.find((i) => i.context?.['rid'] === rid);
        if (item) found = { id: item.id, context: ToolApprovalRequestContext.parse(item.context) };
        return found !== undefined;
      },
      { timeout: 30_000, interval: 100 },
    )
    .toBe(true);
  return found as { id: string; context: ApprovalContext };
}

async function ran(c: StoreClient, mark: string): Promise<number> {
  return (await c.listBreadcrumbs({ tag: `ran:${mark}`, limit: 10 })).length;
}

/** Runs a CLI command to its end. */
async function cli(args: string[]): Promise<{ code: number | string; out: string; err: string }> {
  const proc = runCli(args);
  const code = await proc.exited;
  return { code, out: proc.stdout.join('\n'), err: proc.stderr.join('') };
}

/** Resolves once the runner logged that it ignored response `responseId`; returns why. */
async function ignoredWhy(runner: CliProcess, responseId: string): Promise<string> {
  let why = '';
  await expect
    .poll(
      () => {
        const line = runner.stderr
          .join('')
          .split('\n')
          .find((l) => l.includes('"msg":"approval response ignored"') && l.includes(responseId));
        if (line) why = (JSON.parse(line) as { why: string }).why;
        return why;
      },
      { timeout: 30_000, interval: 50 },
    )
    .not.toBe('');
  return why;
}

describe('approvals (store with auth: agent approvers count)', () => {
  let url: string;
  let runner: CliProcess;
  let requester: StoreClient;
  let alice: StoreClient;
  let mallory: StoreClient;
  let auditDir: string;
  const op = (args: string[]) => cli([...args, '--store-url', url, '--admin-key', ADMIN_KEY]);

  beforeAll(async () => {
    const dir = tempDir();
    auditDir = join(dir, 'audit');
    const runloop = join(dir, 'runloop-tools.json');
    writeFileSync(
      runloop,
      JSON.stringify({
        version: 1,
        tools: [
          {
            id: 'mail.send',
            description: 'sends mail (needs confirmation)',
            transport: { kind: 'exec', command: join(bin, 'runloop-tool') },
            input_schema: { type: 'object' },
            result_schema: null,
            capabilities: [],
            requires_confirmation: true,
          },
        ],
      }),
    );
    ({ url, runner } = await startRunnerWithStore([
      ...AUTH,
      '--manifests',
      runloop,
      '--granted-capabilities',
      'exec',
      '--audit-dir',
      auditDir,
    ]));
    requester = agent(url, 'requester', ADMIN_KEY);
    alice = agent(url, 'alice', ADMIN_KEY);
    mallory = agent(url, 'mallory', ADMIN_KEY);
    await putTool(
      requester,
      markerTool('ap-irreversible', {
        side_effect: 'irreversible',
        approval: { when: { side_effects: ['irreversible', 'financial'] } },
      }),
    );
    await putTool(
      requester,
      markerTool('ap-alice', { side_effect: 'financial', approval: { when: 'always', approvers: ['alice'] } }),
    );
    await putTool(
      requester,
      markerTool('ap-short', { side_effect: 'reversible-write', approval: { when: 'always', timeout_ms: 1000 } }),
    );
    await putTool(requester, markerTool('ap-unknown-effect', { approval: { when: { side_effects: ['financial'] } } }));
    await putTool(
      requester,
      markerTool('ap-free', { side_effect: 'read-only', approval: { when: { side_effects: ['financial'] } } }),
    );
  });

  it("a call that needs no approval runs at once (a side-effect list that does not name the tool's side effect)", async () => {
    const response = await answer(requester, await send(requester, 'ap-free', { mark: 'free' }, 'requester'));
    expect(response).toMatchObject({ status: 'success', output: { ran: 'free' } });
    expect(response.metadata['approval_id']).toBeUndefined();
  });

  it('granted through the CLI: listed by `approvals`, run once after `approve`, with metadata.approval_id', async () => {
    const rid = await send(
      requester,
      'ap-irreversible',
      { mark: 'granted', api_key: 'sk-live-0123456789', note: 'x'.repeat(3000) },
      'requester',
    );
    const approval = await approvalOf(requester, rid);
    expect(approval.context).toMatchObject({
      rid,
      tool: 'ap-irreversible',
      version: '1.0.0',
      requested_by: 'requester',
      approvers: ['operator'],
      policy: 'contract',
      input_hash: inputHash({ mark: 'granted', api_key: 'sk-live-0123456789', note: 'x'.repeat(3000) }),
    });
    // The preview is redacted and capped.
    expect(approval.context.input_preview).not.toContain('sk-live');
    expect(approval.context.input_preview).toContain('"api_key":"***REDACTED***"');
    expect(approval.context.input_preview).toMatch(/… \(\d+ more characters\)$/);
    expect(approval.context.input_preview.length).toBeLessThan(1100);
    const listed = await op(['approvals', 'json']);
    expect(listed).toMatchObject({ code: 0, err: '' });
    expect((JSON.parse(listed.out) as Array<{ id: string }>).find((a) => a.id === approval.id)).toMatchObject({
      tool: 'ap-irreversible',
      version: '1.0.0',
      requested_by: 'requester',
      approvers: ['operator'],
    });
    const table = await op(['approvals']);
    expect(table.out).toMatch(
      new RegExp(
        `^${approval.id}  ap-irreversible@1\\.0\\.0  requested by requester  expires in (59m \\d+s|1h 0m)  approvers operator$`,
        'm',
      ),
    );
    expect(await ran(requester, 'granted')).toBe(0);

    const approved = await op(['approve', approval.id, '--reason', 'looks fine']);
    expect(approved).toEqual({
      code: 0,
      out: `approved ${approval.id}: "ap-irreversible"@1.0.0 requested by requester (request ${rid})`,
      err: '',
    });
    const response = await answer(requester, rid);
    expect(response).toMatchObject({
      status: 'success',
      output: { ran: 'granted' },
      metadata: { approval_id: approval.id, approved_by: 'operator' },
    });
    expect(await ran(requester, 'granted')).toBe(1);
    // Decided once: a second decision is refused, and the approval is no longer listed.
    expect(await op(['deny', approval.id])).toEqual({
      code: 1,
      out: '',
      err: `tools-runner deny: approval "${approval.id}" for "ap-irreversible"@1.0.0 was already decided: approved by operator (looks fine)\n`,
    });
    expect((JSON.parse((await op(['approvals', 'json'])).out) as Array<{ id: string }>).map((a) => a.id)).not.toContain(
      approval.id,
    );
  });

  it('an unknown side effect under a side-effect list needs approval (fail closed); denied through the CLI: approval.required naming the operator and the reason, never run', async () => {
    const rid = await send(requester, 'ap-unknown-effect', { mark: 'denied' }, 'requester');
    const approval = await approvalOf(requester, rid);
    expect(await op(['deny', approval.id, '--reason', 'not today'])).toMatchObject({
      code: 0,
      out: `denied ${approval.id}: "ap-unknown-effect"@1.0.0 requested by requester (request ${rid})`,
    });
    const response = await answer(requester, rid);
    expect(response.error).toEqual({
      code: 'approval.required',
      message: `approval ${approval.id} for "ap-unknown-effect"@1.0.0 was denied by operator: not today`,
      retryable: false,
      details: {
        tool: 'ap-unknown-effect',
        approval_id: approval.id,
        decision: 'deny',
        approver: 'operator',
        reason: 'not today',
      },
    });
    expect(await ran(requester, 'denied')).toBe(0);
  });

  it('expired: no decision within timeout_ms answers approval.required (timeout = deny); approving afterwards is refused', async () => {
    const rid = await send(requester, 'ap-short', { mark: 'expired' }, 'requester');
    const approval = await approvalOf(requester, rid);
    const response = await answer(requester, rid);
    expect(response.error).toEqual({
      code: 'approval.required',
      message: `approval ${approval.id} for "ap-short"@1.0.0 timed out at ${approval.context.expires_at} with no decision from operator; timeout counts as deny`,
      retryable: false,
      details: {
        tool: 'ap-short',
        approval_id: approval.id,
        decision: 'timeout',
        expires_at: approval.context.expires_at,
      },
    });
    expect(Date.parse(approval.context.expires_at) - Date.parse(response.timestamp)).toBeLessThanOrEqual(0);
    expect(await op(['approve', approval.id])).toEqual({
      code: 1,
      out: '',
      err: `tools-runner approve: approval "${approval.id}" for "ap-short"@1.0.0 expired at ${approval.context.expires_at}; the request is answered approval.required (timeout counts as deny)\n`,
    });
    expect(await ran(requester, 'expired')).toBe(0);
  });

  it('an approval for other arguments (wrong input_hash) is refused; the approver must approve these arguments', async () => {
    const rid = await send(requester, 'ap-alice', { mark: 'args', amount: 10 }, 'requester');
    const approval = await approvalOf(requester, rid);
    expect(approval.context.approvers).toEqual(['alice']);
    const other = await alice.createBreadcrumb({
      title: 'approve',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [WS, `approval:${approval.id}`],
      context: { decision: 'approve', input_hash: inputHash({ mark: 'args', amount: 10_000 }) },
    });
    expect(await ignoredWhy(runner, other.id)).toBe(
      `for other arguments: input_hash "${inputHash({ mark: 'args', amount: 10_000 })}", the call's is ${approval.context.input_hash}`,
    );
    expect(await ran(requester, 'args')).toBe(0);
    await alice.createBreadcrumb({
      title: 'approve',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [WS, `approval:${approval.id}`],
      context: { decision: 'approve', input_hash: approval.context.input_hash },
    });
    const response = await answer(requester, rid);
    expect(response).toMatchObject({
      status: 'success',
      output: { ran: 'args' },
      metadata: { approval_id: approval.id, approved_by: 'alice' },
    });
  });

  it("responses from non-approvers are ignored: another agent, a forged operator seal, an edit of the approver's response; the operator may not decide for alice", async () => {
    const rid = await send(requester, 'ap-alice', { mark: 'strangers' }, 'requester');
    const approval = await approvalOf(requester, rid);
    const tags = [WS, `approval:${approval.id}`];
    const byMallory = await mallory.createBreadcrumb({
      title: 'approve',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags,
      context: { decision: 'approve', input_hash: approval.context.input_hash },
    });
    expect(await ignoredWhy(runner, byMallory.id)).toBe('written by "mallory", not an approver (approvers: alice)');
    const forged = await mallory.createBreadcrumb({
      title: 'approve',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags,
      context: {
        decision: 'approve',
        input_hash: approval.context.input_hash,
        approver: 'operator',
        approval_id: approval.id,
        decided_at: new Date().toISOString(),
        mac: 'forged',
      },
    });
    expect(await ignoredWhy(runner, forged.id)).toBe("claims to be the operator's but lacks a valid runner seal");
    // The requester claims to be alice in its tags and context: the store knows better.
    const spoofed = await requester.createBreadcrumb({
      title: 'approve',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [...tags, 'agent:alice'],
      context: { decision: 'approve', input_hash: approval.context.input_hash, approver: 'alice' },
    });
    expect(await ignoredWhy(runner, spoofed.id)).toBe('written by "requester", not an approver (approvers: alice)');
    // Alice's denial, turned into an approval by mallory.
    const edited = await alice.createBreadcrumb({
      title: 'deny',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: ['e2e:not-yet'],
      context: { decision: 'deny', input_hash: approval.context.input_hash },
    });
    await mallory.updateBreadcrumb(edited.id, {
      tags,
      context: { decision: 'approve', input_hash: approval.context.input_hash },
    });
    expect(await ignoredWhy(runner, edited.id)).toBe('edited by "mallory" after "alice" wrote it');
    expect(await op(['approve', approval.id])).toEqual({
      code: 1,
      out: '',
      err: `tools-runner approve: approval "${approval.id}" for "ap-alice"@1.0.0 may be decided only by alice, not by the operator\n`,
    });
    expect(await ran(requester, 'strangers')).toBe(0);
    const listed = JSON.parse((await op(['approvals', 'json'])).out) as Array<{ id: string }>;
    expect(listed.map((a) => a.id)).toContain(approval.id);
    // Alice's own denial counts.
    await alice.createBreadcrumb({
      title: 'deny',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags,
      context: { decision: 'deny', input_hash: approval.context.input_hash, reason: 'no budget' },
    });
    const response = await answer(requester, rid);
    expect(response.error?.message).toBe(`approval ${approval.id} for "ap-alice"@1.0.0 was denied by alice: no budget`);
    expect(await ran(requester, 'strangers')).toBe(0);
  });

  it('arguments swapped after the approval was requested: the approval does not carry over, the call is refused and never runs', async () => {
    const rid = await send(requester, 'ap-irreversible', { mark: 'swap', to: 'friend' }, 'requester');
    const approval = await approvalOf(requester, rid);
    const [item] = await requester
      .listBreadcrumbs({ schema_name: SCHEMA.ToolRequest, tag: WS, include_context: true, limit: 50 })
      .then((items) => items.filter((i) => i.context?.['requestId'] === rid));
    await requester.updateBreadcrumb(item!.id, {
      context: { tool: 'ap-irreversible', input: { mark: 'swap', to: 'attacker' }, requestId: rid },
    });
    expect(await op(['approve', approval.id])).toMatchObject({ code: 0 });
    const response = await answer(requester, rid);
    expect(response.error).toEqual({
      code: 'approval.required',
      message: `the input of request "${rid}" changed after approval ${approval.id} was requested (approval for ${approval.context.input_hash}, input now ${inputHash({ mark: 'swap', to: 'attacker' })}); send a new request`,
      retryable: false,
      details: { tool: 'ap-irreversible', approval_id: approval.id },
    });
    expect(await ran(requester, 'swap')).toBe(0);
  });

  it('a deleted approval request counts as denied (seen at the next look)', async () => {
    const rid = await send(requester, 'ap-alice', { mark: 'deleted' }, 'requester');
    const approval = await approvalOf(requester, rid);
    await mallory.deleteBreadcrumb(approval.id);
    // Any response tagged with the approval wakes the request.
    await alice.createBreadcrumb({
      title: 'approve',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [WS, `approval:${approval.id}`],
      context: { decision: 'approve', input_hash: approval.context.input_hash },
    });
    const response = await answer(requester, rid);
    expect(response.error?.message).toBe(
      `approval request ${approval.id} of request "${rid}" was deleted; a deleted approval request counts as denied`,
    );
    expect(await ran(requester, 'deleted')).toBe(0);
  });

  it("CLI errors: unknown id, a record that is not the runner's, usage", async () => {
    expect(await op(['approve', 'no-such-id'])).toEqual({
      code: 1,
      out: '',
      err: 'tools-runner approve: no approval request "no-such-id" (tools-runner approvals lists the waiting ones)\n',
    });
    const fake = await mallory.createBreadcrumb({
      title: 'Approval: ap-irreversible@1.0.0',
      schema_name: SCHEMA.ToolApprovalRequest,
      tags: [WS, TAG.Approval],
      context: {
        request_breadcrumb_id: 'x',
        rid: 'x',
        tool: 'ap-irreversible',
        version: '1.0.0',
        input_hash: 'sha256:00',
        input_preview: '{}',
        requested_by: 'mallory',
        approvers: ['operator'],
        policy: 'contract',
        expires_at: new Date(Date.now() + 60_000).toISOString(),
        mac: 'x',
      },
    });
    expect(await op(['approve', fake.id])).toEqual({
      code: 1,
      out: '',
      err: `tools-runner approve: "${fake.id}" is not an approval request of this runner: it does not carry this runner's seal (written or altered by someone else, or another runner secret)\n`,
    });
    const listed = await op(['approvals', 'json']);
    expect((JSON.parse(listed.out) as Array<{ id: string }>).map((a) => a.id)).not.toContain(fake.id);
    expect(listed.err).toMatch(/^tools-runner approvals: \d+ approval record\(s\) without this runner's seal left out/);
    expect(await op(['approve'])).toMatchObject({
      code: 2,
      err: 'usage: tools-runner approve <approval id> [--reason TEXT] [--as NAME]; tools-runner approvals lists the ids\n',
    });
  });

  it('--confirm-external-actions: a Runloop requires_confirmation tool waits for an approval instead of being refused, then runs and is audited', async () => {
    const rid = await send(requester, 'mail.send', { to: 'ops@example.com', password: 'hunter2-hunter2' }, 'requester');
    const approval = await approvalOf(requester, rid);
    expect(approval.context).toMatchObject({
      tool: 'mail.send',
      policy: 'confirm-external-actions',
      approvers: ['operator'],
      requested_by: 'requester',
    });
    expect(approval.context.input_preview).toBe('{"to":"ops@example.com","password":"***REDACTED***"}');
    expect(await op(['approve', approval.id])).toMatchObject({ code: 0 });
    const response = await answer(requester, rid);
    expect(response).toMatchObject({
      status: 'success',
      output: { input: { to: 'ops@example.com' } },
      metadata: { approval_id: approval.id, approved_by: 'operator', kind: 'host' },
    });
    const audit = readdirSync(auditDir)
      .flatMap((f) =>
        readFileSync(join(auditDir, f), 'utf8')
          .split('\n')
          .filter((l) => l !== ''),
      )
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(audit.filter((r) => r['tool'] === 'mail.send')).toEqual([
      expect.objectContaining({ outcome: 'ok', approval_id: approval.id }),
    ]);
  });
});

describe('approvals across a restart', () => {
  it('a waiting request survives the runner: approved while no runner runs, answered by the next one, with one approval record', async () => {
    const { url } = await startStoreProcess(tempDir());
    const c = agent(url, 'requester');
    let runner = await startRunner(url);
    await putTool(c, markerTool('ap-restart', { side_effect: 'irreversible', approval: { when: 'always' } }));
    const rid = await send(c, 'ap-restart', { mark: 'restart' }, 'requester');
    const approval = await approvalOf(c, rid);
    runner.signal('SIGTERM');
    expect(await runner.exited).toBe(0);
    // No runner now: the operator approves from the store alone.
    expect(await cli(['approve', approval.id, '--store-url', url])).toMatchObject({
      code: 0,
      out: `approved ${approval.id}: "ap-restart"@1.0.0 requested by requester (request ${rid})`,
    });
    expect(await ran(c, 'restart')).toBe(0);
    runner = await startRunner(url);
    const response = await answer(c, rid);
    expect(response).toMatchObject({
      status: 'success',
      output: { ran: 'restart' },
      metadata: { approval_id: approval.id },
    });
    expect(await ran(c, 'restart')).toBe(1);
    const records = (
      await c.listAll({ schema_name: SCHEMA.ToolApprovalRequest, tag: WS, include_context: true })
    ).filter((i) => i.context?.['rid'] === rid);
    expect(records.map((r) => r.id)).toEqual([approval.id]);
  });

  it('a request still waiting when the runner restarts is found again and parked on the same approval', async () => {
    const { url } = await startStoreProcess(tempDir());
    const c = agent(url, 'requester');
    let runner = await startRunner(url);
    await putTool(c, markerTool('ap-restart2', { side_effect: 'irreversible', approval: { when: 'always' } }));
    const rid = await send(c, 'ap-restart2', { mark: 'restart2' }, 'requester');
    const approval = await approvalOf(c, rid);
    runner.signal('SIGTERM');
    expect(await runner.exited).toBe(0);
    runner = await startRunner(url, [], { TOOLS_RUNNER_LOG_LEVEL: 'info' });
    // The new runner's scan finds the request and parks it on the same approval (no second record).
    await expect
      .poll(() => runner.stderr.join(''), { timeout: 30_000, interval: 50 })
      .toMatch(new RegExp(`"msg":"request parked".*"reason":"waiting for approval ${approval.id} `));
    expect(runner.stderr.join('')).not.toContain('"msg":"approval requested"');
    expect(await cli(['approve', approval.id, '--store-url', url])).toMatchObject({ code: 0 });
    const response = await answer(c, rid);
    expect(response).toMatchObject({ status: 'success', metadata: { approval_id: approval.id } });
    const records = (
      await c.listAll({ schema_name: SCHEMA.ToolApprovalRequest, tag: WS, include_context: true })
    ).filter((i) => i.context?.['rid'] === rid);
    expect(records).toHaveLength(1);
  });
});

describe('approvals on a store without auth', () => {
  it("agent decisions never count (the writer is not authenticated); the operator's sealed decision still does", async () => {
    const { url, runner } = await startRunnerWithStore();
    const c = agent(url, 'requester');
    const alice = agent(url, 'alice');
    await putTool(
      c,
      markerTool('ap-noauth', {
        side_effect: 'financial',
        approval: { when: 'always', approvers: ['alice', 'operator'] },
      }),
    );
    const rid = await send(c, 'ap-noauth', { mark: 'noauth' }, 'requester');
    const approval = await approvalOf(c, rid);
    const byAlice = await alice.createBreadcrumb({
      title: 'approve',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [WS, `approval:${approval.id}`],
      context: { decision: 'approve', input_hash: approval.context.input_hash },
    });
    expect(await ignoredWhy(runner, byAlice.id)).toBe(
      'the store does not authenticate writers (auth off), so agent decisions do not count',
    );
    expect(await ran(c, 'noauth')).toBe(0);
    expect(await cli(['approve', approval.id, '--store-url', url])).toMatchObject({ code: 0 });
    expect(await answer(c, rid)).toMatchObject({
      status: 'success',
      metadata: { approval_id: approval.id, approved_by: 'operator' },
    });
  });
});
