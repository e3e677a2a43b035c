// Approvals with separation of duties and several approvers (issue 22 point 3), against a runner whose
// store has auth on (agent decisions count by their verified writer) and the operator's CLI with
// `--as <name>`. Self-approval under `separation_of_duties` never counts: the call waits and times
// out (approval.required) unless another approver approves. `min_approvers: 2`: one approval is not
// enough, two distinct ones are, and the same approver twice counts once.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import {
  SCHEMA,
  TAG,
  ToolApprovalRequestContext,
  type ToolApprovalRequestContext as ApprovalContext,
} from '../../src/breadcrumbs/messages.js';
import { silentLogger } from '../../src/logger.js';
import { answer, cleanupAll, runCli, startRunnerWithStore, toolContext, WS, type CliProcess } from './harness.js';

const OWNER = '00000000-0000-0000-0000-000000000001';
const ADMIN_KEY = 'e2e-admin-key-duties';
const AUTH = ['--auth-secret', 'e2e-auth-secret-duties-0123456789', '--admin-key', ADMIN_KEY];

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

const MARKER = `export async function execute(input, context) {
  await context.api.createBreadcrumb({ title: 'ran', schema_name: 'e2e.ran.v1', tags: ['ran:' + input.mark], context: {} });
  return { ran: input.mark };
}`;

let url: string;
let runner: CliProcess;
let alice: StoreClient;
let bob: StoreClient;
let carolAgent: StoreClient;

beforeAll(async () => {
  ({ url, runner } = await startRunnerWithStore(AUTH, { TOOLS_RUNNER_LOG_LEVEL: 'info' }));
  alice = agent(url, 'alice');
  bob = agent(url, 'bob');
  // an agent whose id is the operator identity `operator:carol` (minted with the admin key)
  carolAgent = agent(url, 'operator:carol');
  const put = (name: string, approval: Record<string, unknown>) =>
    alice.createBreadcrumb({
      title: name,
      schema_name: SCHEMA.ToolCode,
      tags: [TAG.Tool, TAG.tool(name), WS],
      context: toolContext(name, MARKER, {
        permissions: { net: false, api: 'write' },
        contract: { side_effect: 'financial', approval },
      }),
    });
  await put('sod', { when: 'always', approvers: ['alice', 'bob'], separation_of_duties: true });
  await put('sod-short', {
    when: 'always',
    approvers: ['alice', 'bob'],
    separation_of_duties: true,
    timeout_ms: 10_000,
  });
  await put('sod-operator', { when: 'always', approvers: ['operator'], separation_of_duties: true });
  await put('two-agents', { when: 'always', approvers: ['alice', 'bob', 'dave'], min_approvers: 2 });
  await put('two-operators', { when: 'always', min_approvers: 2 });
}, 60_000);

afterAll(async () => {
  for (const c of opened.splice(0)) c.close();
  await cleanupAll();
});

async function send(c: StoreClient, tool: string, mark: string): Promise<string> {
  const rid = crypto.randomUUID();
  await c.createBreadcrumb({
    title: `Request: ${tool}`,
    schema_name: SCHEMA.ToolRequest,
    tags: [TAG.Request, WS, TAG.agent('someone')],
    context: { tool, input: { mark }, requestId: rid },
  });
  return rid;
}

async function approvalOf(c: StoreClient, rid: string): Promise<{ id: string; context: ApprovalContext }> {
  let found: { id: string; context: ApprovalContext } | undefined;
  await expect
    .poll(
      async () => {
        const item = (
          await c.listAll({ schema_name: SCHEMA.ToolApprovalRequest, tag: WS, include_context: true })
        ).find((i) => i.context?.['rid'] === rid);
        if (item) found = { id: item.id, context: ToolApprovalRequestContext.parse(item.context) };
        return found !== undefined;
      },
      { timeout: 30_000, interval: 100 },
    )
    .toBe(true);
  return found!;
}

function approve(
  c: StoreClient,
  approval: { id: string; context: ApprovalContext },
  decision: 'approve' | 'deny' = 'approve',
) {
  return c.createBreadcrumb({
    title: decision,
    schema_name: SCHEMA.ToolApprovalResponse,
    tags: [WS, `approval:${approval.id}`],
    context: { decision, input_hash: approval.context.input_hash },
  });
}

async function ran(mark: string): Promise<number> {
  return (await alice.listBreadcrumbs({ tag: `ran:${mark}`, limit: 10 })).length;
}

