// What bounds autonomy per writer and per causal chain (issue 39, item 3): an agent owner's
// subscriptions beyond `subscriptionMaxPerOwner` are refused (said in /autonomy); one seed in a
// subscription ping-pong between two agent tools writes at most `subscriptionChainMaxRecords`
// records, the runs over it are refused `rate.exceeded`, and the service keeps serving.

import { afterAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { silentLogger } from '../../src/logger.js';
import { cleanupConsole, startConsoleService, toolContext, until, UPPER, WS } from '../console/helpers.js';
import { answer, request } from '../e2e/harness.js';

afterAll(cleanupConsole);

const clients: StoreClient[] = [];
afterAll(() => clients.forEach((c) => c.close()));

/** A store client writing as agent `agent` (its token's subject is the records' `created_by`). */
function agentClient(storeUrl: string, agent: string): StoreClient {
  const c = createStoreClient({
    baseUrl: storeUrl,
    logger: silentLogger(),
    auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: agent } },
  });
  clients.push(c);
  return c;
}

/** A tool.code.v1 with an empty input schema, written straight into the store by `c`. */
async function putAgentTool(c: StoreClient, name: string, source: string, extra: Record<string, unknown>) {
  await c.createBreadcrumb({
    title: name,
    schema_name: SCHEMA.ToolCode,
    tags: [TAG.Tool, TAG.tool(name), WS],
    context: toolContext(name, source, {
      input_schema: { type: 'object', properties: {} },
      output_schema: { type: 'object' },
      examples: [{ description: 'runs', input: {}, output: {}, match: 'schema' }],
      ...extra,
    }),
  });
}

interface SubStatus {
  id: string;
  tool: string;
  owner: string;
  state: string;
  reason?: string;
  triggered: number;
}

const subscriptionsOf = async (adminUrl: string): Promise<SubStatus[]> =>
  ((await (await fetch(`${adminUrl}/api/extensions/autonomy`)).json()) as { subscriptions: SubStatus[] }).subscriptions;

const answersOf = async (c: StoreClient, tool: string) =>
  (await c.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true }))
    .map((a) => a.context as { tool: string; status: string; error?: { code: string; message: string } })
    .filter((a) => a.tool === tool);

describe('subscriptions per owner', () => {
  it('an agent owner over subscriptionMaxPerOwner has its newer subscriptions refused; another owner is served', async () => {
    const { service, adminUrl } = await startConsoleService({ subscriptionMaxPerOwner: 2 });
    const alice = agentClient(service.storeUrl, 'alice');
    const bob = agentClient(service.storeUrl, 'bob');
    const sub = { schema_name: 'cap.event.v1' };
    const grant = { net: false, breadcrumbs: { read: ['cap.event.v1'] } };
    const source = 'export async function execute() { return { ran: true }; }';
    for (const name of ['cap-a', 'cap-b', 'cap-c'])
      await putAgentTool(alice, name, source, { permissions: grant, subscriptions: [sub] });
    await putAgentTool(bob, 'cap-bob', source, { permissions: grant, subscriptions: [sub] });
    const subs = await until(async () => {
      const s = await subscriptionsOf(adminUrl);
      return s.length === 4 ? s : undefined;
    }, 'the four subscriptions');
    const byTool = new Map(subs.map((s) => [s.tool, s]));
    expect(byTool.get('cap-a')).toMatchObject({ owner: 'agent:alice', state: 'active' });
    expect(byTool.get('cap-b')).toMatchObject({ owner: 'agent:alice', state: 'active' });
    expect(byTool.get('cap-c')).toMatchObject({
      owner: 'agent:alice',
      state: 'refused',
      reason: 'agent:alice has 3 subscriptions; at most 2 are served (subscriptionMaxPerOwner)',
    });
    expect(byTool.get('cap-bob')).toMatchObject({ owner: 'agent:bob', state: 'active' });
    // One event: the three served subscriptions run, the refused one does not.
    await bob.createBreadcrumb({ title: 'go', schema_name: 'cap.event.v1', tags: ['cap'], context: {} });
    for (const tool of ['cap-a', 'cap-b', 'cap-bob'])
      await until(async () => ((await answersOf(bob, tool)).length > 0 ? true : undefined), `a run of ${tool}`);
    const after = new Map((await subscriptionsOf(adminUrl)).map((s) => [s.tool, s]));
    expect(after.get('cap-c')?.triggered).toBe(0);
    expect(await answersOf(bob, 'cap-c')).toEqual([]);
  }, 120_000);
});

