// The console's JSON API against the real service: live screening with line:column, the catalog's
// states and reasons, example runs in the sandbox, calls through the runner and the inspector
// (forged answers marked), tool creation, and an explicit error for every bad input.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import {
  cleanupConsole,
  putTool,
  startConsoleService,
  toolContext,
  until,
  UPPER,
  WS,
  type Running,
} from './helpers.js';
import { postJson, raw } from './http.js';

let run: Running;
const SLOW =
  '// Waits, then echoes.\nexport async function execute(input: { text: string }) {\n  await new Promise((r) => setTimeout(r, 4000));\n  return { text: input.text };\n}\n';
const EVAL_SOURCE =
  '// Evaluates the text.\nexport async function execute(input: { text: string }) {\n  const out = eval(input.text);\n  return { text: String(out) };\n}\n';

beforeAll(async () => {
  run = await startConsoleService();
  await putTool(run.client, toolContext('a-shout', UPPER));
  await putTool(run.client, toolContext('a-evil', EVAL_SOURCE));
  await putTool(run.client, toolContext('a-slow', SLOW));
  await until(async () => {
    const body = (await raw(`${run.adminUrl}/api/catalog`)).json() as { tools: Array<{ name: string; state: string }> };
    return body.tools.length === 3 &&
      ['a-shout', 'a-slow'].every((name) => body.tools.some((t) => t.name === name && t.state === 'runnable'))
      ? true
      : undefined;
  }, 'the catalog');
}, 60_000);

afterAll(cleanupConsole, 60_000);

