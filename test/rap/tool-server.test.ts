// The RAP tool server of a real in-process service: the served toolset, invocation validation
// (exact 4xx texts, SSRF rules of callback_url), the request path (tool.request.v1 with its tags,
// one run per RAP id however often it is invoked), result delivery with retries, cancellation.

import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SCHEMA } from '../../src/breadcrumbs/messages.js';
import { DEFAULT_DELIVERY, deliverCallback, validateToolset } from '../../src/rap/index.js';
import { createSchemaValidator } from '../../src/screen/index.js';
import {
  eventually,
  hostTool,
  manifest,
  requestsByRapId,
  responsesFor,
  startRunner,
  tempDir,
  WS,
  BIN,
  type Runner,
} from './helpers.js';
import { startReceiver } from './receiver.js';

async function runnerWithTools(overrides: Record<string, unknown> = {}): Promise<Runner> {
  const dir = tempDir();
  const agentcli = manifest(dir, [
    hostTool('host.echo', 'echo-json'),
    hostTool('boom', 'fail-boom'),
    hostTool('sleeper', 'sleeper', { command: [join(BIN, 'sleeper'), '2'] }),
  ]);
  const runloop = join(dir, 'runloop.json');
  writeFileSync(
    runloop,
    JSON.stringify({
      version: 1,
      tools: [
        {
          id: 'mail.send',
          description: 'sends mail',
          transport: { kind: 'exec', command: join(BIN, 'runloop-tool') },
          input_schema: { type: 'object' },
          result_schema: null,
          capabilities: [],
          requires_confirmation: true,
        },
      ],
    }),
  );
  return startRunner({ manifests: [agentcli, runloop], grantedCapabilities: ['exec'], adminPort: 0, ...overrides });
}

/** The message JSON.parse gives for `text` in this Node version. */
function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('valid JSON');
}

