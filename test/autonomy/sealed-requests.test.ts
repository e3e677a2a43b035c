// Sealed nested requests (issue 39, breach 1): alice's tool calls `pay` through context.tools.call
// with an idempotency key; bob reads the nested tool.request.v1, changes one field and posts the copy.
// Before, the origin MAC covered only rid, tool, input and origin, so a copy without the idempotency
// key verified and ran `pay` again as alice. Now every field that changes what runs, as whom or how
// often is sealed, and with store auth on a sealed request must be stored by the runner's own
// identity: each changed copy is answered permission.denied — bob's (not the runner's writer) and
// one stored with the runner's own token (the seal) — and `pay` runs once. The exact copy stays
// deduplicated (the idempotency key replays the first answer).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import {
  SCHEMA,
  TAG,
  ToolResponseContext,
  type ToolResponseContext as Response,
} from '../../src/breadcrumbs/messages.js';
import { silentLogger } from '../../src/logger.js';
import { cleanupAll, startRunnerWithStore, toolContext, WS } from '../e2e/harness.js';

const OWNER = '00000000-0000-0000-0000-000000000001';
const ADMIN_KEY = 'e2e-admin-key-sealed';
const AUTH = ['--auth-secret', 'e2e-auth-secret-sealed-0123456789', '--admin-key', ADMIN_KEY];

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

// `pay` returns a value only a real run produces; `checkout` pays through a nested call with a key.
const PAY =
  'export async function execute(input, context) { return { paid: input.amount, who: context.request.agentId ?? null, run: crypto.randomUUID() }; }';
const CHECKOUT =
  'export async function execute(input, context) { return await context.tools.call("pay", { amount: input.amount }, { idempotencyKey: input.key }); }';

interface Record_ {
  id: string;
  tags: string[];
  context: Record<string, unknown>;
}

/** Installs pay and checkout as `owner`, runs checkout once; returns the nested pay request. */
async function payOnce(owner: StoreClient, reader: StoreClient): Promise<Record_> {
  const put = (context: Record<string, unknown>) =>
    owner.createBreadcrumb({
      title: String(context['name']),
      schema_name: SCHEMA.ToolCode,
      tags: [TAG.Tool, TAG.tool(String(context['name'])), WS],
      context,
    });
  await put(toolContext('pay', PAY, { contract: { side_effect: 'irreversible', idempotent: true } }));
  await put(
    toolContext('checkout', CHECKOUT, {
      permissions: { net: false, tools: ['pay'] },
      // a deadline far off: a copy is judged by its seal, not by a passed deadline
      limits: { timeout_ms: 300_000, memory_mb: 64 },
    }),
  );
  const { id } = await owner.createBreadcrumb({
    title: 'Request: checkout',
    schema_name: SCHEMA.ToolRequest,
    tags: [TAG.Request, WS],
    context: { tool: 'checkout', input: { amount: 10, key: 'invoice-1' }, requestId: crypto.randomUUID() },
  });
  const parent = await answerOf(owner, id, 90_000);
  expect(parent.error).toBeUndefined();
  expect(parent).toMatchObject({ status: 'success', output: { paid: 10 } });
  // the other agent can read the nested request (the breach's premise)
  const nested = (await reader.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS, include_context: true })).filter(
    (r) => (r.context?.['origin'] as { parent_breadcrumb_id?: string } | undefined)?.parent_breadcrumb_id === id,
  );
  expect(nested).toHaveLength(1);
  return nested[0] as Record_;
}

/** The runner's answer to the request breadcrumb `id` (any rid), polled until it is there. */
async function answerOf(c: StoreClient, id: string, timeoutMs = 30_000): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const items = await c.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true });
    const found = items
      .map((i) => ToolResponseContext.parse(i.context))
      .find((r) => r.metadata['request_breadcrumb_id'] === id);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no answer to request breadcrumb ${id} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Real runs of `pay` (a replay repeats a run's value; a refusal has none). */
async function payRuns(c: StoreClient): Promise<number> {
  const items = await c.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true });
  const runs = items
    .map((i) => ToolResponseContext.parse(i.context))
    .filter((r) => r.tool === 'pay' && r.status === 'success')
    .map((r) => (r.output as { run: string }).run);
  return new Set(runs).size;
}

/** Posts `record` again as `c` with `edit` applied to a copy of its context; returns the new breadcrumb's id. */
async function repost(
  c: StoreClient,
  record: Record_,
  edit: (context: Record<string, unknown>, origin: Record<string, unknown>) => void,
): Promise<string> {
  const context = structuredClone(record.context);
  edit(context, context['origin'] as Record<string, unknown>);
  const { id } = await c.createBreadcrumb({
    title: 'Request: pay',
    schema_name: SCHEMA.ToolRequest,
    tags: record.tags,
    context,
  });
  return id;
}

const SEAL_REFUSED = /^context\.origin of request "[^"]+" is not the runner's seal of this request/;

