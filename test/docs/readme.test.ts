// Every JSON and shell example of the README and docs/*.md runs here, as written, against a real runner with its
// embedded store (free ports; the README's fixed ports 8081/8082 are given to the commands through
// TOOLS_RUNNER_PORT / TOOLS_RUNNER_ADMIN_PORT, and to curl by rewriting `localhost:8081/8082`).
// Blocks that cannot run here carry a `skip:` marker with the reason; that list is pinned below, so a
// new example cannot be skipped silently and a marker cannot go missing.

import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BreadcrumbCreate,
  SCHEMA,
  TAG,
  ToolCreateResponseContext,
  ToolRequestContext,
  ToolResponseContext,
} from '../../src/breadcrumbs/messages.js';
import { defaultConfig } from '../../src/config/index.js';
import { createSchemaValidator, validateToolDefinition } from '../../src/screen/index.js';
import type { Route } from '../../src/catalog/catalog.js';
import { parseContract, type ToolContract } from '../../src/contract/contract.js';
import { approvalNeed } from '../../src/request/policies/approval-records.js';
import { CALL_AUDIT_FIELDS } from '../../src/request/policies/audit.js';
import { cleanupAll, client, E2E_RUNNER_SECRET, runCli, startRunnerWithStore, tempDir } from '../e2e/harness.js';
import { commandLines, readme, shell, startShell } from './readme-blocks.js';

const doc = readme();

/** Blocks that run in this file. */
const TESTED = [
  'quick-start-call',
  'request',
  'response',
  'request-curl',
  'no-store',
  'list-describe',
  'tool-definition',
  'create-request',
  'idempotent-request',
  'approval-contract',
  'request-version',
  'audit-line',
  'isolation-request',
  'workflow-request',
  'subscription-tool',
  'once-bootstrap',
  'schedule-definition',
];
/** Blocks that cannot run in a test, each with its marker's reason. */
const SKIPPED = {
  'quick-start-install':
    'installs packages and starts a service on the fixed ports 8081/8082 (the test runs the same service on free ports for the blocks below)',
  'quick-start-test': 'runs the whole test suite, which contains this test',
  diagram: 'a diagram, not a command',
  docker: 'needs Docker, which the test machine does not have',
  'compose-postgres': 'needs Docker, which the test machine does not have',
  'mcp-desktop-config':
    "a desktop client's configuration file; test/install/installed.test.ts runs this command and args from an installed copy",
  'rate-limits-flag':
    'starts a service with a flag; test/e2e/contract-policies.test.ts runs a runner with --rate-limits',
  'approvals-cli':
    'needs a call waiting for approval; test/e2e/approvals.test.ts runs these commands against a real runner',
  'upstream-flags':
    "runs the examples of the operator's whole bootstrap directory; test/e2e/upstream-tools.test.ts runs this command on upstream-shaped fixtures",
  'allow-private-hosts': 'starts a service with a flag; test/mcp/progress.test.ts runs a runner with this flag',
  'bench-pg-replicas': 'a benchmark of several minutes, not a test',
  'shipped-tools-real': 'needs the real services (OpenRouter key, Ollama, a browser with internet)',
  'schedule-definition-cron': 'a calendar schedule, due at most once a week; the guard tests compute its due times',
  'tools-call':
    'a line of tool code, not a runnable document; test/autonomy/nested-calls.test.ts runs tools that call tools',
};

// Nothing listens on port 1: a refused connection, at once — "the network is unreachable".
const OFFLINE_PROBE = '127.0.0.1:1';

let storeUrl: string;
let adminUrl: string;
let cwd: string;
let env: Record<string, string>;

beforeAll(async () => {
  const started = await startRunnerWithStore(['--bootstrap', '--admin-port', '0', '--network-probe', OFFLINE_PROBE], {
    TOOLS_RUNNER_LOG_LEVEL: 'info',
  });
  storeUrl = started.url;
  const line = started.runner.stderr
    .join('')
    .split('\n')
    .find((l) => l.includes('"msg":"admin port listening"'));
  adminUrl = (JSON.parse(line as string) as { url: string }).url;
  cwd = tempDir('tr-readme-');
  env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: process.env['HOME'] ?? '/tmp',
    // The service's runner secret, as an operator exports it in every terminal (client commands
    // verify the runner's answer tag with it).
    TOOLS_RUNNER_RUNNER_SECRET: E2E_RUNNER_SECRET,
    TOOLS_RUNNER_PORT: new URL(storeUrl).port,
    TOOLS_RUNNER_ADMIN_PORT: new URL(adminUrl).port,
  };
});

