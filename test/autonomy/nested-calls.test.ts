// Nested calls (issue 21): context.tools.call takes the one request path. The shipped workflow tool
// runs upstream's 3-step example (random -> random -> calculator with ${step.field} interpolation);
// two tools calling each other are refused with a clear cycle error; the nested requests are real
// tool.request.v1 records carrying the sealed origin (calling tool, parent rid, depth, chain).

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA } from '../../src/breadcrumbs/messages.js';
import { answer, cleanupAll, client, putTool, request, startRunnerWithStore, toolContext, WS } from '../e2e/harness.js';

const shipped = (name: string): Record<string, unknown> =>
  (
    JSON.parse(
      readFileSync(
        fileURLToPath(new URL(`../../bootstrap-breadcrumbs/tools-self-contained/${name}.json`, import.meta.url)),
        'utf8',
      ),
    ) as { context: Record<string, unknown> }
  ).context;

let c: StoreClient;

beforeAll(async () => {
  const { url } = await startRunnerWithStore(['--nested-call-max-depth', '2']);
  c = client(url);
  for (const name of ['random', 'calculator', 'workflow', 'timer']) await putTool(c, shipped(name));
  // Times out (1.5 s) while its nested timer call (8 s) still runs: the nested request is withdrawn.
  await putTool(
    c,
    toolContext(
      'impatient',
      'export async function execute(input, context) { return await context.tools.call("timer", { ms: 8000 }); }',
      {
        permissions: { net: false, tools: ['timer'] },
        limits: { timeout_ms: 1500, memory_mb: 64 },
      },
    ),
  );
  // A chain one level deeper than the limit (the runner here runs with --nested-call-max-depth 2).
  const hop = (name: string, next: string): string =>
    `export async function execute(input, context) { return { via: ${JSON.stringify(name)}, next: await context.tools.call(${JSON.stringify(next)}, {}) }; }`;
  await putTool(c, toolContext('hop1', hop('hop1', 'hop2'), { permissions: { net: false, tools: ['hop2'] } }));
  await putTool(c, toolContext('hop2', hop('hop2', 'hop3'), { permissions: { net: false, tools: ['hop3'] } }));
  await putTool(c, toolContext('hop3', hop('hop3', 'random'), { permissions: { net: false, tools: ['random'] } }));
  const caller = (name: string, other: string): string =>
    `export async function execute(input, context) { return await context.tools.call(${JSON.stringify(other)}, input); }`;
  await putTool(c, toolContext('ping', caller('ping', 'pong'), { permissions: { net: false, tools: ['pong'] } }));
  await putTool(c, toolContext('pong', caller('pong', 'ping'), { permissions: { net: false, tools: ['ping'] } }));
  await putTool(c, toolContext('ungranted', caller('ungranted', 'random')));
  await putTool(
    c,
    toolContext(
      'whoami',
      'export async function execute(input, context) { return { agent: context.request.agentId ?? null }; }',
    ),
  );
  await putTool(c, toolContext('asker', caller('asker', 'whoami'), { permissions: { net: false, tools: ['whoami'] } }));
}, 120_000);

afterAll(cleanupAll);