// One changed field per row: what runs (tool, version, input), as whom (agent, writer) or how often
// (idempotency key, rid, isolation), and the chain's bounds (deadline, depth, parent).
const FIELDS: Array<[string, (context: Record<string, unknown>, origin: Record<string, unknown>) => void]> = [
  ['the idempotency_key deleted (the breach)', (c) => delete c['idempotency_key']],
  ['another idempotency_key', (c) => (c['idempotency_key'] = 'invoice-2')],
  ['another tool', (c) => (c['tool'] = 'checkout')],
  ['a version', (c) => (c['version'] = '1.0.0')],
  ['another input', (c) => (c['input'] = { amount: 1000 })],
  ['isolation: process', (c) => (c['isolation'] = 'process')],
  ['another requestId (rid)', (c) => (c['requestId'] = crypto.randomUUID())],
  ['a later deadline', (_c, o) => (o['deadline_at'] = (o['deadline_at'] as number) + 3_600_000)],
  ['depth 0', (_c, o) => (o['depth'] = 0)],
  ['another parent rid', (_c, o) => (o['parent_rid'] = crypto.randomUUID())],
  ['another parent tool', (_c, o) => (o['parent_tool'] = 'pay')],
  ['another agent', (_c, o) => (o['agent'] = 'bob')],
  ['another writer', (_c, o) => (o['writer'] = 'bob')],
];

describe('sealed nested requests, store auth on', () => {
  let alice: StoreClient;
  let bob: StoreClient;
  let runnerIdentity: StoreClient;
  let nested: Record_;

  beforeAll(async () => {
    const { url } = await startRunnerWithStore(AUTH);
    alice = agent(url, 'alice');
    bob = agent(url, 'bob');
    // the runner's own identity (--agent-id's default): what any writer is when the store cannot tell
    runnerIdentity = agent(url, 'tools-runner');
    nested = await payOnce(alice, bob);
    expect(nested.context['idempotency_key']).toBe('invoice-1');
    expect(nested.context['origin']).toMatchObject({ kind: 'call', agent: 'alice' });
  }, 120_000);

  afterAll(async () => {
    for (const c of opened.splice(0)) c.close();
    await cleanupAll();
  });

  it.each(FIELDS)(
    'a copy with %s is permission.denied, by bob or by the runner identity',
    async (_f, edit) => {
      const byBob = await answerOf(bob, await repost(bob, nested, edit));
      expect(byBob.error?.code).toBe('permission.denied');
      const byRunner = await answerOf(bob, await repost(runnerIdentity, nested, edit));
      expect(byRunner.error?.code).toBe('permission.denied');
      expect(byRunner.error?.message).toMatch(SEAL_REFUSED);
      expect(await payRuns(alice)).toBe(1);
    },
    60_000,
  );

  it("the nested request names the runner's store identity as its writer (sealed)", () => {
    expect(nested.context['origin']).toMatchObject({ writer: 'tools-runner' });
  });

  it("bob's exact copy is refused (not the runner's writer); the runner's own copy replays the first answer", async () => {
    const byBob = await answerOf(bob, await repost(bob, nested, () => {}));
    expect(byBob.error).toMatchObject({ code: 'permission.denied' });
    expect(byBob.error?.message).toContain(
      `was stored by "bob", not by the runner's own identity ("tools-runner"): only the runner writes sealed requests`,
    );
    const again = await answerOf(bob, await repost(runnerIdentity, nested, () => {}));
    expect(again.status).toBe('success');
    expect(again.metadata['replayed_from']).toMatchObject({ rid: nested.context['requestId'] });
    expect(await payRuns(alice)).toBe(1);
  }, 60_000);

  it('a forged origin is refused, not run as its writer', async () => {
    const { id } = await bob.createBreadcrumb({
      title: 'Request: pay',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, WS],
      context: {
        tool: 'pay',
        input: { amount: 1 },
        requestId: crypto.randomUUID(),
        origin: { kind: 'call', agent: 'alice', depth: 1, chain: ['checkout'], mac: 'A'.repeat(43) },
      },
    });
    const got = await answerOf(bob, id);
    expect(got.error?.code).toBe('permission.denied');
    expect(got.error?.message).toMatch(SEAL_REFUSED);
    expect(await payRuns(alice)).toBe(1);
  }, 60_000);
});

describe('sealed nested requests, store auth off (everyone is one principal)', () => {
  let c: StoreClient;
  let nested: Record_;

  beforeAll(async () => {
    const { url } = await startRunnerWithStore();
    c = agent(url, 'anyone');
    nested = await payOnce(c, c);
  }, 120_000);

  afterAll(async () => {
    for (const x of opened.splice(0)) x.close();
    await cleanupAll();
  });

  it('the copy without its idempotency key is refused; the exact copy is deduplicated', async () => {
    const breach = await answerOf(c, await repost(c, nested, (context) => delete context['idempotency_key']));
    expect(breach.error?.code).toBe('permission.denied');
    expect(breach.error?.message).toMatch(SEAL_REFUSED);
    const exact = await answerOf(c, await repost(c, nested, () => {}));
    expect(exact.status).toBe('success');
    expect(exact.metadata['replayed_from']).toMatchObject({ rid: nested.context['requestId'] });
    expect(await payRuns(c)).toBe(1);
  }, 60_000);
});
