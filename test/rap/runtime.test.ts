// The RAP runtime against a spec-faithful test server (spec-server.ts), through a real in-process
// service: discovery (P5), whole-toolset rejection (P7), name clashes (P8), invocation body (P9),
// 503 and refused connections (P1, P2), cancel on timeout (P10), callbacks, refresh.

import { describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { answer, eventually, hostTool, manifest, onCleanup, request, startRunner, tempDir, WS } from './helpers.js';
import { deadUrl, startSpecServer, type SpecServer } from './spec-server.js';

const lookup = {
  name: 'lookup',
  description: 'looks a key up',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  displayScript: '"Lookup " + args.q',
};

async function spec(tools: unknown[] = [lookup], name = 'lookups'): Promise<SpecServer> {
  const server = await startSpecServer((endpoint) => ({ name, endpoint, tools }));
  onCleanup(() => server.close());
  return server;
}

async function health(adminUrl: string | undefined): Promise<{
  rap: { runtime: { servers: Array<{ error?: string; tools: string[] }>; clashes: string[]; exposed: string[] } };
}> {
  const res = await fetch(`${adminUrl}/health`);
  return (await res.json()) as never;
}

describe('RAP runtime', () => {
  it('publishes a toolset as host tools and invokes with the P9 body; the callback result is the answer', async () => {
    const server = await spec();
    server.behaviour = { status: 200, reply: (inv) => `found ${(inv['arguments'] as { q: string }).q}` };
    const { client, rapUrl } = await startRunner({ rapServers: [server.url] });
    const published = await client.listBreadcrumbs({
      schema_name: SCHEMA.ToolLegacy,
      tag: TAG.tool('lookup'),
      include_context: true,
    });
    expect(published).toHaveLength(1);
    expect(published[0]?.context).toMatchObject({
      name: 'lookup',
      transport: 'rap',
      format: 'rap',
      toolset: 'lookups',
      display_script: '"Lookup " + args.q',
    });

    const rid = await request(client, 'lookup', { q: 'x' });
    const response = await answer(client, rid);
    expect(response.status).toBe('success');
    expect(response.output).toEqual({ text: 'found x' });
    expect(response.metadata['transport']).toBe('rap');
    expect(response.metadata['logs']).toEqual(['display: Lookup x']);
    expect(server.invocations).toHaveLength(1);
    const inv = server.invocations[0] as Record<string, unknown>;
    expect(Object.keys(inv).sort()).toEqual(['arguments', 'call_id', 'callback_url', 'group_id', 'id', 'operation']);
    expect(inv).toMatchObject({
      operation: 'lookup',
      arguments: { q: 'x' },
      call_id: rid,
      group_id: `tools-runner/${WS}`,
    });
    expect(inv['id']).toMatch(/^tr-[A-Za-z0-9_-]{32}$/);
    expect(String(inv['callback_url'])).toMatch(new RegExp(`^${rapUrl}/callback/[A-Za-z0-9_-]{32}$`));
    expect(server.callbackStatuses).toEqual([200]);
  });

  it('P1: an invocation answered 503 is retried, then ends with the exact synthetic error text', async () => {
    const server = await spec();
    server.behaviour = { status: 503 };
    const { client } = await startRunner({ rapServers: [server.url] });
    const response = await answer(client, await request(client, 'lookup', { q: 'x' }));
    // the invocations were sent (listed as effects), but the server's own answer decides the code
    const host = new URL(server.endpoint);
    expect(response.error).toMatchObject({
      code: 'dependency.unavailable',
      retryable: true,
      details: { effects_count: 4 },
    });
    expect(
      (response.error?.details?.['effects'] as Array<{ kind: string; target: string }>).map(
        (e) => `${e.kind} ${e.target}`,
      ),
    ).toEqual(Array(4).fill(`rap.invoke ${host.hostname}:${host.port}`));
    expect(response.error?.message).toBe(
      `Error: RAP tool 'lookup' failed: the server at ${server.endpoint} responded with HTTP 503. No result will arrive for this call.`,
    );
    expect(server.invocations).toHaveLength(4);
    expect(new Set(server.invocations.map((i) => i['id'])).size).toBe(1);
  });

  it('P1/P9: a 4xx answer is never retried', async () => {
    const server = await spec();
    server.behaviour = { status: 400 };
    const { client } = await startRunner({ rapServers: [server.url] });
    const response = await answer(client, await request(client, 'lookup', { q: 'x' }));
    expect(response.error?.code).toBe('tool.error');
    expect(response.error?.message).toBe(
      `Error: RAP tool 'lookup' failed: the server at ${server.endpoint} responded with HTTP 400. No result will arrive for this call.`,
    );
    expect(server.invocations).toHaveLength(1);
  });

  it('P9: a 503 followed by an ack succeeds with the same invocation id', async () => {
    const server = await spec();
    server.behaviour = (_inv, n) => (n === 1 ? { status: 503 } : { status: 200, reply: () => 'second time lucky' });
    const { client } = await startRunner({ rapServers: [server.url] });
    const response = await answer(client, await request(client, 'lookup', { q: 'x' }));
    expect(response.output).toEqual({ text: 'second time lucky' });
    expect(server.invocations.map((i) => i['id'])).toEqual([
      server.invocations[0]?.['id'],
      server.invocations[0]?.['id'],
    ]);
  });

  it('P2: a refused connection is dependency.unavailable, and nothing is retried', async () => {
    const dead = await deadUrl();
    const server = await spec();
    server.toolset = { status: 200, json: { name: 'lookups', endpoint: `${dead}/invoke`, tools: [lookup] } };
    const { client } = await startRunner({ rapServers: [server.url] });
    const response = await answer(client, await request(client, 'lookup', { q: 'x' }));
    expect(response.error?.code).toBe('dependency.unavailable');
    expect(response.error?.retryable).toBe(true);
    expect(response.error?.message).toBe(
      `RAP tool 'lookup': the server at ${dead}/invoke could not be reached (ECONNREFUSED)`,
    );
  });

  it('P5: a non-2xx discovery is reported with the exact text (trailing slash removed) and loads nothing', async () => {
    const server = await spec();
    server.toolset = { status: 404, body: 'no toolset here' };
    const { client, service } = await startRunner({ rapServers: [`${server.url}/`], adminPort: 0 });
    const doc = await health(service.adminUrl);
    expect(doc.rap.runtime.servers[0]?.error).toBe(
      `Toolset fetch from ${server.url}/.well-known/rap-toolset returned status 404: no toolset here`,
    );
    const response = await answer(client, await request(client, 'lookup', { q: 'x' }));
    expect(response.error?.code).toBe('tool.not_found');
  });

  it('P5: an unreachable discovery is reported', async () => {
    const dead = await deadUrl();
    const { service } = await startRunner({ rapServers: [dead], adminPort: 0 });
    const doc = await health(service.adminUrl);
    expect(doc.rap.runtime.servers[0]?.error).toBe(
      `Toolset fetch from ${dead}/.well-known/rap-toolset failed: ECONNREFUSED`,
    );
  });

  it('P7: one invalid tool rejects the whole toolset', async () => {
    const server = await spec([lookup, { name: 'other', inputSchema: { type: 'object' } }]);
    const { client, service } = await startRunner({ rapServers: [server.url], adminPort: 0 });
    const doc = await health(service.adminUrl);
    expect(doc.rap.runtime.servers[0]?.error).toBe(
      `Toolset from ${server.url}/.well-known/rap-toolset is invalid, so none of its tools is loaded: tools[1].description is required`,
    );
    expect(doc.rap.runtime.exposed).toEqual([]);
    const response = await answer(client, await request(client, 'lookup', { q: 'x' }));
    expect(response.error?.code).toBe('tool.not_found');
  });

  it('P8: a name defined by two toolsets is exposed by neither; the other tools are', async () => {
    const getX = { name: 'get_x', description: 'gets x', inputSchema: { type: 'object' } };
    const a = await spec([getX, { ...getX, name: 'a_only' }], 'set-a');
    const b = await spec([getX, { ...getX, name: 'b_only' }], 'set-b');
    a.behaviour = { status: 200, reply: () => 'from a' };
    b.behaviour = { status: 200, reply: () => 'from b' };
    const { client, service } = await startRunner({ rapServers: [a.url, b.url], adminPort: 0 });
    const doc = await health(service.adminUrl);
    expect(doc.rap.runtime.clashes).toEqual([
      `Duplicate tool names across toolsets: "get_x" is defined by "set-a" from ${a.url}/.well-known/rap-toolset, "set-b" from ${b.url}/.well-known/rap-toolset; neither is exposed`,
    ]);
    expect(doc.rap.runtime.exposed).toEqual(['a_only', 'b_only']);
    expect((await answer(client, await request(client, 'get_x', {}))).error?.code).toBe('tool.not_found');
    expect((await answer(client, await request(client, 'a_only', {}))).output).toEqual({ text: 'from a' });
    expect((await answer(client, await request(client, 'b_only', {}))).output).toEqual({ text: 'from b' });
    expect(await client.listBreadcrumbs({ schema_name: SCHEMA.ToolLegacy, tag: TAG.tool('get_x') })).toHaveLength(0);
  });

  it('P8: a RAP tool named like a local host tool: neither is exposed (and the local description is withdrawn)', async () => {
    const server = await spec();
    const dir = tempDir();
    const path = manifest(dir, [hostTool('lookup', 'echo-json')]);
    const { client, service } = await startRunner({ rapServers: [server.url], adminPort: 0, manifests: [path] });
    const doc = await health(service.adminUrl);
    expect(doc.rap.runtime.clashes).toEqual([
      `RAP tool "lookup" of toolset "lookups" from ${server.url}/.well-known/rap-toolset has the name of a local host tool; neither is exposed`,
    ]);
    expect((await answer(client, await request(client, 'lookup', { q: 'x' }))).error?.code).toBe('tool.not_found');
    expect(server.invocations).toHaveLength(0);
    expect(await client.listBreadcrumbs({ schema_name: SCHEMA.ToolLegacy, tag: TAG.tool('lookup') })).toHaveLength(0);
  });

  it('P10: no result within the timeout ends the call as timeout (unknown commit: the call was sent) and cancels it on the server', async () => {
    const server = await spec();
    server.behaviour = { status: 200, hold: true };
    const { client } = await startRunner({ rapServers: [server.url], rapResultTimeoutMs: 1000 });
    const response = await answer(client, await request(client, 'lookup', { q: 'x' }));
    // a RAP tool without a read-only contract is side-effecting; its invocation is an effect
    expect(response.error?.code).toBe('timeout.unknown-commit');
    const host = new URL(server.endpoint);
    expect(response.error?.message).toBe(
      `RAP tool 'lookup' sent no result within 1000 ms (the server at ${server.endpoint} acknowledged the call); it had 1 effect (rap.invoke ${host.hostname}:${host.port}), so its action may have committed: check before retrying`,
    );
    await server.waitFor('cancels', 1);
    expect(server.cancels[0]).toEqual({
      path: '/cancel_tool_call',
      thread_id: `tools-runner/${WS}`,
      tool_call_id: server.invocations[0]?.['id'],
    });
  });

  it('callbacks: unknown token 404, wrong id or type 400; the right one settles the call', async () => {
    const server = await spec();
    server.behaviour = { status: 200, hold: true };
    const { client, rapUrl } = await startRunner({ rapServers: [server.url] });
    const rid = await request(client, 'lookup', { q: 'x' });
    await server.waitFor('invocations', 1);
    const inv = server.invocations[0] as Record<string, unknown>;
    const post = async (url: string, body: unknown) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const good = {
      type: 'tool_result',
      group_id: inv['group_id'],
      id: inv['id'],
      text: 'Error: input.invalid: q is unknown',
    };
    expect(await post(`${rapUrl}/callback/not-a-token`, good)).toEqual({
      status: 404,
      body: { code: 'not_found', error: 'no RAP call is waiting on this callback URL (unknown, settled or timed out)' },
    });
    expect(await post(String(inv['callback_url']), { ...good, id: 'forged' })).toEqual({
      status: 400,
      body: { code: 'input.invalid', error: `callback id "forged" does not match the call's id` },
    });
    expect(await post(String(inv['callback_url']), { ...good, type: 'oauth' })).toEqual({
      status: 400,
      body: { code: 'input.invalid', error: 'callback type "oauth" is not supported; only "tool_result" is' },
    });
    expect(await post(String(inv['callback_url']), good)).toEqual({ status: 200, body: { settled: true } });
    const response = await answer(client, rid);
    // the tool refused before acting: its invocation is withdrawn, the code stays
    expect(response.error).toMatchObject({ code: 'input.invalid', message: 'q is unknown' });
    expect(response.error?.details).toBeUndefined();
    expect((await post(String(inv['callback_url']), good)).status).toBe(404);
  });

  it('an "Error:" text without a known code is a tool.error carrying the whole text', async () => {
    const server = await spec();
    server.behaviour = { status: 200, reply: () => 'Error: the repository does not exist' };
    const { client } = await startRunner({ rapServers: [server.url] });
    const response = await answer(client, await request(client, 'lookup', { q: 'x' }));
    // the remote ran and reported its own failure: its error stands, the invocation is listed
    expect(response.error).toMatchObject({
      code: 'tool.error',
      message: 'Error: the repository does not exist',
      details: { effects_count: 1 },
    });
  });

  it('refetches on the interval: a new tool appears, an invalid toolset removes them all', async () => {
    const server = await spec();
    const { client } = await startRunner({ rapServers: [server.url], rapRefreshMs: 1000 });
    server.toolset = {
      status: 200,
      json: { name: 'lookups', endpoint: server.endpoint, tools: [lookup, { ...lookup, name: 'lookup2' }] },
    };
    await eventually(async () =>
      (await client.listBreadcrumbs({ schema_name: SCHEMA.ToolLegacy, tag: TAG.tool('lookup2') })).length === 1
        ? true
        : undefined,
    );
    expect((await answer(client, await request(client, 'lookup2', { q: 'y' }))).output).toEqual({ text: 'ok' });
    server.toolset = { status: 200, json: { name: '', endpoint: server.endpoint, tools: [lookup] } };
    await eventually(async () =>
      (await client.listBreadcrumbs({ schema_name: SCHEMA.ToolLegacy, tag: TAG.tool('lookup') })).length === 0
        ? true
        : undefined,
    );
    expect((await answer(client, await request(client, 'lookup', { q: 'y' }))).error?.code).toBe('tool.not_found');
  });

  it('refuses --rap-servers without the RAP listener', async () => {
    await expect(startRunner({ rapServers: ['http://127.0.0.1:1'], rapPort: -1 })).rejects.toMatchObject({
      code: 'config.invalid',
      message:
        '--rap-servers (http://127.0.0.1:1) needs the RAP listener for result callbacks: set --rap-port (0 picks a free port)',
    });
  });
});