describe('context.tools.call', () => {
  it("runs upstream's 3-step workflow (random -> random -> calculator, ${step.field} interpolation)", async () => {
    const rid = await request(c, 'workflow', {
      steps: [
        { id: 'num1', tool: 'random', input: { min: 1, max: 10 } },
        { id: 'num2', tool: 'random', input: { min: 100, max: 110 } },
        {
          id: 'sum',
          tool: 'calculator',
          input: { expression: '${num1.values[0]} + ${num2.values[0]}' },
          dependencies: ['num1', 'num2'],
        },
      ],
    });
    const got = await answer(c, rid, 90_000);
    expect(got.error).toBeUndefined();
    expect(got.status).toBe('success');
    const out = got.output as {
      results: Record<string, { values?: number[]; result?: number }>;
      executionOrder: string[];
    };
    const a = out.results['num1']?.values?.[0] as number;
    const b = out.results['num2']?.values?.[0] as number;
    expect(a).toBeGreaterThanOrEqual(1);
    expect(b).toBeGreaterThanOrEqual(100);
    expect(out.results['sum']?.result).toBe(a + b);
    expect(out.executionOrder.at(-1)).toBe('sum');
    // The steps were real requests, sealed with their origin: the workflow's rid, depth 1, chain [workflow].
    const requests = await c.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS, include_context: true });
    const nested = requests.filter(
      (r) => (r.context?.['origin'] as { parent_rid?: string } | undefined)?.parent_rid === rid,
    );
    expect(nested.map((r) => r.context?.['tool']).sort()).toEqual(['calculator', 'random', 'random']);
    for (const r of nested)
      expect(r.context?.['origin']).toMatchObject({
        kind: 'call',
        depth: 1,
        chain: ['workflow'],
        parent_tool: 'workflow',
      });
  }, 120_000);

  it("returnStep returns one step's output", async () => {
    const rid = await request(c, 'workflow', {
      steps: [
        { id: 'x', tool: 'calculator', input: { expression: '6 * 7' } },
        { id: 'y', tool: 'calculator', input: { expression: '${x.result} + 1' } },
      ],
      returnStep: 'y',
    });
    const got = await answer(c, rid, 90_000);
    expect(got.output).toMatchObject({ result: 43 });
  }, 120_000);

  it('refuses a cycle of two tools calling each other, naming the chain', async () => {
    const rid = await request(c, 'ping', {});
    const got = await answer(c, rid, 90_000);
    expect(got.status).toBe('error');
    expect(got.error?.message).toContain('a cycle of nested calls (ping -> pong -> ping)');
  }, 120_000);

  it('refuses a tool without a permissions.tools grant', async () => {
    const rid = await request(c, 'ungranted', {});
    const got = await answer(c, rid, 60_000);
    expect(got.status).toBe('error');
    expect(got.error?.message).toContain(
      'context.tools.call("random") denied: tool "ungranted" has no permissions.tools grant',
    );
  }, 90_000);
  it('withdraws a nested request when its parent times out (no answer for it)', async () => {
    const rid = await request(c, 'impatient', {});
    const got = await answer(c, rid, 60_000);
    // Whichever ends first at the parent's deadline: the sandbox's timeout, or the wait (the tool sees
    // the call fail and here lets the error escape).
    expect(got.status).toBe('error');
    if (got.error?.code !== 'timeout') {
      expect(got.error?.message).toMatch(
        /context\.tools\.call\("timer"\): no answer before the calling run's deadline \(request \S+ withdrawn\)/,
      );
    }
    const children = async () =>
      (await c.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS, include_context: true })).filter(
        (r) => (r.context?.['origin'] as { parent_rid?: string } | undefined)?.parent_rid === rid,
      );
    // The child was written, then deleted when the parent ended.
    await expect.poll(async () => (await children()).length, { timeout: 30_000 }).toBe(0);
    const timerAnswers = async () =>
      (await c.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true })).filter(
        (r) =>
          r.context?.['tool'] === 'timer' &&
          (r.context?.['metadata'] as { parent_rid?: string } | undefined)?.parent_rid === rid,
      );
    // Past the timer's 8 s: had the child run on, its answer would be here.
    await new Promise((r) => setTimeout(r, 10_000));
    expect(await timerAnswers()).toEqual([]);
  }, 120_000);

  it('refuses a call one level past nestedCallMaxDepth, naming the chain', async () => {
    const rid = await request(c, 'hop1', {});
    const got = await answer(c, rid, 60_000);
    expect(got.status).toBe('error');
    expect(got.error?.message).toContain(
      'context.tools.call("random") refused: depth 3 is over the limit of 2 nested calls (nestedCallMaxDepth; chain hop1 -> hop2 -> hop3)',
    );
  }, 90_000);
  it('a nested call runs as the original agent; a forged origin is refused (permission.denied)', async () => {
    const rid = await request(c, 'asker', {}, crypto.randomUUID(), { requestedBy: 'alice' });
    expect((await answer(c, rid, 60_000)).output).toEqual({ agent: 'alice' });
    const forged = await request(c, 'whoami', {}, crypto.randomUUID(), {
      requestedBy: 'mallory',
      origin: {
        kind: 'call',
        agent: 'alice',
        depth: 1,
        chain: ['asker'],
        parent_tool: 'asker',
        mac: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      },
    });
    const refused = await answer(c, forged, 60_000);
    expect(refused.error?.code).toBe('permission.denied');
    expect(refused.error?.message).toContain(`context.origin of request "${forged}" is not the runner's seal`);
  }, 90_000);
});
