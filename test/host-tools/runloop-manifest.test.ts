// Runloop tools.json acceptance rows L1-L9 (contracts.md §2.3) plus the strict checks its text
// requires (absolute exec path, absolute URL, unique ids, schemas present) and schema refs.

import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { loadManifest, type HostTool } from '../../src/host-tools/index.js';
import { createTempDirs, validator, writeManifest } from './helpers.js';

const temp = createTempDirs();
afterEach(() => temp.cleanup());

const L1_TOOL = {
  id: 'mail.smtp_send',
  description: 'Send rendered drafts via the configured SMTP relay.',
  transport: { kind: 'http', method: 'POST', url: 'https://example.com' },
  input_schema: null,
  result_schema: null,
  capabilities: ['net:example.com'],
  budget: { usd: 1.0 },
  requires_confirmation: true,
};

const execTool = (over: Record<string, unknown> = {}) => ({
  id: 'run.it',
  description: 'Runs a program',
  transport: { kind: 'exec', command: '/usr/bin/true' },
  input_schema: { type: 'object' },
  result_schema: { type: 'object' },
  ...over,
});

async function load(doc: unknown) {
  return loadManifest(await writeManifest(await temp.make(), doc), { validator });
}

async function loadError(doc: unknown): Promise<string> {
  const result = await load(doc);
  if (result.ok) throw new Error('expected the manifest to be rejected');
  return result.error;
}

describe('Runloop manifest (L1-L9)', () => {
  it('L1: http tool with null schemas validates (and warns that nothing is validated)', async () => {
    const result = await load({ version: 1, tools: [L1_TOOL] });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.tools[0]).toMatchObject({
      name: 'mail.smtp_send',
      format: 'runloop',
      inputSchema: null,
      resultSchema: null,
      transport: { kind: 'http', method: 'POST', url: 'https://example.com', headers: {} },
      capabilities: ['net:example.com'],
      budget: { usd: 1 },
      requiresConfirmation: true,
      secrets: [],
      observabilityTags: [],
    } satisfies Partial<HostTool>);
    expect(result.warnings).toEqual([
      'tool #0 "mail.smtp_send": input_schema is null; nothing is validated against it',
      'tool #0 "mail.smtp_send": result_schema is null; nothing is validated against it',
    ]);
  });

  it('L2: an empty tool list loads', async () => {
    expect(await load({ version: 1, tools: [] })).toEqual({ ok: true, tools: [], warnings: [] });
    expect(await load({ version: 1 })).toEqual({ ok: true, tools: [], warnings: [] });
  });

  it('L6: unsupported version', async () => {
    expect(await loadError({ version: 2, tools: [] })).toBe('unsupported tools.json version 2 (expected 1)');
  });

  it.each([
    ['blank id', { id: '  ' }, 'tool #0: tool id cannot be empty'],
    ['blank description', { description: '' }, 'tool #0: description cannot be empty'],
    [
      'exec without command',
      { transport: { kind: 'exec', command: '' } },
      'tool #0: exec transport requires a command',
    ],
    [
      'http without method',
      { transport: { kind: 'http', url: 'https://x.io' } },
      'tool #0: http transport requires a method',
    ],
    [
      'http without url',
      { transport: { kind: 'http', method: 'GET', url: ' ' } },
      'tool #0: http transport requires a url',
    ],
  ])('L7: %s', async (_name, over, expected) => {
    expect(await loadError({ version: 1, tools: [execTool(over)] })).toBe(expected);
  });

  it('L8: unknown transport kind and missing version are serde errors', async () => {
    expect(await loadError({ version: 1, tools: [execTool({ transport: { kind: 'unix', path: '/s' } })] })).toBe(
      'invalid JSON: unknown variant `unix`, expected `exec` or `http` at tools[0].transport.kind',
    );
    expect(await loadError({ tools: [execTool()] })).toBe('invalid JSON: missing field `version` at $');
    expect(await loadError({ version: '1', tools: [] })).toBe(
      'invalid JSON: invalid type: string "1", expected u32 at version',
    );
    expect(
      await loadError({ version: 1, tools: [{ description: 'x', transport: { kind: 'exec', command: '/x' } }] }),
    ).toBe('invalid JSON: missing field `id` at tools[0]');
    expect(await loadError({ version: 1, tools: [execTool({ capabilities: 'net' })] })).toBe(
      'invalid JSON: invalid type: string "net", expected a sequence at tools[0].capabilities',
    );
  });
});

