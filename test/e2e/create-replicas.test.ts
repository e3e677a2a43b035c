// Tool creation is a request kind of the one request path: with two runner replicas on one store,
// every tool.create.request.v1 is claimed by one replica, its examples run exactly once, and it is
// answered exactly once. The examples count their own runs: each run writes a breadcrumb through
// `context.api` (a real write to the store, so the count is of executions, not of answers).

import { afterEach, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { until, untilSettled } from '../support/waits.js';
import { adminUrl, CLAIM_TTL_MS, cleanupAll, client, startRunner, startStoreProcess, tempDir, WS } from './harness.js';

afterEach(cleanupAll);

const COUNT = 50;
const RUN_TAG = 'e2e-example-run';

/** A tool whose one example records that it ran (tagged with the tool's name). */
function countingSpec(name: string): Record<string, unknown> {
  return {
    name,
    description: 'records each run of its example',
    code: {
      language: 'typescript',
      source: `export async function execute(input, context) {
        await context.api.createBreadcrumb({ title: 'example run', schema_name: 'e2e.example-run.v1', tags: ['${RUN_TAG}', 'ran:' + input.name], context: { name: input.name } });
        return { ran: true };
      }`,
    },
    input_schema: {
      type: 'object',
      properties: { name: { type: 'string', description: 'the tool name' } },
      required: ['name'],
    },
    output_schema: {
      type: 'object',
      properties: { ran: { type: 'boolean', description: 'always true' } },
      required: ['ran'],
    },
    permissions: { net: false, api: 'write' },
    examples: [{ description: 'runs once', input: { name }, output: { ran: true }, match: 'exact' }],
  };
}

describe('create requests on two replicas', () => {
  it(`${COUNT} create requests: each runs its examples exactly once and is answered exactly once`, async () => {
    const { url } = await startStoreProcess(tempDir());
    const c = client(url);
    const withAdmin = (): Promise<string> =>
      startRunner(url, ['--admin-port', '0'], { TOOLS_RUNNER_LOG_LEVEL: 'info' }).then(adminUrl);
    const admins = await Promise.all([withAdmin(), withAdmin()]);
    const names = Array.from({ length: COUNT }, (_, i) => `cr-${i}`);
    const rids = new Map<string, string>();
    await Promise.all(
      names.map(async (name) => {
        const rid = crypto.randomUUID();
        rids.set(name, rid);
        await c.createBreadcrumb({
          title: `create ${name}`,
          schema_name: SCHEMA.ToolCreateRequest,
          tags: [WS, 'agent:e2e'],
          context: { request_id: rid, agent_id: 'e2e', tool_spec: countingSpec(name) },
        });
      }),
    );
    // Every request answered (generous: examples run in real Deno processes on a loaded machine).
    await until(
      `${COUNT} create answers`,
      async () => (await c.listAll({ schema_name: SCHEMA.ToolCreateResponse, tag: WS })).length >= COUNT,
      180_000,
      200,
    );
    // Both replicas scanned after any lease taken until now expired, and are idle: a second answer or
    // a second run would be in the store now.
    const since = Date.now() + CLAIM_TTL_MS;
    await Promise.all(admins.map((admin) => untilSettled(admin, since)));
    const answers = await c.listAll({ schema_name: SCHEMA.ToolCreateResponse, tag: WS, include_context: true });
    const perRid = new Map<string, number>();
    for (const answer of answers) {
      const rid = String(answer.context?.['request_id']);
      perRid.set(rid, (perRid.get(rid) ?? 0) + 1);
      expect(answer.context?.['status'], JSON.stringify(answer.context).slice(0, 400)).toBe('created');
    }
    const notOnce = names.filter((name) => perRid.get(rids.get(name) as string) !== 1);
    expect(notOnce, `create requests without exactly one answer: ${notOnce.slice(0, 5).join(', ')}`).toEqual([]);
    for (const name of names)
      expect(
        (
          await c.listBreadcrumbs({
            tag: TAG.request(rids.get(name) as string),
            schema_name: SCHEMA.ToolCreateResponse,
          })
        ).length,
      ).toBe(1);
    // Executions: each example wrote one record per run.
    const runs = await c.listAll({ tag: RUN_TAG, include_context: true });
    const perName = new Map<string, number>();
    for (const run of runs) {
      const name = String(run.context?.['name']);
      perName.set(name, (perName.get(name) ?? 0) + 1);
    }
    const notRunOnce = names.filter((name) => perName.get(name) !== 1);
    expect(
      notRunOnce,
      `tools whose example did not run exactly once: ${notRunOnce
        .slice(0, 5)
        .map((n) => `${n}=${perName.get(n) ?? 0}`)
        .join(', ')}`,
    ).toEqual([]);
    expect(runs).toHaveLength(COUNT);
  }, 300_000);
});
