// Per-agent quotas (issue 39, item 4): the store keeps at most `agentQuotaRecords` records and
// `agentQuotaBytes` bytes of context of what one writer (`created_by`) created; beyond, a create (or
// a growing update of its own record) is refused 403 `quota.exceeded` naming the limit and the
// agent. Other writers are unaffected, exempt identities are never counted, deleting frees room,
// and on PostgreSQL concurrent creates of one agent never overshoot.

import { afterAll, describe, expect, it } from 'vitest';
import { createStoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { silentLogger } from '../../src/logger.js';
import { cleanupConsole, putTool, startConsoleService, toolContext, UPPER, WS } from '../console/helpers.js';
import { answer, request } from '../e2e/harness.js';
import { call, crumb, describeBackends, onCleanup, startStore } from './helpers.js';

const SECRET = 'quota-test-secret-0123456789abcdef';
type Headers = Record<string, string>;
const ADMIN = 'quota-admin-key';

async function tokenOf(url: string, agent: string): Promise<Record<string, string>> {
  const reply = await call(url, 'POST', '/auth/token', {
    body: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: agent },
    headers: { 'X-Admin-Key': ADMIN },
  });
  expect(reply.status).toBe(200);
  return { Authorization: `Bearer ${reply.body.token as string}` };
}

describeBackends('store: per-agent quotas', (backend) => {
  it('a writer past agentQuotaRecords is refused quota.exceeded; others, exempt writers and freed room are not', async () => {
    const store = await startStore({
      authSecret: SECRET,
      adminKey: ADMIN,
      agentQuotaRecords: 3,
      agentQuotaExempt: ['runner'],
    });
    const [alice, bob, runner] = (await Promise.all(['alice', 'bob', 'runner'].map((a) => tokenOf(store.url, a)))) as [
      Headers,
      Headers,
      Headers,
    ];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const reply = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { i } }), headers: alice });
      expect(reply.status).toBe(201);
      ids.push(reply.body.id as string);
    }
    const over = await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: alice });
    expect(over.status).toBe(403);
    expect(over.body).toMatchObject({
      code: 'quota.exceeded',
      error:
        'quota.exceeded: agent "alice" keeps 3 records in this store, its quota (--agent-quota-records 3); delete some of them or ask the operator to raise the quota',
      limit: 'agent-quota-records',
      agent: 'alice',
    });
    // An Idempotency-Key does not get past it either, and nothing was stored.
    const keyed = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb(),
      headers: { ...alice, 'Idempotency-Key': 'quota-k1' },
    });
    expect(keyed.status).toBe(403);
    const listed = await call(store.url, 'GET', '/breadcrumbs?tag=t:a', { headers: alice });
    expect(listed.body.length).toBe(3);
    // Another writer and an exempt one are unaffected.
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: bob })).status).toBe(201);
    for (let i = 0; i < 5; i++)
      expect((await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: runner })).status).toBe(201);
    // Deleting one of alice's records frees room for one more.
    expect((await call(store.url, 'DELETE', `/breadcrumbs/${ids[0]}`, { headers: alice })).status).toBe(200);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: alice })).status).toBe(201);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: alice })).status).toBe(403);
    void backend;
  });

  it('agentQuotaBytes bounds the context bytes a writer keeps, for creates and for updates that grow its records', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN, agentQuotaBytes: 200 });
    const alice = await tokenOf(store.url, 'alice');
    const body = (n: number) => crumb({ context: { pad: 'x'.repeat(n) } }); // 10 bytes of JSON around the pad
    const first = await call(store.url, 'POST', '/breadcrumbs', { body: body(90), headers: alice });
    expect(first.status).toBe(201);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: body(90), headers: alice })).status).toBe(201);
    const over = await call(store.url, 'POST', '/breadcrumbs', { body: body(1), headers: alice });
    expect(over.status).toBe(403);
    expect(over.body.code).toBe('quota.exceeded');
    expect(over.body.error).toBe(
      'quota.exceeded: agent "alice" keeps 200 bytes of context in this store; 11 more would pass its quota (--agent-quota-bytes 200); delete some of its records or ask the operator to raise the quota',
    );
    // Growing one of its records past the quota is refused; shrinking it is not, and frees room.
    const id = first.body.id as string;
    const grow = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, {
      body: { context: { pad: 'x'.repeat(91) } },
      headers: alice,
    });
    expect(grow.status).toBe(403);
    expect(grow.body.code).toBe('quota.exceeded');
    const shrink = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, {
      body: { context: { pad: 'x'.repeat(40) } },
      headers: alice,
    });
    expect(shrink.status).toBe(200);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: body(40), headers: alice })).status).toBe(201);
  });

  it('versions an update keeps in history count as records of their writer', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN, agentQuotaRecords: 3 });
    const alice = await tokenOf(store.url, 'alice');
    const id = (await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: alice })).body.id as string;
    const patch = (n: number) =>
      call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { context: { n } }, headers: alice });
    expect((await patch(2)).status).toBe(200);
    expect((await patch(3)).status).toBe(200); // one live record and two kept versions
    const over = await patch(4);
    expect(over.status).toBe(403);
    expect(over.body.error).toContain(
      'agent "alice" keeps 3 records in this store, its quota (--agent-quota-records 3)',
    );
    expect((await call(store.url, 'GET', `/breadcrumbs/${id}/history`, { headers: alice })).body.length).toBe(3); // the live version and two kept
    // Deleting the record takes its history with it: room again.
    expect((await call(store.url, 'DELETE', `/breadcrumbs/${id}`, { headers: alice })).status).toBe(200);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: alice })).status).toBe(201);
  });

  it('concurrent creates of one writer never pass its quota', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN, agentQuotaRecords: 5 });
    const alice = await tokenOf(store.url, 'alice');
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { i } }), headers: alice }),
      ),
    );
    expect(replies.filter((r) => r.status === 201).length).toBe(5);
    expect(replies.filter((r) => r.status === 403).length).toBe(25);
  });
});