describe('Runloop strict checks (ours)', () => {
  it.each([
    [
      'relative exec command',
      { transport: { kind: 'exec', command: 'bin/x' } },
      'tool #0: exec transport command must be an absolute path (got "bin/x")',
    ],
    [
      'relative url',
      { transport: { kind: 'http', method: 'GET', url: '/send' } },
      'tool #0: http transport url must be an absolute http or https URL (got "/send")',
    ],
    [
      'ftp url',
      { transport: { kind: 'http', method: 'GET', url: 'ftp://x.io/a' } },
      'tool #0: http transport url must be an absolute http or https URL (got "ftp://x.io/a")',
    ],
    [
      'placeholder in host',
      { transport: { kind: 'http', method: 'GET', url: 'https://{host}/a' } },
      'tool #0: http transport url may use {placeholders} only in the path and query (got "https://{host}/a")',
    ],
    [
      'bad method',
      { transport: { kind: 'http', method: 'CONNECT', url: 'https://x.io' } },
      'tool #0: http transport method "CONNECT" is not supported (use GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS)',
    ],
    [
      'missing input_schema key',
      { input_schema: undefined },
      'tool #0: input_schema is required (null is accepted for none)',
    ],
    [
      'missing result_schema key',
      { result_schema: undefined },
      'tool #0: result_schema is required (null is accepted for none)',
    ],
    [
      'schema of wrong type',
      { input_schema: 'object' },
      'tool #0: input_schema must be a JSON Schema object or {"$ref":"schema:<id>"} (got string)',
    ],
    [
      'header secret not declared',
      {
        transport: {
          kind: 'http',
          method: 'GET',
          url: 'https://x.io',
          headers: { Authorization: 'Bearer ${secret:api}' },
        },
      },
      'tool #0: http header "Authorization" uses secret "api" that is not listed in secrets',
    ],
    [
      'header line break',
      { transport: { kind: 'http', method: 'GET', url: 'https://x.io', headers: { 'X-A': 'a\r\nX-B: b' } } },
      'tool #0: http header "X-A" contains a line break or NUL',
    ],
    [
      'secret env clash',
      { secrets: ['a.b', 'a-b'] },
      'tool #0: secrets "a.b" and "a-b" map to the same environment variable "A_B"',
    ],
    ['negative budget', { budget: { usd: -1 } }, 'tool #0: budget.usd must be a non-negative number (got -1)'],
  ])('%s', async (_name, over, expected) => {
    const tool = JSON.parse(JSON.stringify(execTool(over)));
    expect(await loadError({ version: 1, tools: [tool] })).toBe(expected);
  });

  it("duplicate ids are rejected after Runloop's own checks", async () => {
    expect(await loadError({ version: 1, tools: [execTool(), execTool()] })).toBe(
      'tool #1: duplicate tool id "run.it"',
    );
    expect(await loadError({ version: 1, tools: [execTool(), execTool({ description: '' })] })).toBe(
      'tool #1: description cannot be empty',
    );
  });

  it('an exec tool needs the exec capability, an http tool its host', async () => {
    const result = await load({
      version: 1,
      tools: [
        execTool({ capabilities: ['fs'] }),
        {
          ...L1_TOOL,
          id: 'b',
          capabilities: [],
          transport: { kind: 'http', method: 'get', url: 'https://API.mail.io/send/{id}' },
        },
      ],
    });
    expect(result.ok && result.tools.map((t) => t.capabilities)).toEqual([['fs', 'exec'], ['net:api.mail.io']]);
    expect(result.ok && result.tools[1]?.transport).toMatchObject({ method: 'GET' });
  });
});

describe('Runloop schema refs', () => {
  const refs = {
    'mail.send.request.v1': { type: 'object', properties: { to: { $ref: 'schema:address' } }, required: ['to'] },
    'schema:address': { type: 'string', format: 'email' },
  };

  it('resolves schema:<id> through schema_refs, nested refs included', async () => {
    const result = await load({
      version: 1,
      tools: [execTool({ input_schema: { $ref: 'schema:mail.send.request.v1' }, schema_refs: refs })],
    });
    expect(result.ok && result.tools[0]?.inputSchema).toEqual({
      type: 'object',
      properties: { to: { type: 'string', format: 'email' } },
      required: ['to'],
    });
  });

  it('keeps sibling keywords of a $ref through allOf', async () => {
    const result = await load({
      version: 1,
      tools: [execTool({ result_schema: { $ref: 'schema:address', description: 'x' }, schema_refs: refs })],
    });
    expect(result.ok && result.tools[0]?.resultSchema).toEqual({
      description: 'x',
      allOf: [{ type: 'string', format: 'email' }],
    });
  });

  it('an unresolvable or cyclic ref is an error naming it', async () => {
    expect(
      await loadError({ version: 1, tools: [execTool({ input_schema: { $ref: 'schema:mail.send.result.v1' } })] }),
    ).toBe('tool #0: unresolvable schema ref "schema:mail.send.result.v1" in input_schema');
    const cyclic = { a: { type: 'array', items: { $ref: 'schema:b' } }, b: { $ref: 'schema:a' } };
    expect(
      await loadError({ version: 1, tools: [execTool({ result_schema: { $ref: 'schema:a' }, schema_refs: cyclic })] }),
    ).toBe('tool #0: cyclic schema ref "schema:a" in result_schema');
  });

  it('the seed example loads once its refs are supplied', async () => {
    const seed = JSON.parse(
      await readFile(new URL('../fixtures/host-tools/runloop-seed-tools.json', import.meta.url), 'utf8'),
    ) as { tools: Array<Record<string, unknown>> };
    const unresolved = await load(seed);
    expect(!unresolved.ok && unresolved.error).toBe(
      'tool #0: unresolvable schema ref "schema:mail.send.request.v1" in input_schema',
    );
    const tool = {
      ...seed.tools[0],
      schema_refs: { 'mail.send.request.v1': { type: 'object' }, 'mail.send.result.v1': { type: 'object' } },
    };
    const resolved = await load({ version: 1, tools: [tool] });
    expect(resolved.ok && resolved.tools[0]).toMatchObject({
      name: 'mail.smtp_send',
      secrets: ['runloop/mail/smtp_api_key'],
      observabilityTags: ['external', 'mail'],
    });
  });
});