describe('one causal chain of triggers', () => {
  it('a ping-pong between two agent tools writes at most subscriptionChainMaxRecords records; the service keeps serving', async () => {
    const MAX = 20;
    const PER_RUN = 5;
    const { service, client } = await startConsoleService({ subscriptionChainMaxRecords: MAX });
    const mallory = agentClient(service.storeUrl, 'mallory');
    // Each tool answers every record of the other's schema with PER_RUN records of its own: without a
    // bound on the chain, depth 4 lets one seed make 5 + 25 + 125 + 625 records.
    for (const [name, mine, theirs] of [
      ['ping', 'pp.ping.v1', 'pp.pong.v1'],
      ['pong', 'pp.pong.v1', 'pp.ping.v1'],
    ] as const)
      await putAgentTool(
        mallory,
        name,
        `export async function execute(input, context) {
          for (let i = 0; i < ${PER_RUN}; i++)
            await context.api.createBreadcrumb({ title: '${name} ' + i, schema_name: '${mine}', tags: ['pp'], context: { i } });
          return { wrote: ${PER_RUN} };
        }`,
        {
          permissions: { net: false, breadcrumbs: { read: [theirs], write: [mine] } },
          subscriptions: [{ schema_name: theirs }],
        },
      );
    await putAgentTool(client, 'upper', UPPER, {
      input_schema: { type: 'object', properties: { text: { type: 'string', description: 'a text' } } },
      examples: [{ description: 'shouts', input: { text: 'hi' }, output: { text: 'HI' }, match: 'exact' }],
    });
    const status = async () =>
      ((await (await fetch(`${service.adminUrl}/api/extensions/autonomy`)).json()) as { subscriptions: unknown[] })
        .subscriptions.length;
    await until(async () => ((await status()) === 2 ? true : undefined), 'both subscriptions');
    await mallory.createBreadcrumb({ title: 'seed', schema_name: 'pp.pong.v1', tags: ['pp'], context: {} });

    const chainRecords = async () =>
      [
        ...(await client.listAll({ schema_name: 'pp.ping.v1', include_context: false })),
        ...(await client.listAll({ schema_name: 'pp.pong.v1', include_context: false })),
      ].filter((r) => r.title !== 'seed');
    const runs = async () => [...(await answersOf(client, 'ping')), ...(await answersOf(client, 'pong'))];
    const requests = async () =>
      (await client.listAll({ schema_name: SCHEMA.ToolRequest, tag: TAG.Request, include_context: true })).filter(
        (r) => r.context?.['tool'] === 'ping' || r.context?.['tool'] === 'pong',
      ).length;
    // The chain ends when it has written MAX records and every run its records triggered (one per
    // record below the depth limit, and the seed's) has its answer; it fails at once past MAX.
    const depthOf = (tags: string[]) =>
      Number(tags.find((t) => t.startsWith('created-by:depth:'))?.slice('created-by:depth:'.length) ?? 0);
    await until(
      async () => {
        const records = await chainRecords();
        if (records.length > MAX) throw new Error(`the chain wrote ${records.length} records, over ${MAX}`);
        const expected = 1 + records.filter((r) => depthOf(r.tags) < 4).length;
        const [asked, answered] = [await requests(), (await runs()).length];
        return records.length === MAX && asked === expected && answered === asked ? true : undefined;
      },
      'the chain to end at its bound',
      120_000,
    );
    const refused = (await runs()).filter((a) => a.status !== 'success');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]?.error?.code).toBe('rate.exceeded');
    expect(refused[0]?.error?.message).toContain(
      `has written ${MAX} records on this replica, the limit (subscriptionChainMaxRecords ${MAX})`,
    );
    // Every chain record names the same seed.
    expect(new Set((await chainRecords()).map((r) => r.tags.find((t) => t.startsWith('created-by:chain:')))).size).toBe(
      1,
    );
    // The service keeps serving.
    const rid = await request(client, 'upper', { text: 'still here' });
    expect((await answer(client, rid)).output).toEqual({ text: 'STILL HERE' });
  }, 180_000);
});

describe('one causal chain through nested calls', () => {
  it('records a triggered run’s nested calls create count against its chain', async () => {
    const MAX = 8;
    const { service, client } = await startConsoleService({ subscriptionChainMaxRecords: MAX });
    const mallory = agentClient(service.storeUrl, 'mallory');
    await putAgentTool(
      mallory,
      'spray',
      `export async function execute(input, context) {
        for (let i = 0; i < 5; i++) await context.api.createBreadcrumb({ title: 'spray', schema_name: 'nc.out.v1', tags: ['nc'], context: { i } });
        return {};
      }`,
      { permissions: { net: false, breadcrumbs: { write: ['nc.out.v1'] } } },
    );
    await putAgentTool(
      mallory,
      'fan',
      `export async function execute(input, context) {
        const outcomes = [];
        for (let i = 0; i < 4; i++) outcomes.push(await context.tools.call('spray', {}).then(() => 'ok', (e) => String(e.message)));
        return { outcomes };
      }`,
      {
        permissions: { net: false, tools: ['spray'], breadcrumbs: { read: ['nc.seed.v1'] } },
        subscriptions: [{ schema_name: 'nc.seed.v1' }],
      },
    );
    await until(
      async () =>
        ((await (await fetch(`${service.adminUrl}/api/extensions/autonomy`)).json()) as { subscriptions: unknown[] })
          .subscriptions.length === 1
          ? true
          : undefined,
      'the subscription',
    );
    const seed = await mallory.createBreadcrumb({
      title: 'seed',
      schema_name: 'nc.seed.v1',
      tags: ['nc'],
      context: {},
    });
    const [fan] = await until(
      async () => {
        const list = await answersOf(client, 'fan');
        return list.length > 0 ? list : undefined;
      },
      'the triggered run of fan',
      60_000,
    );
    const outcomes = (fan as unknown as { output: { outcomes: string[] } }).output.outcomes;
    expect(outcomes.slice(0, 1)).toEqual(['ok']);
    expect(outcomes.filter((o) => o.includes(`subscriptionChainMaxRecords ${MAX}`)).length).toBe(3);
    const written = await client.listAll({ schema_name: 'nc.out.v1', include_context: false });
    expect(written.length).toBe(MAX);
    expect(written.every((r) => r.tags.includes(`created-by:chain:${seed.id}`))).toBe(true);
  }, 120_000);
});