describeBackends('store: what the runner creates for an agent', () => {
  it('counts a record the runner marks created-by:agent:<id> against that agent; a mark any other writer sets counts nothing', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN, agentQuotaRecords: 2, agentId: 'runner' });
    const [alice, bob, runner] = (await Promise.all(['alice', 'bob', 'runner'].map((a) => tokenOf(store.url, a)))) as [
      Headers,
      Headers,
      Headers,
    ];
    const marked = crumb({ tags: ['t:a', 'created-by:agent:alice'] });
    // bob's marks are bob's records: they fill bob's quota, not alice's.
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: marked, headers: bob })).status).toBe(201);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: marked, headers: bob })).status).toBe(201);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: marked, headers: bob })).status).toBe(403);
    // The runner's marked records count against alice, with her own.
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: marked, headers: runner })).status).toBe(201);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: alice })).status).toBe(201);
    const over = await call(store.url, 'POST', '/breadcrumbs', { body: marked, headers: runner });
    expect(over.status).toBe(403);
    expect(over.body.error).toContain('agent "alice" keeps 2 records in this store');
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: alice })).status).toBe(403);
    // Unmarked, the runner's own records are never counted.
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: runner })).status).toBe(201);
  });
});

describeBackends("store: retention of agents' own records", () => {
  it("removes an agent's untouched records after agentRetentionMs; the runner's, tool.* records, ttl records and rewritten ones stay", async () => {
    const G = 60_000;
    const store = await startStore({
      authSecret: SECRET,
      adminKey: ADMIN,
      agentRetentionMs: G,
      agentId: 'runner',
      pruneIntervalMs: 3_600_000,
    });
    const [alice, bob, runner] = (await Promise.all(['alice', 'bob', 'runner'].map((a) => tokenOf(store.url, a)))) as [
      Headers,
      Headers,
      Headers,
    ];
    const make = async (headers: Record<string, string>, extra: Record<string, unknown> = {}) => {
      const reply = await call(store.url, 'POST', '/breadcrumbs', { body: crumb(extra), headers });
      expect(reply.status).toBe(201);
      return reply.body.id as string;
    };
    const old = [await make(alice), await make(bob, { schema_name: 'note.v1' })];
    const kept = {
      runner: await make(runner),
      tool: await make(alice, { schema_name: 'tool.request.v1', context: { tool: 'x', input: {}, requestId: 'r1' } }),
      ttl: await make(alice, { ttl: new Date(Date.now() + 100 * G).toISOString() }),
      rewritten: await make(alice),
    };
    const writtenMs = async (id: string) =>
      Date.parse((await call(store.url, 'GET', `/breadcrumbs/${id}/full`, { headers: runner })).body.updated_at);
    const exists = async (id: string) =>
      (await call(store.url, 'GET', `/breadcrumbs/${id}`, { headers: runner })).status === 200;
    const createdMs = await writtenMs(kept.rewritten);
    // Within the retention nothing goes.
    expect((await store.retention.sweep(createdMs + G / 2)).removed).toBe(0);
    // One record written again later is judged from its last write (the clock first moves past the creates).
    while (Date.now() <= createdMs) await new Promise((resolve) => setImmediate(resolve));
    const patched = await call(store.url, 'PATCH', `/breadcrumbs/${kept.rewritten}`, {
      body: { context: { again: true } },
      headers: alice,
    });
    expect(patched.status).toBe(200);
    const swept = await store.retention.sweep((await writtenMs(kept.rewritten)) + G);
    expect(swept.removed).toBe(2);
    for (const id of old) expect(await exists(id)).toBe(false);
    for (const id of Object.values(kept)) expect(await exists(id)).toBe(true);
  });
});

