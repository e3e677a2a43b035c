// Host tools map into the canonical contract (docs/tool-contracts.md "Where a host tool's contract comes from"), loaded from real manifests on
// disk: agentcli states nothing (unknown), Runloop's requires_confirmation and the capability rule,
// an explicit `contract` entry (validated, path-precise, overriding field by field).

import { afterEach, describe, expect, it } from 'vitest';
import { loadManifest, type HostTool } from '../../src/host-tools/index.js';
import { runloopSideEffect } from '../../src/host-tools/contract-map.js';
import type { HostTransport } from '../../src/host-tools/types.js';
import { createSchemaValidator } from '../../src/screen/index.js';
import { createTempDirs, writeManifest } from './helpers.js';

const validator = createSchemaValidator();

const temp = createTempDirs();
afterEach(() => temp.cleanup());

async function load(doc: unknown): Promise<HostTool[]> {
  const result = await loadManifest(await writeManifest(await temp.make(), doc), { validator });
  if (!result.ok) throw new Error(`expected the manifest to load: ${result.error}`);
  return result.tools;
}

async function loadError(doc: unknown): Promise<string> {
  const result = await loadManifest(await writeManifest(await temp.make(), doc), { validator });
  if (result.ok) throw new Error('expected the manifest to be rejected');
  return result.error;
}

const runloopTool = (over: Record<string, unknown> = {}) => ({
  id: 'kb.search',
  description: 'Searches the knowledge base',
  transport: { kind: 'exec', command: '/usr/bin/true' },
  input_schema: { type: 'object' },
  result_schema: { type: 'object' },
  ...over,
});

describe('agentcli tools', () => {
  it('have an empty contract (side effect unknown); the timeout stays on the transport', async () => {
    const [tool] = await load({ tools: [{ name: 'fetch', command: ['/bin/echo', '{}'], timeoutSec: 7 }] });
    expect(tool?.contract).toEqual({});
    expect(tool?.transport).toMatchObject({ kind: 'exec', timeoutMs: 7000 });
  });

  it('take an explicit contract entry as written', async () => {
    const contract = {
      side_effect: 'read-only',
      idempotent: true,
      owner: 'ops',
      rate_limits: { per_agent: { limit: 5, window_ms: 1000 } },
    };
    const [tool] = await load({ tools: [{ name: 'fetch', command: ['/bin/echo', '{}'], contract }] });
    expect(tool?.contract).toEqual(contract);
  });

  it('a null contract is no contract (Go zero value)', async () => {
    const [tool] = await load({ tools: [{ name: 'fetch', command: ['/bin/echo', '{}'], contract: null }] });
    expect(tool?.contract).toEqual({});
  });

  it.each([
    [
      { side_effect: 'destructive' },
      'tool[0] "fetch": invalid contract: tools[0].contract.side_effect: Invalid option: expected one of "read-only"|"reversible-write"|"irreversible"|"financial"|"external-communication"|"code-execution"|"administrative" (got "destructive")',
    ],
    [
      { idempotent: 'y', rate_limits: { per_tool: { limit: 0, window_ms: 1000 } } },
      'tool[0] "fetch": invalid contract: tools[0].contract.idempotent: Invalid input: expected boolean, received string (got "y"); tools[0].contract.rate_limits.per_tool.limit: Too small: expected number to be >=1 (got 0)',
    ],
    [
      { approval: { when: { side_effects: ['financial', 'paid'] } } },
      'tool[0] "fetch": invalid contract: tools[0].contract.approval.when.side_effects[1]: Invalid option: expected one of "read-only"|"reversible-write"|"irreversible"|"financial"|"external-communication"|"code-execution"|"administrative" (got "paid")',
    ],
    [
      'read-only',
      'tool[0] "fetch": invalid contract: tools[0].contract: Invalid input: expected object, received string (got "read-only")',
    ],
    [
      { sideEffect: 'read-only' },
      'tool[0] "fetch": invalid contract: tools[0].contract: unknown field(s) "sideEffect" (got {"sideEffect":"read-only"})',
    ],
  ])('an invalid contract %j rejects the manifest naming the field', async (contract, message) => {
    expect(await loadError({ tools: [{ name: 'fetch', command: ['/bin/echo', '{}'], contract }] })).toBe(message);
  });
});