async function ignoredWhy(responseId: string): Promise<string> {
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

/** How many times the runner parked request `rid` with a reason matching `pattern`. */
function parkedCount(rid: string, pattern: RegExp): number {
  return runner.stderr
    .join('')
    .split('\n')
    .filter((l) => l.includes('"msg":"request parked"') && l.includes(rid) && pattern.test(l)).length;
}

async function cli(args: string[]): Promise<{ code: number | string; out: string; err: string }> {
  const proc = runCli([...args, '--store-url', url, '--admin-key', ADMIN_KEY]);
  const code = await proc.exited;
  return { code, out: proc.stdout.join('\n'), err: proc.stderr.join('') };
}

describe('separation of duties', () => {
  it('the requester approving her own call is ignored; the call keeps waiting and times out (approval.required), never run', async () => {
    const rid = await send(bob, 'sod-short', 'self-timeout');
    const approval = await approvalOf(bob, rid);
    expect(approval.context).toMatchObject({ requested_by: 'bob', separation_of_duties: true });
    const self = await approve(bob, approval);
    expect(await ignoredWhy(self.id)).toBe('separation of duties: "bob" requested this call and may not approve it');
    const response = await answer(bob, rid);
    expect(response.error).toMatchObject({
      code: 'approval.required',
      details: { decision: 'timeout', approval_id: approval.id },
    });
    expect(response.error?.message).toMatch(
      /timed out at .* with no decision from alice, bob; timeout counts as deny$/,
    );
    expect(await ran('self-timeout')).toBe(0);
  });

  it("another approver's approval runs it (the requester's own approval alongside does not count)", async () => {
    const rid = await send(bob, 'sod', 'other-approves');
    const approval = await approvalOf(bob, rid);
    const self = await approve(bob, approval);
    expect(await ignoredWhy(self.id)).toBe('separation of duties: "bob" requested this call and may not approve it');
    expect(await ran('other-approves')).toBe(0);
    await approve(alice, approval);
    expect(await answer(bob, rid)).toMatchObject({
      status: 'success',
      output: { ran: 'other-approves' },
      metadata: { approval_id: approval.id, approved_by: 'alice' },
    });
    expect(await ran('other-approves')).toBe(1);
  });

  it('the operator deciding as the requester (--as) is refused by the CLI; another operator name approves', async () => {
    const rid = await send(carolAgent, 'sod-operator', 'operator-self');
    const approval = await approvalOf(carolAgent, rid);
    expect(approval.context.requested_by).toBe('operator:carol');
    expect(await cli(['approve', approval.id, '--as', 'carol'])).toEqual({
      code: 1,
      out: '',
      err: `tools-runner approve: approval "${approval.id}" for "sod-operator"@1.0.0 was requested by operator:carol; separation of duties: the requester may not approve it (another approver must)\n`,
    });
    expect(await cli(['approve', approval.id, '--as', 'not a name!'])).toMatchObject({
      code: 2,
      err: 'tools-runner approve: --as must be 1-64 characters of A-Z a-z 0-9 . _ @ -, got "not a name!"\n',
    });
    expect(await cli(['approve', approval.id, '--as', 'dana'])).toMatchObject({
      code: 0,
      out: `approved ${approval.id} as operator:dana: "sod-operator"@1.0.0 requested by operator:carol (request ${rid})`,
    });
    expect(await answer(carolAgent, rid)).toMatchObject({
      status: 'success',
      metadata: { approved_by: 'operator:dana' },
    });
  });
});

describe('min_approvers', () => {
  it('agents: one approval is not enough, the same approver twice counts once, a second distinct approver runs it', async () => {
    const rid = await send(bob, 'two-agents', 'two-agents');
    const approval = await approvalOf(bob, rid);
    expect(approval.context.min_approvers).toBe(2);
    await approve(alice, approval);
    await expect
      .poll(() => parkedCount(rid, /\(1 of 2 distinct approvals so far\)/), { timeout: 30_000, interval: 50 })
      .toBeGreaterThanOrEqual(1);
    await approve(alice, approval);
    await expect
      .poll(() => parkedCount(rid, /\(1 of 2 distinct approvals so far\)/), { timeout: 30_000, interval: 50 })
      .toBeGreaterThanOrEqual(2);
    expect(await ran('two-agents')).toBe(0);
    await approve(bob, approval); // the requester is an approver here: no separation of duties asked
    expect(await answer(bob, rid)).toMatchObject({
      status: 'success',
      output: { ran: 'two-agents' },
      metadata: { approved_by: 'alice, bob' },
    });
  });

  it('operators: two distinct --as names are needed; the same name twice is refused; a denial still wins', async () => {
    const rid = await send(bob, 'two-operators', 'two-operators');
    const approval = await approvalOf(bob, rid);
    expect(await cli(['approve', approval.id, '--as', 'carol'])).toMatchObject({
      code: 0,
      out: `approved ${approval.id} as operator:carol: "two-operators"@1.0.0 requested by bob (request ${rid}); 1 of 2 distinct approvals`,
    });
    await expect
      .poll(() => parkedCount(rid, /\(1 of 2 distinct approvals so far\)/), { timeout: 30_000, interval: 50 })
      .toBeGreaterThanOrEqual(1);
    expect(await cli(['approve', approval.id, '--as', 'carol'])).toMatchObject({
      code: 1,
      err: `tools-runner approve: approval "${approval.id}" for "two-operators"@1.0.0 was already approved by operator:carol; it needs 2 distinct approvers (so far: operator:carol)\n`,
    });
    expect(await ran('two-operators')).toBe(0);
    const listed = JSON.parse((await cli(['approvals', 'json'])).out) as Array<Record<string, unknown>>;
    expect(listed.find((a) => a['id'] === approval.id)).toMatchObject({
      requested_by: 'bob',
      min_approvers: 2,
      approved_by: ['operator:carol'],
    });
    expect((await cli(['approvals'])).out).toContain(
      `${approval.id}  two-operators@1.0.0  requested by bob  expires in `,
    );
    expect((await cli(['approvals'])).out).toMatch(
      new RegExp(`^${approval.id} .* approvers operator  1 of 2 approvals \\(operator:carol\\)$`, 'm'),
    );
    expect(await cli(['approve', approval.id, '--as', 'dana'])).toMatchObject({ code: 0 });
    expect(await answer(bob, rid)).toMatchObject({
      status: 'success',
      metadata: { approved_by: 'operator:carol, operator:dana' },
    });

    const denied = await send(bob, 'two-operators', 'two-operators-denied');
    const second = await approvalOf(bob, denied);
    expect(await cli(['approve', second.id, '--as', 'carol'])).toMatchObject({ code: 0 });
    expect(await cli(['deny', second.id, '--as', 'erin', '--reason', 'no'])).toMatchObject({ code: 0 });
    expect((await answer(bob, denied)).error).toMatchObject({
      code: 'approval.required',
      message: `approval ${second.id} for "two-operators"@1.0.0 was denied by operator:erin: no`,
    });
    expect(await ran('two-operators-denied')).toBe(0);
  });
});
