// `net: true` for the operator's tools (--bootstrap-allow net): bare --allow-net, so any public host
// by name, with the private-range --deny-net list still in force: loopback by address and by name,
// link-local metadata and RFC 1918 addresses are refused after DNS resolution. Without the operator's
// flag the sandbox itself refuses the grant (defence in depth behind validation).

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { buildDenoCommand } from '../../src/sandbox/command.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { codeOf, job, testConfig, tool, useIsolatedSandboxes } from './helpers.js';

let sandbox: Sandbox | undefined;
useIsolatedSandboxes(
  () => sandbox,
  () => (sandbox = undefined),
);
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((_req, res) => res.end('internal secret'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('net: true (extra permission "net")', () => {
  it('is bare --allow-net with the private-range deny list, and the harness knows the process may use the network', () => {
    const command = buildDenoCommand({ denoPath: 'deno', net: [], extra: ['net'], memoryMb: 64, cwd: '/tmp' });
    expect(command.args).toContain('--allow-net');
    expect(
      command.args.some(
        (arg) => arg.startsWith('--deny-net=') && arg.includes('127.0.0.0/8') && arg.includes('169.254.0.0/16'),
      ),
    ).toBe(true);
    expect(command.args.at(-1)).toBe('net');
  });

  it.each(['127.0.0.1', 'localhost', '127.1'])(
    'never reaches a private address: http://%s:<port>/ is permission.denied',
    async (host) => {
      sandbox = await createSandbox({
        config: testConfig({ bootstrapAllow: ['net'], poolSize: 0 }),
        logger: silentLogger(),
      });
      const result = await sandbox.run(
        job(tool('fetch-url', { extraPermissions: ['net'] }), { url: `http://${host}:${port}/` }),
      );
      expect(codeOf(result)).toBe('permission.denied');
    },
  );

  it('is refused by the sandbox when the operator does not allow it', async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 0 }), logger: silentLogger() });
    const result = await sandbox.run(
      job(tool('fetch-url', { extraPermissions: ['net'] }), { url: 'https://example.com/' }),
    );
    expect(codeOf(result)).toBe('permission.denied');
    expect(result.ok ? '' : result.error.message).toBe(
      'tool "fetch-url" asks for permission(s) the operator does not allow: net',
    );
  });
});