describe('per-agent quotas in the service', () => {
  afterAll(cleanupConsole);
  it('an agent over its quota cannot write another request; the runner answering it is never counted', async () => {
    const { service, client } = await startConsoleService({ agentQuotaRecords: 3 });
    const alice = createStoreClient({
      baseUrl: service.storeUrl,
      logger: silentLogger(),
      auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'alice' } },
    });
    onCleanup(() => alice.close());
    await putTool(alice, toolContext('upper', UPPER)); // alice's first record
    const rids = [await request(alice, 'upper', { text: 'a' }), await request(alice, 'upper', { text: 'b' })];
    for (const rid of rids) expect((await answer(client, rid)).output).toEqual({ text: rid === rids[0] ? 'A' : 'B' });
    const refused = await alice
      .createBreadcrumb({
        title: 'Request: upper',
        schema_name: SCHEMA.ToolRequest,
        tags: [TAG.Request, WS],
        context: { tool: 'upper', input: { text: 'c' }, requestId: 'over-quota' },
      })
      .then(
        () => undefined,
        (error: unknown) => error as { status: number; storeCode: string; message: string },
      );
    expect(refused).toMatchObject({ status: 403, storeCode: 'quota.exceeded' });
    expect(refused?.message).toContain(
      'agent "alice" keeps 3 records in this store, its quota (--agent-quota-records 3)',
    );
    // What a tool creates through context.api counts against its caller (stored by the runner, marked
    // for them): bob's tool definition and request are 2 of his 3, so one of four creations fits.
    const bob = createStoreClient({
      baseUrl: service.storeUrl,
      logger: silentLogger(),
      auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'bob' } },
    });
    onCleanup(() => bob.close());
    await putTool(
      bob,
      toolContext(
        'spray',
        `export async function execute(input, context) {
          const outcomes = [];
          for (let i = 0; i < 4; i++)
            outcomes.push(await context.api.createBreadcrumb({ title: 'spray', schema_name: 'q.spray.v1', tags: ['q'], context: { i } }).then(() => 'ok', (e) => e.message));
          return { text: JSON.stringify(outcomes) };
        }`,
        { permissions: { net: false, breadcrumbs: { write: ['q.spray.v1'] } } },
      ),
    );
    const sprayed = await answer(client, await request(bob, 'spray', { text: 'go' }));
    const outcomes = JSON.parse((sprayed.output as { text: string }).text) as string[];
    expect(outcomes[0]).toBe('ok');
    for (const refusal of outcomes.slice(1))
      expect(refusal).toContain('agent "bob" keeps 3 records in this store, its quota (--agent-quota-records 3)');
    expect((await client.listAll({ schema_name: 'q.spray.v1' })).length).toBe(1);
  }, 60_000);
});
