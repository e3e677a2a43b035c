// Tool authoring end to end: tool.create.request.v1 answered with precise rejections or a deployed
// tool that runs without a restart; `tools-runner bootstrap` idempotence; `tools-runner test` exit codes.

import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import {
  SCHEMA,
  TAG,
  ToolCreateResponseContext,
  type ToolCreateResponseContext as CreateResponse,
} from '../../src/breadcrumbs/messages.js';
import {
  answer,
  cleanupAll,
  client,
  request,
  runCli,
  startRunnerWithStore,
  startStoreProcess,
  tempDir,
  WS,
  type CliProcess,
} from './harness.js';

const shipped = fileURLToPath(new URL('../../bootstrap-breadcrumbs/', import.meta.url));
let c: StoreClient;
let runner: CliProcess;

async function create(spec: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<CreateResponse> {
  const rid = crypto.randomUUID();
  await c.createBreadcrumb({
    title: 'create',
    schema_name: SCHEMA.ToolCreateRequest,
    tags: [TAG.Request, WS, 'agent:agent-7'],
    context: { request_id: rid, agent_id: 'agent-7', tool_spec: spec, ...extra },
  });
  for (let i = 0; i < 300; i++) {
    const items = await c.listBreadcrumbs({
      schema_name: SCHEMA.ToolCreateResponse,
      tag: TAG.request(rid),
      include_context: true,
    });
    if (items[0]) return ToolCreateResponseContext.parse(items[0].context);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no tool.create.response.v1 for ${rid}`);
}

function spec(name: string, source: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: 'doubles a number',
    code: { language: 'typescript', source },
    input_schema: { type: 'object', properties: { n: { type: 'number', description: 'the number' } }, required: ['n'] },
    output_schema: {
      type: 'object',
      properties: { doubled: { type: 'number', description: 'n * 2' } },
      required: ['doubled'],
    },
    permissions: { net: false },
    examples: [{ description: 'two', input: { n: 2 }, output: { doubled: 4 }, match: 'exact' }],
    ...extra,
  };
}

beforeAll(async () => {
  const started = await startRunnerWithStore(['--bootstrap']);
  runner = started.runner;
  c = client(started.url);
});

afterAll(cleanupAll);

describe('tool.create.request.v1', () => {
  it('rejects a broken tool precisely (rule, path, line and column)', async () => {
    const response = await create(
      spec('doubler-bad', 'export async function execute(input) {\n  return { doubled: eval("input.n * 2") };\n}', {
        input_schema: { type: 'object', properties: { n: { type: 'number', description: 'n' } }, required: ['m'] },
        permissions: { net: ['localhost'] },
      }),
    );
    expect(response.status).toBe('rejected');
    expect(response.tool).toBeUndefined();
    const byCode = Object.fromEntries(response.errors.map((e) => [e.code, e]));
    expect(byCode['screen.eval']).toMatchObject({ path: '/tool_spec/code/source', line: 2, column: 21 });
    expect(byCode['schema.required']?.message).toBe("Required field 'm' not found in properties");
    expect(
      response.errors.some((e) => e.message === 'Blocked domain: localhost. Private/local networks not allowed.'),
    ).toBe(true);
  });

  it('rejects a tool whose example fails, reporting each example', async () => {
    const response = await create(
      spec('doubler-wrong', 'export async function execute(input) { return { doubled: input.n * 3 }; }'),
    );
    expect(response.status).toBe('rejected');
    expect(response.examples).toHaveLength(1);
    expect(response.examples[0]?.ok).toBe(false);
    expect(response.errors[0]).toMatchObject({ code: 'example.failed', path: '/tool_spec/examples/0' });
    expect(response.errors[0]?.message).toMatch(/expected \{"doubled":4\}, got \{"doubled":6\}/);
  });

  it('deploys a good tool that runs without a restart, and refuses a silent overwrite', async () => {
    const created = await create(
      spec('doubler', 'export async function execute(input) { return { doubled: input.n * 2 }; }'),
    );
    expect(created.status).toBe('created');
    expect(created.tool).toMatchObject({ name: 'doubler', version: '1.0.0' });
    expect(created.examples[0]).toMatchObject({ ok: true });
    expect((await answer(c, await request(c, 'doubler', { n: 21 }))).output).toEqual({ doubled: 42 });

    const clash = await create(spec('doubler', 'export async function execute(input) { return { doubled: 0 }; }'));
    expect(clash.status).toBe('rejected');
    expect(clash.errors[0]?.code).toBe('conflict');
    expect(clash.errors[0]?.message).toContain('set replaces_version to "1.0.0"');

    const updated = await create(
      spec('doubler', 'export async function execute(input) { return { doubled: input.n + input.n }; }', {
        version: '1.1.0',
      }),
      { replaces_version: '1.0.0' },
    );
    expect(updated.status).toBe('updated');
    expect(updated.tool).toMatchObject({ id: created.tool?.id, version: '1.1.0' });
    let version: unknown;
    for (let i = 0; i < 20 && version !== '1.1.0'; i++)
      version = (await answer(c, await request(c, 'doubler', { n: 1 }))).metadata['tool_version'];
    expect(version).toBe('1.1.0');
  });

  it('a deployment (bootstrap at start, create, update) logs no warning: its unstamped first write is not a rejection', async () => {
    // (runs after the deployments above; the runner logs at warn)
    const warnings = runner.stderr
      .join('')
      .split('\n')
      .filter((l) => l.includes('"level":"warn"'));
    expect(warnings.filter((l) => l.includes('being deployed'))).toEqual([]);
    expect(warnings.filter((l) => l.includes('"msg":"tool rejected"') && /doubler"|bootstrap/.test(l))).toEqual([]);
  });

  it('refuses to replace a tool managed by the bootstrap files', async () => {
    const response = await create(spec('echo', 'export async function execute(input) { return { doubled: 4 }; }'), {
      replaces_version: '1.0.0',
    });
    expect(response.status).toBe('rejected');
    expect(response.errors[0]?.message).toMatch(/managed by the operator's bootstrap files/);
  });
});

describe('tools-runner bootstrap', () => {
  it('creates, then reports everything unchanged, then applies an edit, and rejects a bad file', async () => {
    const { url } = await startStoreProcess(tempDir());
    const dir = tempDir();
    cpSync(shipped, dir, { recursive: true });
    const run = async (): Promise<{ code: number | string; out: string }> => {
      // A store without a runner: nothing would load the tools, so do not wait for that (--bootstrap-wait-ms 0).
      const cli = runCli(['bootstrap', dir, '--store-url', url, '--bootstrap-wait-ms', '0']);
      const code = await cli.exited;
      return { code, out: cli.stdout.join('\n') };
    };
    const first = await run();
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/14 file\(s\): 14 created, 0 updated, 0 unchanged, 0 rejected/);
    const second = await run();
    expect(second.out).toMatch(/14 file\(s\): 0 created, 0 updated, 14 unchanged, 0 rejected/);
    // slugify.json carries an ARuntime description only: stored as the context's contract and timeout.
    const store = client(url);
    const [slug] = await store.listBreadcrumbs({
      schema_name: SCHEMA.ToolCode,
      tag: TAG.tool('slugify'),
      include_context: true,
    });
    expect(slug?.context).toMatchObject({
      limits: { timeout_ms: 5000 },
      permissions: { net: false, api: false },
      contract: {
        owner: 'operator',
        side_effect: 'read-only',
        idempotent: true,
        data_classification: 'public',
        approval: { when: 'never' },
        retry: { max_attempts: 2, backoff_ms: 100, on: ['sandbox.crashed'] },
      },
    });
    expect(slug?.context).not.toHaveProperty('aruntime');

    const file = join(dir, 'tools-self-contained', 'echo.json');
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { description: string };
    doc.description = 'Echo, edited';
    writeFileSync(file, JSON.stringify(doc));
    writeFileSync(
      join(dir, 'broken.json'),
      '{"context": {"name": "broken", "code": {"source": "export const x = 1;"}}}',
    );
    const third = await run();
    expect(third.code).toBe(1);
    expect(third.out).toMatch(/^updated\s+echo/m);
    expect(third.out).toMatch(
      /^rejected\s+broken\s+\S*broken\.json\s+— .*Code must export an async function named "execute"/m,
    );
    expect(third.out).toMatch(/15 file\(s\): 0 created, 1 updated, 13 unchanged, 1 rejected/);
  });
});

describe('tools-runner test', () => {
  it('passes the shipped tools and fails on a wrong example', async () => {
    const dir = tempDir();
    const good = JSON.parse(readFileSync(join(shipped, 'tools-self-contained', 'calculator.json'), 'utf8')) as {
      context: { examples: Array<{ output: unknown }> };
    };
    const first = good.context.examples[0] as { output: unknown };
    first.output = { result: -1, expression: 'wrong' };
    writeFileSync(join(dir, 'calc.json'), JSON.stringify(good));
    const cli = runCli(['test', dir]);
    expect(await cli.exited).toBe(1);
    const out = cli.stdout.join('\n');
    expect(out).toMatch(/✗ calculator 1\.0\.0/);
    expect(out).toMatch(/✗ example 1: .*\n\s+output differs from the example/);
    expect(out).toMatch(/1 tool\(s\), 5 example\(s\): 0 tool\(s\) passed, 1 failed; 4 example\(s\) passed, 1 failed/);
  });
});