describe('Runloop tools', () => {
  it('requires_confirmation true → approval always; nothing declared → side effect unknown', async () => {
    const [tool] = await load({ version: 1, tools: [runloopTool({ requires_confirmation: true })] });
    expect(tool?.contract).toEqual({ approval: { when: 'always' } });
    expect(tool?.requiresConfirmation).toBe(true);
  });

  it('maps declared capabilities only when one reading is possible', async () => {
    const tools = await load({
      version: 1,
      tools: [
        runloopTool({ id: 'read', capabilities: ['kb_read', 'time'] }),
        runloopTool({ id: 'runs', capabilities: ['exec', 'kb_read'] }),
        runloopTool({ id: 'writes', capabilities: ['kb_write'] }),
        runloopTool({ id: 'files', capabilities: ['fs', 'kb_read'] }),
        runloopTool({ id: 'implied-only' }),
        runloopTool({ id: 'confirmed-read', capabilities: ['kb_read'], requires_confirmation: true }),
        runloopTool({
          id: 'get',
          capabilities: ['kb_read', 'net:api.example.com'],
          transport: { kind: 'http', method: 'GET', url: 'https://api.example.com/x' },
        }),
      ],
    });
    expect(Object.fromEntries(tools.map((t) => [t.name, t.contract]))).toEqual({
      read: { side_effect: 'read-only' },
      runs: { side_effect: 'code-execution' },
      writes: {},
      files: {},
      'implied-only': {},
      'confirmed-read': { approval: { when: 'always' } },
      get: {},
    });
    // An exec tool's implied `exec` capability is not a declaration.
    expect(tools.find((t) => t.name === 'implied-only')?.capabilities).toEqual(['exec']);
  });

  it('the read-only rule refuses unsafe http methods', () => {
    const http = (method: string): HostTransport => ({ kind: 'http', method, url: 'https://x.example/', headers: {} });
    expect(runloopSideEffect(['kb_read'], http('GET'), false)).toBe('read-only');
    expect(runloopSideEffect(['kb_read'], http('HEAD'), false)).toBe('read-only');
    expect(runloopSideEffect(['kb_read'], http('POST'), false)).toBeUndefined();
    expect(runloopSideEffect(['model', 'secrets'], http('DELETE'), false)).toBeUndefined();
    expect(runloopSideEffect(['bogus'], http('GET'), false)).toBeUndefined();
    expect(runloopSideEffect([], http('GET'), false)).toBeUndefined();
    expect(runloopSideEffect(['exec', 'kb_write'], http('GET'), false)).toBeUndefined();
  });

  it('keeps budget and observability tags on the host tool', async () => {
    const [tool] = await load({
      version: 1,
      tools: [runloopTool({ budget: { tokens: 100, usd: 0.5 }, observability: { tags: ['kb'] } })],
    });
    expect(tool).toMatchObject({ budget: { tokens: 100, usd: 0.5 }, observabilityTags: ['kb'], contract: {} });
  });

  it('an explicit contract overrides the mapping field by field', async () => {
    const [tool] = await load({
      version: 1,
      tools: [
        runloopTool({
          capabilities: ['kb_read'],
          requires_confirmation: true,
          contract: { side_effect: 'reversible-write', idempotent: true },
        }),
      ],
    });
    expect(tool?.contract).toEqual({ side_effect: 'reversible-write', idempotent: true, approval: { when: 'always' } });
    const [other] = await load({
      version: 1,
      tools: [
        runloopTool({ capabilities: ['exec'], contract: { side_effect: 'irreversible', approval: { when: 'never' } } }),
      ],
    });
    expect(other?.contract).toEqual({ side_effect: 'irreversible', approval: { when: 'never' } });
  });

  it('an invalid explicit contract rejects the manifest naming the field', async () => {
    expect(
      await loadError({
        version: 1,
        tools: [runloopTool(), runloopTool({ id: 'b', contract: { retry: { max_attempts: 50 } } })],
      }),
    ).toBe(
      'tool #1: invalid contract: tools[1].contract.retry.max_attempts: Too big: expected number to be <=10 (got 50)',
    );
    expect(
      await loadError({
        version: 1,
        tools: [
          runloopTool({
            contract: { deprecation: { deprecated_at: '2026-06-01T00:00:00Z', removal_at: '2026-01-01T00:00:00Z' } },
          }),
        ],
      }),
    ).toBe(
      'tool #0: invalid contract: tools[0].contract.deprecation.removal_at: removal_at (2026-01-01T00:00:00Z) is before deprecated_at (2026-06-01T00:00:00Z) (got "2026-01-01T00:00:00Z")',
    );
  });
});
