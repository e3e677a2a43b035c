// Host tools end to end: manifests loaded by a real runner process, published as tool.v1, routed
// with their names reserved (an agent's tool.code.v1 of the same name never answers in their place),
// rogue tool.v1 breadcrumbs never executed, confirmation failing closed, and the OpenAI export.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import {
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  runCli,
  startRunnerWithStore,
  tempDir,
  toolContext,
  WS,
} from './harness.js';

const bin = fileURLToPath(new URL('../fixtures/host-tools/bin/', import.meta.url));
let c: StoreClient;
let url: string;

beforeAll(async () => {
  const dir = tempDir();
  const agentcli = join(dir, 'agentcli-tools.json');
  writeFileSync(
    agentcli,
    JSON.stringify({
      tools: [
        {
          name: 'shared-name',
          description: 'host version of shared-name',
          schema: { type: 'object' },
          command: [join(bin, 'echo-json')],
        },
        {
          name: 'host.echo',
          description: 'echoes its arguments',
          schema: { type: 'object', properties: { a: { type: 'number' } } },
          command: [join(bin, 'echo-json')],
        },
      ],
    }),
  );
  const runloop = join(dir, 'runloop-tools.json');
  writeFileSync(
    runloop,
    JSON.stringify({
      version: 1,
      tools: [
        {
          id: 'mail.send',
          description: 'sends mail (needs confirmation)',
          transport: { kind: 'exec', command: join(bin, 'runloop-tool') },
          input_schema: { type: 'object' },
          result_schema: null,
          capabilities: [],
          requires_confirmation: true,
        },
      ],
    }),
  );
  ({ url } = await startRunnerWithStore([
    '--manifests',
    `${agentcli},${runloop}`,
    '--granted-capabilities',
    'exec',
    '--audit-dir',
    join(dir, 'audit'),
    '--approval-timeout-ms',
    '1000',
  ]));
  c = client(url);
});

afterAll(cleanupAll);

describe('host tools', () => {
  it('are published as tool.v1 descriptions (no command, no secrets)', async () => {
    const items = await c.listBreadcrumbs({
      schema_name: SCHEMA.ToolLegacy,
      tag: TAG.tool('host.echo'),
      include_context: true,
    });
    expect(items).toHaveLength(1);
    expect(items[0]?.context).toMatchObject({ name: 'host.echo', transport: 'exec', format: 'agentcli' });
    expect(items[0]?.context?.['manifest_digest']).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(items[0]?.context)).not.toContain(bin);
  });

  it('run through the pipeline', async () => {
    const response = await answer(c, await request(c, 'host.echo', { a: 1 }));
    expect(response.status).toBe('success');
    expect(response.output).toEqual({ a: 1 });
    expect(response.metadata['kind']).toBe('host');
  });

  it('validate input against the manifest schema', async () => {
    const response = await answer(c, await request(c, 'host.echo', { a: 'x' }));
    expect(response.error?.code).toBe('input.invalid');
    expect(response.error?.message).toMatch(/\/a: must be number/);
  });

  it('fail closed when confirmation is required and nobody approves in time (the familiar refusal text first)', async () => {
    const response = await answer(c, await request(c, 'mail.send', {}));
    expect(response.error?.code).toBe('approval.required');
    expect(response.error?.message).toMatch(
      /^confirmation required \(daemon lacks UI\/TUI decision\); refusing automatic approval \(approval \S+ for "mail\.send"@[0-9a-f]{12} timed out at \S+ with no decision from operator; timeout counts as deny\)$/,
    );
  });

  it('a tool.v1 breadcrumb that no local manifest defines is never executed', async () => {
    await c.createBreadcrumb({
      title: 'rogue',
      schema_name: SCHEMA.ToolLegacy,
      tags: [TAG.Tool, TAG.tool('rogue'), WS],
      context: { name: 'rogue', description: 'not ours', transport: 'exec', command: ['/bin/sh', '-c', 'id'] },
    });
    const response = await answer(c, await request(c, 'rogue', {}));
    expect(response.error?.code).toBe('tool.not_found');
  });
});

describe('routing', () => {
  it("never lets an agent's tool.code.v1 shadow a host tool: the operator's name is reserved", async () => {
    expect((await answer(c, await request(c, 'shared-name', { v: 1 }))).metadata['kind']).toBe('host');
    const id = await putTool(
      c,
      toolContext('shared-name', 'export async function execute() { return { from: "code" }; }'),
    );
    // Once the catalog has seen the record (it lists it as rejected, saying why), calls still reach the host tool.
    let reason: string | undefined;
    for (let i = 0; i < 100 && reason === undefined; i++) {
      const items = await c.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, tag: WS, include_context: true });
      const rejected = (items[0]?.context?.['rejectedTools'] ?? []) as Array<{ id: string; reason: string }>;
      reason = rejected.find((r) => r.id === id)?.reason;
      if (reason === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    expect(reason).toBe(
      `/name: the name "shared-name" is reserved by a host tool of the operator's manifests; no tool.code.v1 of that name runs`,
    );
    for (let i = 0; i < 3; i++) {
      const response = await answer(c, await request(c, 'shared-name', { v: i }));
      expect(response.metadata['kind']).toBe('host');
      expect(response.output).not.toEqual({ from: 'code' });
    }
    await c.deleteBreadcrumb(id);
    expect((await answer(c, await request(c, 'shared-name', { v: 2 }))).metadata['kind']).toBe('host');
  });
});

describe('export', () => {
  it('prints the runnable catalog as OpenAI function tools with mangled names and a reverse map', async () => {
    let exported:
      | { tools: Array<{ type: string; function: { name: string } }>; reverse: Record<string, string> }
      | undefined;
    for (let i = 0; i < 50; i++) {
      const cli = runCli(['export', '--format', 'openai', '--store-url', url]);
      const code = await cli.exited;
      expect(code, cli.stderr.join('')).toBe(0);
      exported = JSON.parse(cli.stdout.join('\n')) as typeof exported;
      if (exported?.reverse['host_echo']) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(exported?.reverse['host_echo']).toBe('host.echo');
    expect(exported?.reverse['mail_send']).toBe('mail.send');
    for (const tool of exported?.tools ?? []) {
      expect(tool.type).toBe('function');
      expect(tool.function.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    }
  });
});
