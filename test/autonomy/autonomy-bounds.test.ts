// What bounds autonomy per writer and per causal chain (issue 39, item 3): an agent owner's
// subscriptions beyond `subscriptionMaxPerOwner` are refused (said in /autonomy); one seed in a
// subscription ping-pong between two agent tools writes at most `subscriptionChainMaxRecords`
// records, the runs over it are refused `rate.exceeded`, and the service keeps serving.

import { afterAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { silentLogger } from '../../src/logger.js';
import { cleanupConsole, startConsoleService, toolContext, until, WS } from '../console/helpers.js';

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
