// Our RAP runtime consumes our own RAP tool server, end to end: runner B (`--rap-servers A`)
// publishes runner A's catalog as host tools; an agent's tool.request.v1 on B becomes a RAP
// invocation of A, which runs it through A's own request path (recorded in A's store), calls B
// back, and B answers the agent. Two real services, each with its own store, over real HTTP.

import { describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { answer, eventually, hostTool, manifest, request, startRunner, tempDir, WS } from './helpers.js';

const DOUBLE = {
  name: 'double',
  description: 'doubles n',
  version: '1.0.0',
  code: { language: 'typescript', source: 'export async function execute(input) { return { n: input.n * 2 }; }' },
  input_schema: { type: 'object', properties: { n: { type: 'number', description: 'a number' } }, required: ['n'] },
  output_schema: { type: 'object' },
  permissions: { net: false },
  limits: { timeout_ms: 10000, memory_mb: 64 },
  examples: [{ description: 'two', input: { n: 1 } }],
};

describe('RAP runtime <-> RAP tool server', () => {
  it("runs A's code and host tools for B's agents, recorded on both sides", async () => {
    const dir = tempDir();
    const a = await startRunner({
      manifests: [manifest(dir, [hostTool('host.echo', 'echo-json'), hostTool('boom', 'fail-boom')])],
    });
    await a.client.createBreadcrumb({
      title: 'double',
      schema_name: SCHEMA.ToolCode,
      tags: [TAG.Tool, TAG.tool('double'), WS],
      context: DOUBLE,
    });
    await eventually(async () => {
      const doc = (await (await fetch(`${a.rapUrl}/.well-known/rap-toolset`)).json()) as {
        tools: Array<{ name: string }>;
      };
      return doc.tools.some((t) => t.name === 'double') ? true : undefined;
    });
    const b = await startRunner({ rapServers: [a.rapUrl] });

    const echoed = await answer(b.client, await request(b.client, 'host_echo', { a: 1 }));
    expect(echoed).toMatchObject({
      status: 'success',
      output: { text: '{"a":1}' },
      metadata: { kind: 'host', transport: 'rap' },
    });
    const doubled = await answer(b.client, await request(b.client, 'double', { n: 21 }), 60_000);
    expect(doubled.output).toEqual({ text: '{"n":42}' });

    // A recorded both calls as its own requests, with the RAP caller's agent tag, and answered them.
    const onA = await a.client.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS, include_context: true });
    expect(onA.map((item) => [item.context?.['tool'], item.tags]).sort()).toEqual([
      ['double', ['tool:request', WS, 'agent:rap:tools-runner_workspace:tools']],
      ['host.echo', ['tool:request', WS, 'agent:rap:tools-runner_workspace:tools']],
    ]);
    expect(await a.client.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS })).toHaveLength(2);

    // An error on A keeps its code and message on B.
    const failed = await answer(b.client, await request(b.client, 'boom', {}));
    const [aAnswer] = (await a.client.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true }))
      .map((item) => item.context as { tool: string; error?: { code: string; message: string } })
      .filter((ctx) => ctx.tool === 'boom');
    // (an exec tool that was started and reported its own failure keeps its code on A)
    expect(aAnswer?.error?.code).toBe('tool.error');
    expect(failed.error).toMatchObject({ code: 'tool.error', message: aAnswer?.error?.message });

    // B checks arguments against A's schema before anything is sent.
    const invalid = await answer(b.client, await request(b.client, 'double', { n: 'x' }));
    expect(invalid.error?.code).toBe('input.invalid');
    expect(invalid.error?.message).toBe('input does not match the input schema of "double": /n: must be number');
    expect(await a.client.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS })).toHaveLength(3);

    // B does not offer A's tools again (no loops between runners).
    const bDoc = (await (await fetch(`${b.rapUrl}/.well-known/rap-toolset`)).json()) as { tools: unknown[] };
    expect(bDoc.tools).toEqual([]);
  });
});
