// Tools that act on their own (issue 21), two replicas on one store: 100 matching breadcrumbs start
// exactly 100 runs (each with its trigger event); a tool subscribed to its own output stops at the
// depth limit; an operator tool's `once` bootstrap runs once, also after a restart; an agent tool
// may not subscribe to a schema its grant does not allow.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG, type ToolResponseContext } from '../../src/breadcrumbs/messages.js';
import {
  cleanupAll,
  client,
  putTool,
  startRunner,
  startStoreProcess,
  tempDir,
  toolContext,
  WS,
  type CliProcess,
} from '../e2e/harness.js';

const MAX_DEPTH = 3;
let c: StoreClient;
let storeUrl: string;
let bootDir: string;
const runners: CliProcess[] = [];

const runnerFlags = (): string[] => [
  '--bootstrap',
  '--bootstrap-dir',
  bootDir,
  '--nested-call-max-depth',
  String(MAX_DEPTH),
];

async function responsesOf(tool: string): Promise<ToolResponseContext[]> {
  const items = await c.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true });
  return items.map((item) => item.context as unknown as ToolResponseContext).filter((r) => r.tool === tool);
}

async function requestsOf(tool: string): Promise<number> {
  const items = await c.listAll({ schema_name: SCHEMA.ToolRequest, tag: TAG.Request, include_context: true });
  return items.filter((item) => item.context?.['tool'] === tool).length;
}

/** Polls `probe` until it returns true (or throws after `timeoutMs`). */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  bootDir = tempDir('tr-boot-');
  mkdirSync(join(bootDir, 'tools'));
  writeFileSync(
    join(bootDir, 'tools', 'oncer.json'),
    JSON.stringify({
      schema_name: 'tool.code.v1',
      title: 'oncer',
      tags: ['tool', 'tool:oncer', WS],
      context: {
        ...toolContext(
          'oncer',
          'export async function execute(input, context) { return { ran: true, input, origin: context.request.id }; }',
        ),
        bootstrap: { enabled: true, mode: 'once', priority: 5, input: { hello: 'once' } },
      },
    }),
  );
  writeFileSync(
    join(bootDir, 'tools', 'oncer-later.json'),
    JSON.stringify({
      schema_name: 'tool.code.v1',
      title: 'oncer-later',
      tags: ['tool', 'tool:oncer-later', WS],
      context: {
        ...toolContext('oncer-later', 'export async function execute() { return { ran: true }; }'),
        bootstrap: { enabled: true, mode: 'once', priority: 1 },
      },
    }),
  );
  const { url } = await startStoreProcess(tempDir());
  storeUrl = url;
  c = client(url);
  // The tools exist before the replicas start: both see the subscriptions from their first pass.
  await putTool(
    c,
    toolContext(
      'counter',
      'export async function execute(input, context) { return { trigger: context.request.trigger_event?.breadcrumb_id ?? null, n: context.request.trigger_event?.context?.n ?? null, input }; }',
      {
        permissions: { net: false, breadcrumbs: { read: ['e2e.event.v1'] } },
        subscriptions: [{ schema_name: 'e2e.event.v1', tag: 'e2e:go', input: { from: 'subscription' } }],
      },
    ),
  );
  await putTool(
    c,
    toolContext(
      'looper',
      `export async function execute(input, context) {
    const made = await context.api.createBreadcrumb({ title: 'loop', schema_name: 'e2e.loop.v1', tags: ['e2e:loop'], context: { from: context.request.trigger_event?.breadcrumb_id ?? null } });
    return { made: made.id };
  }`,
      {
        permissions: { net: false, breadcrumbs: { write: ['e2e.loop.v1'] } },
        subscriptions: [{ schema_name: 'e2e.loop.v1' }],
      },
    ),
  );
  runners.push(await startRunner(storeUrl, runnerFlags()), await startRunner(storeUrl, runnerFlags()));
}, 180_000);

afterAll(cleanupAll);

