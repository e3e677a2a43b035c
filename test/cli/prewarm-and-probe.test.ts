// What `start` does before the first call (issue 10): warm one sandbox process per permission set of
// the catalog's tools, only into free room of the pool (real Deno processes); and the network probe
// and `requires_network` flag that let example runs pass offline.

import { createServer, type Server } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { probe, probeTarget } from '../../src/authoring/network-probe.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { createSchemaValidator } from '../../src/screen/schema-validator.js';
import { validateSchemas } from '../../src/screen/schemas.js';
import { captureLogger, expectNoLeaks, isolateTmp, testConfig, tool, waitFor } from '../sandbox/helpers.js';

const validator = createSchemaValidator();

let tmp: ReturnType<typeof isolateTmp>;
let sandbox: Sandbox | undefined;
let server: Server | undefined;

beforeAll(() => {
  tmp = isolateTmp();
});

afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  expectNoLeaks(tmp.dir);
});

afterAll(() => tmp.restore());

describe('sandbox.prewarm', () => {
  it('warms one process per distinct permission set, only into free room, evicting nothing', async () => {
    sandbox = await createSandbox({
      config: testConfig({ poolSize: 2, poolMax: 4, defaultMemoryMb: 128 }),
      logger: captureLogger().logger,
    });
    await waitFor(() => sandbox!.stats().warm === 2, 30_000, 'default key warm');
    // three new keys (64 MB, 96 MB, 80 MB) and a duplicate of the first: room for two more processes
    sandbox.prewarm?.([
      tool('echo', { memoryMb: 64 }),
      tool('echo', { memoryMb: 96 }),
      tool('echo', { memoryMb: 64 }),
      tool('echo', { memoryMb: 80 }),
    ]);
    await waitFor(() => sandbox!.stats().warm === 4, 30_000, 'prewarmed keys warm');
    expect(sandbox.stats()).toMatchObject({ warm: 4, busy: 0, spawned: 4 });
    // a call on a prewarmed key is served by its warm process (no extra spawn on the critical path)
    const result = await sandbox.run({
      tool: tool('echo', { memoryMb: 64 }),
      input: { a: 1 },
      secrets: {},
      request: { id: 'r1', workspace: 'workspace:tools' },
    });
    expect(result.ok).toBe(true);
  });

  it('skips tools whose permissions the sandbox would refuse', async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 1, poolMax: 4 }), logger: captureLogger().logger });
    await waitFor(() => sandbox!.stats().warm === 1, 30_000, 'default key warm');
    sandbox.prewarm?.([tool('echo', { net: ['localhost'] }), tool('echo', { extraPermissions: ['read'] })]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sandbox.stats().spawned).toBe(1);
  });
});

describe('network probe', () => {
  it('reachable when a TCP connection opens; unreachable with the target and error otherwise', async () => {
    server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    expect(await probe(`127.0.0.1:${port}`)).toEqual({ reachable: true });
    expect(await probe('127.0.0.1:1')).toEqual({
      reachable: false,
      reason: 'network unreachable: 127.0.0.1:1: ECONNREFUSED',
    });
    expect(await probe('no-such-host.invalid:443')).toMatchObject({
      reachable: false,
      reason: expect.stringMatching(/^network unreachable: no-such-host\.invalid:443: (ENOTFOUND|EAI_AGAIN)$/),
    });
  });

  it('targets the first declared host on 443 (wildcards stripped, ports kept), or the operator override', () => {
    expect(probeTarget({ net: ['registry.npmjs.org', 'api.github.com'] }, undefined)).toBe('registry.npmjs.org:443');
    expect(probeTarget({ net: ['*.example.com'] }, undefined)).toBe('example.com:443');
    expect(probeTarget({ net: ['api.example.com:8443'] }, undefined)).toBe('api.example.com:8443');
    expect(probeTarget({ net: [] }, undefined)).toBeUndefined();
    expect(probeTarget({ net: ['a.example.com'] }, '10.0.0.1:80')).toBe('10.0.0.1:80');
  });

  it('requires_network must be a boolean; true is kept on the normalised example', () => {
    const schemas = { input_schema: { type: 'object' }, output_schema: { type: 'object' } };
    const bad = validateSchemas(
      { ...schemas, examples: [{ description: 'x', input: {}, requires_network: 'yes' }] },
      { validator },
    );
    expect(bad.errors).toEqual([
      {
        code: 'schema.example',
        path: '/examples/0/requires_network',
        message: 'Example 0 requires_network must be true or false, got "yes"',
      },
    ]);
    const good = validateSchemas(
      {
        ...schemas,
        examples: [
          { description: 'x', input: {}, requires_network: true },
          { description: 'y', input: {}, requires_network: false },
        ],
      },
      { validator },
    );
    expect(good.errors).toEqual([]);
    expect(good.examples).toEqual([
      { description: 'x', input: {}, match: 'schema', requiresNetwork: true },
      { description: 'y', input: {}, match: 'schema' },
    ]);
  });
});