describe('console API', () => {
  it('lists runnable and rejected tools with each reason at line:column', async () => {
    const body = (await raw(`${run.adminUrl}/api/catalog`)).json();
    expect(body.counts).toEqual({ total: 3, runnable: 2, deprecated: 0, rejected: 1 });
    const evil = body.tools.find((t: { name: string }) => t.name === 'a-evil');
    expect(evil).toMatchObject({
      state: 'rejected',
      kind: 'code',
      version: '1.0.0',
      source: 'agent',
      calls: 0,
      errorRate: null,
    });
    expect(evil.errors).toEqual([
      {
        code: 'screen.eval',
        path: '/code/source',
        message: 'eval is not allowed: eval(input.text)',
        line: 3,
        column: 15,
      },
    ]);
    expect(body.tools.find((t: { name: string }) => t.name === 'a-shout')).toMatchObject({
      state: 'runnable',
      version: '1.0.0',
      source: 'agent',
      agent: 'console-test',
      errors: [],
    });
  });

  it('screens a definition with the real validation', async () => {
    const reply = await postJson(`${run.adminUrl}/api/screen`, { tool_spec: toolContext('a-x', EVAL_SOURCE) });
    expect(reply.status).toBe(200);
    expect(reply.json()).toEqual({
      ok: false,
      warnings: [],
      errors: [
        {
          code: 'screen.eval',
          path: '/code/source',
          message: 'eval is not allowed: eval(input.text)',
          line: 3,
          column: 15,
        },
      ],
    });
    const clean = (await postJson(`${run.adminUrl}/api/screen`, { tool_spec: toolContext('a-x', UPPER) })).json();
    expect(clean).toEqual({ ok: true, errors: [], warnings: [] });
  });

  it('answers every malformed body with an explicit error', async () => {
    const notJson = await raw(`${run.adminUrl}/api/screen`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"tool_spec":',
    });
    expect(notJson.status).toBe(400);
    expect(notJson.json().error).toMatch(/^request body is not valid JSON: /);
    expect((await postJson(`${run.adminUrl}/api/screen`, [1])).json()).toEqual({
      code: 'bad_request',
      error: 'request body must be a JSON object, got array',
    });
    expect((await postJson(`${run.adminUrl}/api/screen`, {})).json()).toEqual({
      code: 'bad_request',
      error: 'tool_spec must be a JSON object, got undefined',
    });
    expect((await postJson(`${run.adminUrl}/api/screen`, { tool_spec: 'x' })).json()).toEqual({
      code: 'bad_request',
      error: 'tool_spec must be a JSON object, got string',
    });
    const huge = await raw(`${run.adminUrl}/api/screen`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"tool_spec":{"x":"${'a'.repeat(1024 * 1024)}"}}`,
    });
    expect(huge.status).toBe(413);
    expect(huge.json().code).toBe('payload_too_large');
    expect((await postJson(`${run.adminUrl}/api/tools/a-shout/call`, { nope: 1 })).json()).toEqual({
      code: 'bad_request',
      error: 'body must have an "input" field (the tool input)',
    });
    expect((await postJson(`${run.adminUrl}/api/create`, { tool_spec: {}, replaces_version: 3 })).json()).toEqual({
      code: 'bad_request',
      error: 'replaces_version must be a non-empty string, got 3',
    });
    expect((await raw(`${run.adminUrl}/api/tools/nope`)).json()).toEqual({
      code: 'not_found',
      error: 'no tool named "nope"',
    });
    expect((await raw(`${run.adminUrl}/api/tools/%E0%A4%A`)).json()).toEqual({
      code: 'bad_request',
      error: 'tool name "%E0%A4%A" is not valid percent-encoding',
    });
    expect((await postJson(`${run.adminUrl}/api/tools/a-shout/examples/5`, {})).json()).toEqual({
      code: 'not_found',
      error: 'tool "a-shout" has 1 example(s); there is no example "5"',
    });
    expect((await postJson(`${run.adminUrl}/api/tools/a-evil/examples/0`, {})).json()).toEqual({
      code: 'not_found',
      error: 'no runnable code tool named "a-evil"',
    });
    expect((await raw(`${run.adminUrl}/api/create/unknown`)).json()).toEqual({
      code: 'not_found',
      error: 'no create request "unknown" was made from this console',
    });
    expect((await raw(`${run.adminUrl}/api/nothing`)).json()).toEqual({
      code: 'not_found',
      error: 'no console API route GET /api/nothing',
    });
    // The service keeps serving.
    expect((await raw(`${run.adminUrl}/api/catalog`)).status).toBe(200);
  });

  it('runs examples in the sandbox and reports a wrong output', async () => {
    const one = (await postJson(`${run.adminUrl}/api/tools/a-shout/examples/0`, {})).json();
    expect(one).toMatchObject({
      index: 0,
      description: 'shouts',
      ok: true,
      input: { text: 'hi' },
      output: { text: 'HI' },
      expected: { text: 'HI' },
    });
    const wrong = toolContext(
      'a-wrong',
      'export async function execute(input: { text: string }) {\n  console.log("lower", input.text);\n  return { text: input.text };\n}\n',
    );
    const reply = await postJson(`${run.adminUrl}/api/examples`, { tool_spec: wrong });
    expect(reply.status).toBe(200);
    const body = reply.json();
    expect(body.ok).toBe(false);
    expect(body.examples[0]).toMatchObject({
      ok: false,
      output: { text: 'hi' },
      error: {
        code: 'example.mismatch',
        message: 'output differs from the example: expected {"text":"HI"}, got {"text":"hi"}',
      },
    });
    expect(JSON.stringify(body.examples[0].logs)).toContain('lower');
    const invalid = await postJson(`${run.adminUrl}/api/examples`, { tool_spec: toolContext('a-x', EVAL_SOURCE) });
    expect(invalid.status).toBe(422);
    expect(invalid.json().errors[0].code).toBe('screen.eval');
  });

  it('calls a tool through the runner and inspects the call; a forged answer is marked', async () => {
    const call = await postJson(`${run.adminUrl}/api/tools/a-shout/call`, { input: { text: 'inspect me' } });
    expect(call.status).toBe(202);
    const { rid, request_breadcrumb_id: requestId } = call.json();
    const inspected = await until(async () => {
      const r = (await raw(`${run.adminUrl}/api/requests/${rid}`)).json();
      return r.responses?.some((x: { genuine: boolean }) => x.genuine) ? r : undefined;
    }, 'the answer');
    expect(inspected.request).toMatchObject({ id: requestId, tool: 'a-shout', agentId: 'console' });
    expect(inspected.attempts).toBe(1);
    expect(inspected.responses[0].context).toMatchObject({
      request_id: rid,
      status: 'success',
      output: { text: 'INSPECT ME' },
      metadata: { attempt: 1, request_breadcrumb_id: requestId },
    });
    expect(inspected.timings.totalMs).toBeGreaterThan(0);

    await run.client.createBreadcrumb({
      title: 'forged',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, TAG.request(rid)],
      context: {
        request_id: rid,
        tool: 'a-shout',
        status: 'success',
        output: { text: 'FORGED' },
        execution_time_ms: 1,
        metadata: { request_breadcrumb_id: requestId },
        timestamp: new Date().toISOString(),
      },
    });
    // A forger copying the genuine answer's tags (its answer tag included) but answering another rid in the body: not genuine either.
    const genuineTags = (await run.client.getBreadcrumbFull(inspected.responses[0].id)).tags;
    await run.client.createBreadcrumb({
      title: 'forged',
      schema_name: SCHEMA.ToolResponse,
      tags: genuineTags,
      context: {
        request_id: 'another-request',
        tool: 'a-shout',
        status: 'success',
        output: { text: 'COPIED TAGS' },
        execution_time_ms: 1,
        metadata: { request_breadcrumb_id: requestId },
        timestamp: new Date().toISOString(),
      },
    });
    const again = (await raw(`${run.adminUrl}/api/requests/${rid}`)).json();
    expect(again.responses.map((r: { genuine: boolean }) => r.genuine)).toEqual([true, false, false]);
    expect(again.responses[0].context.output).toEqual({ text: 'INSPECT ME' });
    expect(
      again.responses
        .filter((r: { genuine: boolean }) => !r.genuine)
        .map((r: { context: { output: unknown } }) => r.context.output),
    ).toEqual(expect.arrayContaining([{ text: 'FORGED' }, { text: 'COPIED TAGS' }]));

    // The figures are recorded once the answer is stored and the call settled (audit, idempotency):
    // a moment after the answer is visible, which a loaded machine can stretch.
    const page = await until(async () => {
      const body = (await raw(`${run.adminUrl}/api/tools/a-shout`)).json();
      return body.stats.recent.some((c: { rid: string; status: string }) => c.rid === rid && c.status !== 'running')
        ? body
        : undefined;
    }, "the call in the tool's figures");
    expect(page.stats.calls).toBeGreaterThanOrEqual(1);
    expect(page.stats.recent.find((c: { rid: string }) => c.rid === rid)).toMatchObject({
      status: 'success',
      agentId: 'console',
    });
    expect(page.definition.code.source).toBe(UPPER);

    const missing = await raw(`${run.adminUrl}/api/requests/no-such-request`);
    expect(missing.status).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'not_found', error: `no request "no-such-request" in ${WS}` });
  });

  it('a call whose request is deleted while it runs (a cancelled MCP call) ends as withdrawn, not running for good', async () => {
    const call = await postJson(`${run.adminUrl}/api/tools/a-slow/call`, { input: { text: 'cancel me' } });
    expect(call.status).toBe(202);
    const { rid, request_breadcrumb_id: requestId } = call.json();
    await until(
      async () =>
        (await raw(`${run.adminUrl}/api/requests/${rid}`)).json().live?.status === 'running' ? true : undefined,
      'the call running',
    );
    await run.client.deleteBreadcrumb(requestId);
    const ended = await until(async () => {
      const r = (await raw(`${run.adminUrl}/api/requests/${rid}`)).json();
      return r.live?.status !== 'running' ? r : undefined;
    }, 'the call ending');
    expect(ended.live).toMatchObject({ rid, tool: 'a-slow', status: 'withdrawn', finishedAt: expect.any(String) });
    expect(ended.responses).toEqual([]);
    const page = (await raw(`${run.adminUrl}/api/tools/a-slow`)).json();
    expect(page.stats.recent.find((c: { rid: string }) => c.rid === rid)).toMatchObject({ status: 'withdrawn' });
    expect(page.stats.calls).toBe(0);
  });

  it('creates a tool with tool.create.request.v1 and shows a rejection with its reasons', async () => {
    const rejected = (
      await postJson(`${run.adminUrl}/api/create`, { tool_spec: toolContext('a-made-bad', EVAL_SOURCE) })
    ).json();
    const answer = await until(async () => {
      const r = (await raw(`${run.adminUrl}/api/create/${rejected.rid}`)).json();
      return r.status === 'answered' ? r.response : undefined;
    }, 'the create response');
    expect(answer.status).toBe('rejected');
    expect(answer.errors).toEqual([
      {
        code: 'screen.eval',
        path: '/tool_spec/code/source',
        message: 'eval is not allowed: eval(input.text)',
        line: 3,
        column: 15,
      },
    ]);

    const created = (await postJson(`${run.adminUrl}/api/create`, { tool_spec: toolContext('a-made', UPPER) })).json();
    const ok = await until(async () => {
      const r = (await raw(`${run.adminUrl}/api/create/${created.rid}`)).json();
      return r.status === 'answered' ? r.response : undefined;
    }, 'the create response');
    expect(ok).toMatchObject({ status: 'created', tool: { name: 'a-made', version: '1.0.0' }, errors: [] });
  });
});