describe('subscriptions (two replicas)', () => {
  it('100 matching breadcrumbs start exactly 100 runs, each with its trigger event and the subscription input', async () => {
    const ids: string[] = [];
    for (let n = 0; n < 100; n++) {
      const { id } = await c.createBreadcrumb({
        title: `event ${n}`,
        schema_name: 'e2e.event.v1',
        tags: ['e2e:go'],
        context: { n },
      });
      ids.push(id);
    }
    // a breadcrumb of the schema without the tag, and one with the tag but another schema: no run
    await c.createBreadcrumb({
      title: 'untagged',
      schema_name: 'e2e.event.v1',
      tags: ['e2e:other'],
      context: { n: -1 },
    });
    await c.createBreadcrumb({
      title: 'other schema',
      schema_name: 'e2e.other.v1',
      tags: ['e2e:go'],
      context: { n: -2 },
    });
    await until('100 answers of counter', async () => (await responsesOf('counter')).length >= 100, 180_000);
    const answers = await responsesOf('counter');
    expect(answers.every((a) => a.status === 'success')).toBe(true);
    const triggers = answers.map((a) => (a.output as { trigger: string }).trigger);
    expect(new Set(triggers).size).toBe(100);
    expect([...triggers].sort()).toEqual([...ids].sort());
    expect(
      answers.every(
        (a) =>
          (a.output as { input: unknown }).input !== undefined &&
          (a.output as { input: { from: string } }).input.from === 'subscription',
      ),
    ).toBe(true);
    expect(answers.every((a) => typeof a.metadata['trigger_id'] === 'string')).toBe(true);
    expect(await requestsOf('counter')).toBe(100);
  }, 240_000);

  it('a tool subscribed to its own output stops at the depth limit', async () => {
    await c.createBreadcrumb({ title: 'seed', schema_name: 'e2e.loop.v1', tags: ['e2e:loop'], context: {} });
    await until(`${MAX_DEPTH} answers of looper`, async () => (await responsesOf('looper')).length >= MAX_DEPTH);
    await until(
      'the last loop record',
      async () => (await c.listAll({ schema_name: 'e2e.loop.v1' })).length >= MAX_DEPTH + 1,
    );
    const records = await c.listAll({ schema_name: 'e2e.loop.v1', include_context: false });
    const depths = records.map((r) => r.tags.find((t) => t.startsWith('created-by:depth:')) ?? 'agent').sort();
    expect(depths).toEqual(['agent', 'created-by:depth:1', 'created-by:depth:2', 'created-by:depth:3']);
    // Several catch-up passes later (scan interval 500 ms) nothing more ran: the depth-3 record triggers nothing.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(await requestsOf('looper')).toBe(MAX_DEPTH);
    expect((await responsesOf('looper')).length).toBe(MAX_DEPTH);
  }, 180_000);
});

describe('bootstrap once (two replicas)', () => {
  it('runs an operator tool once per deployed version, in priority order, also after a replica restarts', async () => {
    await until('the once-run answer', async () => (await responsesOf('oncer')).length >= 1);
    const [first] = await responsesOf('oncer');
    expect(first?.status).toBe('success');
    expect(first?.output).toMatchObject({ ran: true, input: { hello: 'once' } });
    runners[0]?.signal('SIGTERM');
    await runners[0]?.exited;
    runners[0] = await startRunner(storeUrl, runnerFlags());
    // the restarted replica's first passes (500 ms apart) have run by the time it catches up on subscriptions
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await requestsOf('oncer')).toBe(1);
    expect((await responsesOf('oncer')).length).toBe(1);
    // Priority order: the priority-5 request was written before the priority-1 one.
    const created = async (tool: string): Promise<number> => {
      const items = await c.listAll({ schema_name: SCHEMA.ToolRequest, tag: TAG.Request, include_context: true });
      const item = items.find((i) => i.context?.['tool'] === tool);
      return Date.parse((await c.getBreadcrumbFull(item?.id as string)).created_at as string);
    };
    expect(await requestsOf('oncer-later')).toBe(1);
    expect(await created('oncer')).toBeLessThanOrEqual(await created('oncer-later'));
  }, 180_000);
});

describe('subscription grants', () => {
  it('an agent tool may not subscribe to a schema its grant does not allow', async () => {
    const { id } = await c.createBreadcrumb({
      title: 'sneaky',
      schema_name: SCHEMA.ToolCode,
      tags: [TAG.Tool, TAG.tool('sneaky'), WS],
      context: toolContext('sneaky', 'export async function execute() { return {}; }', {
        permissions: { net: false, breadcrumbs: { read: ['e2e.event.v1'] } },
        subscriptions: [{ schema_name: 'secret.stuff.v1' }],
      }),
    });
    const rid = crypto.randomUUID();
    await c.createBreadcrumb({
      title: 'Request: sneaky',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, WS],
      context: { tool: 'sneaky', input: {}, requestId: rid },
    });
    await until('the refusal', async () => (await responsesOf('sneaky')).length >= 1);
    const [refusal] = await responsesOf('sneaky');
    expect(refusal?.error?.message).toContain(
      'tool may subscribe only to schemas its grant may read (["e2e.event.v1"]); "secret.stuff.v1" is not one of them',
    );
    expect(id).toBeTruthy();
  }, 120_000);
});