afterAll(cleanupAll);

/** A README line with the fixed example ports pointed at this test's service. */
const local = (line: string): string =>
  line.replace(/localhost:8081/g, new URL(storeUrl).host).replace(/localhost:8082/g, new URL(adminUrl).host);

/** Posts a documented request as written and resolves with the first answer tagged with its rid. */
async function postAndAwait(request: Record<string, unknown>, rid: string): Promise<ToolResponseContext> {
  const store = client(storeUrl);
  await store.createBreadcrumb(BreadcrumbCreate.parse(request));
  let answer: { context?: unknown } | undefined;
  await expect
    .poll(
      async () => {
        [answer] = await store.listBreadcrumbs({
          schema_name: SCHEMA.ToolResponse,
          tag: TAG.request(rid),
          include_context: true,
        });
        return answer !== undefined;
      },
      { timeout: 30_000 },
    )
    .toBe(true);
  return ToolResponseContext.parse(answer?.context);
}

const json = (id: string): Record<string, unknown> => JSON.parse(doc.byId(id).body) as Record<string, unknown>;

describe('README examples', () => {
  it('every fenced block is marked; the skipped ones are exactly the pinned list', () => {
    expect(doc.blocks.filter((b) => b.id === undefined).map((b) => `${b.file} line ${b.line}`)).toEqual([]);
    const ids = doc.blocks.map((b) => b.id as string);
    expect(new Set(ids).size).toBe(ids.length);
    expect(Object.fromEntries(doc.blocks.filter((b) => b.skip).map((b) => [b.id, b.skip]))).toEqual(SKIPPED);
    expect(
      doc.blocks
        .filter((b) => !b.skip)
        .map((b) => b.id)
        .sort(),
    ).toEqual([...TESTED].sort());
    for (const block of doc.blocks.filter((b) => !b.skip)) expect(['json', 'sh']).toContain(block.lang);
  });

  it('quick-start-call: call prints the response, tail shows the execution, /metrics counts it', async () => {
    const [call, tail, metrics] = commandLines(doc.byId('quick-start-call'));
    const tailing = startShell(tail as string, { cwd, env: { ...env, TOOLS_RUNNER_LOG_LEVEL: 'debug' } });
    // tail writes its "tailing" log line (visible at debug) once the WebSocket is open.
    await expect.poll(() => tailing.errors(), { timeout: 20_000 }).toMatch(/"msg":"tailing"/);
    const called = await shell(call as string, { cwd, env });
    expect(called.stderr).toBe('');
    expect(called.code).toBe(0);
    expect(JSON.parse(called.stdout)).toMatchObject({ tool: 'calculator', status: 'success', output: { result: 14 } });
    await expect.poll(() => tailing.output(), { timeout: 20_000 }).toMatch(/ finish calculator success [\d.]+ms rid=/);
    tailing.stop();
    expect((await tailing.done).code).toBe(0);
    const counted = await shell(local(metrics as string), { cwd, env });
    expect(counted.code).toBe(0);
    expect(counted.stdout).toMatch(
      /^tools_runner_requests_total\{tool="calculator",status="success",code="ok"\} [1-9]\d*$/m,
    );
  });

  it('request, response, request-curl: the request is posted with curl as written and answered as documented', async () => {
    const request = json('request');
    expect(BreadcrumbCreate.safeParse(request).success).toBe(true);
    const context = ToolRequestContext.parse(request['context']);
    writeFileSync(join(cwd, 'request.json'), doc.byId('request').body);
    const [post, list] = commandLines(doc.byId('request-curl'));
    const posted = await shell(local(post as string), { cwd, env });
    expect(posted.code).toBe(0);
    expect(JSON.parse(posted.stdout)).toMatchObject({ id: expect.any(String) });
    let items: Array<{ context: unknown; title?: string; tags: string[] }> = [];
    await expect
      .poll(
        async () => {
          const listed = await shell(local(list as string), { cwd, env });
          items = JSON.parse(listed.stdout) as typeof items;
          return items.length;
        },
        { timeout: 30_000 },
      )
      .toBe(1);
    const real = ToolResponseContext.parse(items[0]?.context);
    const documented = ToolResponseContext.parse(json('response'));
    // What the README shows is what the runner answers (timings and ids aside).
    expect(real).toMatchObject({
      request_id: context.requestId,
      tool: documented.tool,
      status: documented.status,
      output: documented.output,
    });
    expect(Object.keys(documented).sort()).toEqual(Object.keys(real).sort());
    const documentedMeta = Object.keys(documented.metadata ?? {}).filter((k) => k !== 'logs');
    expect(Object.keys(real.metadata ?? {})).toEqual(expect.arrayContaining(documentedMeta));
    expect(items[0]?.tags).toEqual(
      expect.arrayContaining([
        'workspace:tools',
        TAG.Response,
        TAG.request('req-123'),
        expect.stringMatching(/^answer:[A-Za-z0-9_-]{32}$/),
      ]),
    );
  });

  it('idempotent-request: a repeat with the same key is answered from the first, for its own rid', async () => {
    const documented = json('idempotent-request');
    const body = BreadcrumbCreate.parse(documented);
    const context = ToolRequestContext.parse(body.context);
    expect(context.idempotency_key).toBe('invoice-2024-001');
    const c = client(storeUrl);
    const answerOf = async (rid: string) => {
      let found: unknown[] = [];
      await expect
        .poll(
          async () =>
            (found = (
              await c.listBreadcrumbs({
                schema_name: SCHEMA.ToolResponse,
                tag: TAG.request(rid),
                include_context: true,
              })
            ).map((i) => i.context)).length,
          { timeout: 30_000 },
        )
        .toBe(1);
      return ToolResponseContext.parse(found[0]);
    };
    await c.createBreadcrumb(body);
    const first = await answerOf('pay-1');
    expect(first).toMatchObject({ status: 'success', output: { result: 42 } });
    await c.createBreadcrumb({ ...body, context: { ...body.context, requestId: 'pay-1-retry' } });
    const retry = await answerOf('pay-1-retry');
    expect(retry).toMatchObject({
      status: 'success',
      output: first.output,
      metadata: { replayed_from: { rid: 'pay-1', request_breadcrumb_id: first.metadata['request_breadcrumb_id'] } },
    });
  });

  it("audit-line: the documented audit line has exactly the fields of the runner's audit format, in order", () => {
    // test/e2e/effects.test.ts checks real lines against the same list
    expect(Object.keys(json('audit-line'))).toEqual([...CALL_AUDIT_FIELDS]);
  });

  it('list-describe: list shows the catalog one tool a line, describe one tool in full', async () => {
    const [list, describe] = commandLines(doc.byId('list-describe'));
    const listed = await shell(list as string, { cwd, env });
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
    expect(listed.stdout.split('\n')[0]).toMatch(/^NAME\s+VERSION\s+KIND\s+CONTRACT\s+TRUST$/);
    expect(listed.stdout).toMatch(/^calculator\s+\S+\s+code\s+read-only\s+\S+$/m);
    const described = await shell(describe as string, { cwd, env });
    expect({ code: described.code, stderr: described.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(described.stdout)).toMatchObject({
      name: 'calculator',
      kind: 'code',
      permissions: { net: [] },
      limits: { timeout_ms: expect.any(Number) },
      input_schema: { type: 'object' },
      examples: expect.arrayContaining([expect.objectContaining({ input: expect.any(Object) })]),
    });
  });

  it('no-store: a client command without a store says what is missing in one line and exits 4', async () => {
    const block = doc.byId('no-store');
    const [command] = commandLines(block);
    const expected = block.body
      .split('\n')
      .find((l) => l.startsWith('# '))
      ?.slice(2);
    const run = await shell(command as string, { cwd, env });
    expect(run.code).toBe(4);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`${expected}\n`);
  });

  it('tool-definition: valid under the agent policy; its network example is skipped offline and runs when the network is up', async () => {
    const definition = json('tool-definition');
    const check = validateToolDefinition(definition, {
      origin: 'agent',
      config: defaultConfig(),
      validator: createSchemaValidator(),
    });
    expect(check.ok ? [] : check.errors).toEqual([]);
    const file = join(cwd, 'weather-now.json');
    writeFileSync(file, doc.byId('tool-definition').body);
    const offline = runCli(['test', file, '--network-probe', OFFLINE_PROBE]);
    expect(await offline.exited).toBe(0);
    expect(offline.stdout).toContain(
      `    - example 1: Paris skipped (network unreachable: ${OFFLINE_PROBE}: ECONNREFUSED)`,
    );
    expect(offline.stdout.at(-1)).toBe(
      '1 tool(s), 1 example(s): 1 tool(s) passed, 0 failed; 0 example(s) passed, 0 failed, 1 skipped',
    );
    // "Online" (the probe reaches a listening port) without the secret: skipped, naming it.
    const server = await listening();
    const port = (server.address() as { port: number }).port;
    const online = runCli(['test', file, '--network-probe', `127.0.0.1:${port}`]);
    expect(await online.exited).toBe(0);
    expect(online.stdout).toContain(
      '    - example 1: Paris skipped (secret WEATHER_KEY not provided (--secrets-file))',
    );
    // With the secret from --secrets-file the example runs (and fails: this machine has no such host).
    const secrets = join(cwd, 'weather-secrets.json');
    writeFileSync(secrets, JSON.stringify({ WEATHER_KEY: 'k-123456' }));
    const keyed = runCli(['test', file, '--network-probe', `127.0.0.1:${port}`, '--secrets-file', secrets]);
    expect(await keyed.exited).toBe(1);
    expect(keyed.stdout.join('\n')).toMatch(/✗ example 1: Paris \([\d.]+ ms\)\n\s+(tool\.error|permission\.denied): /);
    await new Promise((resolve) => server.close(resolve));
  });

  it('create-request: posted as written, it creates the tool, which then runs', async () => {
    const request = json('create-request');
    const store = client(storeUrl);
    await store.createBreadcrumb(BreadcrumbCreate.parse(request));
    const rid = (request['context'] as { request_id: string }).request_id;
    let answer: { context?: unknown; title?: string } | undefined;
    await expect
      .poll(
        async () => {
          [answer] = await store.listBreadcrumbs({
            schema_name: SCHEMA.ToolCreateResponse,
            tag: TAG.request(rid),
            include_context: true,
          });
          return answer !== undefined;
        },
        { timeout: 30_000 },
      )
      .toBe(true);
    const created = ToolCreateResponseContext.parse(answer?.context);
    expect(created).toMatchObject({
      request_id: rid,
      status: 'created',
      errors: [],
      tool: { name: 'doubler', version: '1.0.0' },
    });
    expect(created.examples).toEqual([{ description: 'two doubled', ok: true, duration_ms: expect.any(Number) }]);
    expect(answer?.title).toBe('Tool created: doubler');
    const called = await shell(`npx tools-runner call doubler '{"n":21}'`, { cwd, env });
    expect(called.code).toBe(0);
    expect(JSON.parse(called.stdout)).toMatchObject({ tool: 'doubler', status: 'success', output: { doubled: 42 } });
  });

  it("approval-contract: a valid contract under which a call of the tool needs two distinct approvals of alice or operators, not the requester's", () => {
    const parsed = parseContract(json('approval-contract'));
    expect(parsed.issues).toEqual([]);
    const route = { kind: 'code', tool: { name: 'pay-invoice' } } as unknown as Route;
    expect(approvalNeed({ contract: parsed.contract as ToolContract, route }, true)).toEqual({
      policy: 'contract',
      approvers: ['alice', 'operator'],
      timeoutMs: 900_000,
      separationOfDuties: true,
      minApprovers: 2,
    });
  });

  it('request-version: a request pinned to a version range runs the version it matches', async () => {
    const request = json('request-version');
    const context = ToolRequestContext.parse(request['context']);
    const response = await postAndAwait(request, context.requestId as string);
    expect(response).toMatchObject({
      tool: 'calculator',
      status: 'success',
      output: { result: 42 },
      metadata: { tool_version: '1.0.0' },
    });
  });

  it('isolation-request: a request demanding a fresh process is run in one, and its answer says so', async () => {
    const request = json('isolation-request');
    const context = ToolRequestContext.parse(request['context']);
    expect(context.isolation).toBe('process');
    expect(await postAndAwait(request, context.requestId as string)).toMatchObject({
      tool: 'calculator',
      status: 'success',
      output: { result: 42 },
      metadata: { isolation: 'process' },
    });
  });

  it("workflow-request: upstream's three-step workflow answers the sum of its two random numbers", async () => {
    const c = client(storeUrl);
    const body = BreadcrumbCreate.parse(json('workflow-request'));
    await c.createBreadcrumb(body);
    let found: unknown[] = [];
    await expect
      .poll(
        async () =>
          (found = (
            await c.listBreadcrumbs({
              schema_name: SCHEMA.ToolResponse,
              tag: TAG.request('wf-1'),
              include_context: true,
            })
          ).map((i) => i.context)).length,
        { timeout: 60_000 },
      )
      .toBe(1);
    const answer = ToolResponseContext.parse(found[0]);
    expect(answer.status).toBe('success');
    const result = (answer.output as { result: number }).result;
    expect(Number.isInteger(result) && result >= 2 && result <= 20).toBe(true);
  }, 90_000);

  it('subscription-tool, schedule-definition: a tick of the documented schedule reaches a tool subscribed to its label; a note triggers the documented tool', async () => {
    const c = client(storeUrl);
    const definition = json('subscription-tool');
    const checked = validateToolDefinition(definition, {
      origin: 'agent',
      config: defaultConfig(),
      validator: createSchemaValidator(),
    });
    expect(checked.errors).toEqual([]);
    await c.createBreadcrumb({
      title: 'note-echo',
      schema_name: SCHEMA.ToolCode,
      tags: [TAG.Tool, TAG.tool('note-echo'), 'workspace:tools'],
      context: definition,
    });
    // a tool subscribed to the documented schedule's label (the scheduler runs in every runner)
    await c.createBreadcrumb({
      title: 'on-tick',
      schema_name: SCHEMA.ToolCode,
      tags: [TAG.Tool, TAG.tool('on-tick'), 'workspace:tools'],
      context: {
        ...definition,
        name: 'on-tick',
        permissions: { net: false, breadcrumbs: { read: ['schedule.tick.v1'] } },
        subscriptions: [{ schema_name: 'schedule.tick.v1', tag: 'interval:2s' }],
      },
    });
    const answersOf = async (tool: string) =>
      (await c.listAll({ schema_name: SCHEMA.ToolResponse, tag: 'workspace:tools', include_context: true }))
        .map((i) => ToolResponseContext.parse(i.context))
        .filter((r) => r.tool === tool);
    // the subscriptions are read at the next scan (500 ms); a note written before is caught up
    await c.createBreadcrumb({ title: 'hello', schema_name: 'note.v1', tags: ['note:new'], context: {} });
    await expect.poll(async () => (await answersOf('note-echo')).length, { timeout: 60_000 }).toBe(1);
    expect((await answersOf('note-echo'))[0]?.output).toEqual({ note: 'hello', prefix: 'seen' });
    await c.createBreadcrumb(BreadcrumbCreate.parse(json('schedule-definition')));
    await expect.poll(async () => (await answersOf('on-tick')).length, { timeout: 60_000 }).toBeGreaterThan(0);
    expect((await answersOf('on-tick'))[0]?.output).toMatchObject({ note: 'Schedule Tick: Every 2 seconds' });
  }, 120_000);

  it('once-bootstrap: valid under the operator policy as a once-run with its priority and input', () => {
    const file = json('once-bootstrap');
    const checked = validateToolDefinition(file['context'], {
      origin: 'bootstrap',
      config: defaultConfig(),
      validator: createSchemaValidator(),
    });
    expect(checked.errors).toEqual([]);
    expect(checked.ok && checked.tool.bootstrap).toEqual({ mode: 'once', priority: 10, input: { keys: ['a', 'b'] } });
  });
});

/** A TCP server on a free local port (the "reachable network" for the probe). */
function listening(): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer((socket) => socket.destroy());
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}