async function invoke(rapUrl: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${rapUrl}/invoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const base = (callback: string, extra: Record<string, unknown> = {}) => ({
  operation: 'host_echo',
  arguments: { a: 1 },
  id: crypto.randomUUID(),
  call_id: 'call-1',
  group_id: 'thread-1',
  callback_url: callback,
  ...extra,
});

describe('RAP tool server', () => {
  it('serves the runnable catalog as a valid RAP toolset (names mangled, dialect named, crosswalk annotations)', async () => {
    const r = await runnerWithTools();
    const res = await fetch(`${r.rapUrl}/.well-known/rap-toolset`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { name: string; endpoint: string; tools: Array<Record<string, unknown>> };
    expect(doc.name).toBe(`tools-runner/${WS}`);
    expect(doc.endpoint).toBe(`${r.rapUrl}/invoke`);
    expect(doc.tools.map((t) => t.name)).toEqual(['boom', 'host_echo', 'mail_send', 'sleeper']);
    expect(doc.tools[1]).toEqual({
      name: 'host_echo',
      description: 'test tool host.echo',
      inputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { a: { type: 'number' } },
      },
      annotations: {},
    });
    expect(doc.tools[2]?.['annotations']).toEqual({ destructive: true });
    expect(validateToolset(doc, createSchemaValidator()).ok).toBe(true);
  });

  it('validates invocations with clear 4xx answers and records none of them', async () => {
    const r = await runnerWithTools();
    const cb = 'http://127.0.0.1:9/cb';
    const cases: Array<[unknown, number, string, string]> = [
      ['{not json', 400, 'input.invalid', `request body is not valid JSON: ${jsonError('{not json')}`],
      [[], 400, 'input.invalid', 'invocation must be a JSON object, got an array'],
      [base(cb, { operation: undefined }), 400, 'input.invalid', 'operation must be a non-empty string, got undefined'],
      [base(cb, { arguments: [1] }), 400, 'input.invalid', 'arguments must be a JSON object, got [1]'],
      [base(cb, { id: undefined }), 400, 'input.invalid', 'id is required'],
      [
        base(cb, { id: '' }),
        400,
        'input.invalid',
        'id must be a non-empty string of at most 200 printable characters, got ""',
      ],
      [
        base(cb, { id: 'a\u0001b' }),
        400,
        'input.invalid',
        'id must be a non-empty string of at most 200 printable characters, got "a\\u0001b"',
      ],
      [
        base(cb, { id: 'x'.repeat(201) }),
        400,
        'input.invalid',
        `id must be a non-empty string of at most 200 printable characters, got "${'x'.repeat(78)}…`,
      ],
      [base(cb, { group_id: undefined }), 400, 'input.invalid', 'group_id is required'],
      [
        base(cb, { call_id: 5 }),
        400,
        'input.invalid',
        'call_id must be a non-empty string of at most 200 printable characters, got 5',
      ],
      [
        base(cb, { thread_ancestors: 'root' }),
        400,
        'input.invalid',
        'thread_ancestors must be an array of strings, got "root"',
      ],
      [
        base(cb, { callback_url: undefined }),
        400,
        'input.invalid',
        'callback_url must be a non-empty string, got undefined',
      ],
      [base('not a url'), 400, 'input.invalid', 'callback_url is not an absolute URL: "not a url"'],
      [base('file:///etc/passwd'), 400, 'input.invalid', 'callback_url must use http or https, got "file"'],
      [base('gopher://127.0.0.1:70/x'), 400, 'input.invalid', 'callback_url must use http or https, got "gopher"'],
      [base('http://user:pw@127.0.0.1:9/cb'), 400, 'input.invalid', 'callback_url must not contain credentials'],
      [
        base('http://10.0.0.1/cb'),
        403,
        'permission.denied',
        'callback_url host "10.0.0.1" is not allowed: only loopback addresses and the hosts of --rap-callback-hosts may receive results',
      ],
      [
        base('http://169.254.169.254/latest/meta-data'),
        403,
        'permission.denied',
        'callback_url host "169.254.169.254" is not allowed: only loopback addresses and the hosts of --rap-callback-hosts may receive results',
      ],
      [
        base('http://localhost.evil.example/cb'),
        403,
        'permission.denied',
        'callback_url host "localhost.evil.example" is not allowed: only loopback addresses and the hosts of --rap-callback-hosts may receive results',
      ],
      [
        base('http://0.0.0.0:9/cb'),
        403,
        'permission.denied',
        'callback_url host "0.0.0.0" is not allowed: only loopback addresses and the hosts of --rap-callback-hosts may receive results',
      ],
      [
        base(cb, { operation: 'nope' }),
        404,
        'tool.not_found',
        'unknown operation "nope": the toolset has no such tool',
      ],
      [
        base(cb, { operation: 'host.echo' }),
        404,
        'tool.not_found',
        'unknown operation "host.echo": the toolset has no such tool',
      ],
      [
        JSON.stringify(base(cb, { arguments: { s: 'x'.repeat(1024 * 1024) } })),
        413,
        'payload_too_large',
        'request body exceeds the limit of 1048576 bytes',
      ],
    ];
    for (const [body, status, code, message] of cases) {
      expect({ body, answer: await invoke(r.rapUrl, body) }).toEqual({
        body,
        answer: { status, body: { code, error: message } },
      });
    }
    const get = await fetch(`${r.rapUrl}/invoke`);
    expect({ status: get.status, allow: get.headers.get('allow'), body: await get.json() }).toEqual({
      status: 405,
      allow: 'POST',
      body: { code: 'method_not_allowed', error: 'method GET not allowed on /invoke; use POST' },
    });
    expect(await r.client.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS })).toEqual([]);
  });

  it('accepts callback hosts the operator listed (exact host:port)', async () => {
    const r = await runnerWithTools({ rapCallbackHosts: ['cb.example:8080'] });
    expect((await invoke(r.rapUrl, base('http://cb.example:8080/x'))).status).toBe(200);
    expect((await invoke(r.rapUrl, base('http://cb.example:9090/x'))).status).toBe(403);
  });

  it('runs an invocation through the request path and POSTs the tool_result to callback_url', async () => {
    const r = await runnerWithTools();
    const receiver = await startReceiver();
    const body = base(`${receiver.url}/cb`, { user_id: 'alice smith' });
    expect(await invoke(r.rapUrl, body)).toEqual({ status: 200, body: { accepted: true, id: body.id } });
    await receiver.waitFor(1);
    expect(receiver.posts[0]).toEqual({
      path: '/cb',
      body: { type: 'tool_result', group_id: 'thread-1', id: body.id, call_id: 'call-1', text: '{"a":1}' },
    });
    const requests = await requestsByRapId(r, body.id);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.tags).toEqual(['tool:request', WS, 'agent:rap:alice_smith']);
    expect(requests[0]?.context).toMatchObject({
      tool: 'host.echo',
      input: { a: 1 },
      requestedBy: 'rap:alice_smith',
      rap: { id: body.id, group_id: 'thread-1', call_id: 'call-1', user_id: 'alice smith' },
    });
    expect(String(requests[0]?.context?.['requestId'])).toMatch(/^rap-[A-Za-z0-9_-]{24}$/);
    const answers = await responsesFor(r, requests[0]!.id);
    expect(answers.map((a) => a.status)).toEqual(['success']);
  });

  it('never runs a retried invoke twice: one request, one answer, and a late retry gets the result again', async () => {
    const r = await runnerWithTools();
    const receiver = await startReceiver();
    const body = base(`${receiver.url}/cb`);
    const [first, second] = await Promise.all([invoke(r.rapUrl, body), invoke(r.rapUrl, body)]);
    expect([first.status, second.status]).toEqual([200, 200]);
    await receiver.waitFor(1);
    expect(await invoke(r.rapUrl, { ...body, callback_url: `${receiver.url}/again` })).toEqual({
      status: 200,
      body: { accepted: true, id: body.id },
    });
    const again = await eventually(() => receiver.posts.find((p) => p.path === '/again'));
    expect(again.body).toEqual(receiver.posts[0]?.body);
    const requests = await requestsByRapId(r, body.id);
    expect(requests).toHaveLength(1);
    expect(await responsesFor(r, requests[0]!.id)).toHaveLength(1);
    expect(await invoke(r.rapUrl, { ...body, arguments: { a: 2 } })).toEqual({
      status: 409,
      body: {
        code: 'conflict',
        error: `id "${body.id}" was already used for a different invocation; a retry must repeat the operation and arguments exactly`,
      },
    });
  });

  it('sends a failed run as an "Error: <code>: <message>" text', async () => {
    const r = await runnerWithTools();
    const receiver = await startReceiver();
    const body = base(`${receiver.url}/cb`, { operation: 'boom', arguments: {} });
    expect((await invoke(r.rapUrl, body)).status).toBe(200);
    await receiver.waitFor(1);
    const [request] = await requestsByRapId(r, body.id);
    const [response] = await responsesFor(r, request!.id);
    expect(response?.status).toBe('error');
    expect(receiver.posts[0]?.body['text']).toBe(`Error: ${response?.error?.code}: ${response?.error?.message}`);
    // an exec host tool that was started and reported its own failure keeps its code
    expect(response?.error?.code).toBe('tool.error');
    expect(response?.error?.details?.['effects_count']).toBe(1);
  });

  it('retries a delivery the receiver answered 503', async () => {
    const r = await runnerWithTools();
    const receiver = await startReceiver();
    receiver.statuses.push(503, 502);
    expect((await invoke(r.rapUrl, base(`${receiver.url}/cb`))).status).toBe(200);
    await receiver.waitFor(3);
    expect(receiver.posts.map((p) => p.body)).toEqual([
      receiver.posts[0]?.body,
      receiver.posts[0]?.body,
      receiver.posts[0]?.body,
    ]);
  });

  it('cancel withdraws a request no replica claimed; a running one finishes, is recorded, and sends nothing', async () => {
    const r = await runnerWithTools({ concurrency: 1, claims: 'breadcrumb' });
    // breadcrumb claims: the test watches the claim record to know the first call is running
    const receiver = await startReceiver();
    const running = base(`${receiver.url}/cb`, { operation: 'sleeper', arguments: {}, group_id: 'g1' });
    expect((await invoke(r.rapUrl, running)).status).toBe(200);
    await eventually(async () =>
      (await r.client.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim, tag: WS })).length > 0 ? true : undefined,
    );
    const queued = [
      base(`${receiver.url}/cb`, { operation: 'sleeper', arguments: {}, group_id: 'g2' }),
      base(`${receiver.url}/cb`, { operation: 'sleeper', arguments: {}, group_id: 'g2' }),
    ];
    for (const body of queued) expect((await invoke(r.rapUrl, body)).status).toBe(200);
    const post = async (path: string, body: string) => {
      const res = await fetch(`${r.rapUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { status: res.status, body: await res.json() };
    };
    expect(await post('/cancel_tool_call', '{junk')).toEqual({
      status: 200,
      body: { ok: true, withdrawn: 0, running: 0 },
    });
    expect(await post('/cancel_tool_call', JSON.stringify({ thread_id: 'other', tool_call_id: running.id }))).toEqual({
      status: 200,
      body: { ok: true, withdrawn: 0, running: 0 },
    });
    expect(await post('/close_thread', JSON.stringify({ thread_id: 'g2' }))).toEqual({
      status: 200,
      body: { ok: true, withdrawn: 2, running: 0 },
    });
    expect(await post('/cancel_tool_call', JSON.stringify({ thread_id: 'g1', tool_call_id: running.id }))).toEqual({
      status: 200,
      body: { ok: true, withdrawn: 0, running: 1 },
    });
    const [runningRequest] = await requestsByRapId(r, running.id);
    await eventually(async () => ((await responsesFor(r, runningRequest!.id)).length === 1 ? true : undefined));
    for (const body of queued) expect(await requestsByRapId(r, body.id)).toEqual([]);
    const health = (await (await fetch(`${r.service.adminUrl}/health`)).json()) as { rap: { pending: number } };
    expect(health.rap.pending).toBe(0);
    expect(receiver.posts).toEqual([]);
  });
});

describe('deliverCallback', () => {
  const message = { type: 'tool_result' as const, group_id: 'g', id: 'i', text: 't' };
  const fast = { ...DEFAULT_DELIVERY, initialDelayMs: 10 };

  it('does not retry a 4xx, and never follows a redirect', async () => {
    const receiver = await startReceiver();
    receiver.statuses.push(400);
    expect(await deliverCallback(`${receiver.url}/cb`, message, fast)).toEqual({
      ok: false,
      attempts: 1,
      reason: 'HTTP 400 (not retried)',
    });
    receiver.statuses.push(302);
    expect(await deliverCallback(`${receiver.url}/cb`, message, fast)).toEqual({
      ok: false,
      attempts: 1,
      reason: 'HTTP 302 (not retried)',
    });
    expect(receiver.posts.map((p) => p.path)).toEqual(['/cb', '/cb']);
  });

  it('gives up after the configured attempts', async () => {
    const receiver = await startReceiver();
    receiver.statuses.push(500, 500, 500);
    expect(await deliverCallback(`${receiver.url}/cb`, message, { ...fast, attempts: 3 })).toEqual({
      ok: false,
      attempts: 3,
      reason: 'HTTP 500',
    });
  });
});

describe('RAP tool server against forgery', () => {
  it("delivers only the runner's own answer, never a tool.response.v1 someone else wrote for the request", async () => {
    const r = await runnerWithTools();
    const receiver = await startReceiver();
    const body = base(`${receiver.url}/cb`, { operation: 'sleeper', arguments: {} });
    expect((await invoke(r.rapUrl, body)).status).toBe(200);
    const [request] = await eventually(async () => {
      const found = await requestsByRapId(r, body.id);
      return found.length > 0 ? found : undefined;
    });
    const rid = String(request!.context?.['requestId']);
    // A forged answer: right tags and metadata, but without the runner's secret answer tag.
    await r.client.createBreadcrumb({
      title: 'Response: sleeper',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, 'tool:response', `request:${rid}`],
      context: {
        request_id: rid,
        tool: 'sleeper',
        status: 'success',
        output: { forged: true },
        execution_time_ms: 1,
        metadata: { request_breadcrumb_id: request!.id },
        timestamp: new Date().toISOString(),
      },
    });
    await receiver.waitFor(1);
    expect(receiver.posts.map((p) => p.body['text'])).toEqual(['{}']);
  });

  it('a withdrawn id cannot be reused: 409, and nothing runs', async () => {
    const r = await runnerWithTools({ concurrency: 1, claims: 'breadcrumb' });
    // breadcrumb claims: the test watches the claim record to know the first call is running
    const receiver = await startReceiver();
    const blocker = base(`${receiver.url}/cb`, { operation: 'sleeper', arguments: {} });
    expect((await invoke(r.rapUrl, blocker)).status).toBe(200);
    await eventually(async () =>
      (await r.client.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim, tag: WS })).length > 0 ? true : undefined,
    );
    const queued = base(`${receiver.url}/cb`);
    expect((await invoke(r.rapUrl, queued)).status).toBe(200);
    const res = await fetch(`${r.rapUrl}/cancel_tool_call`, {
      method: 'POST',
      body: JSON.stringify({ thread_id: queued.group_id, tool_call_id: queued.id }),
    });
    expect(await res.json()).toEqual({ ok: true, withdrawn: 1, running: 0 });
    expect(await invoke(r.rapUrl, queued)).toEqual({
      status: 409,
      body: {
        code: 'conflict',
        error: `id "${queued.id}" was used by an earlier invocation whose request was withdrawn; use a new id`,
      },
    });
    expect(await requestsByRapId(r, queued.id)).toEqual([]);
  });
});
