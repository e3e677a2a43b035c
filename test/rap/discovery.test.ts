// Discovery of hostile or broken tool servers (P5 and its variants): oversized, not JSON,
// redirects (never followed), slow servers; every ending is an error text, never a throw.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { fetchToolset } from '../../src/rap/index.js';
import { MAX_TOOLSET_BYTES } from '../../src/rap/toolset.js';
import { onCleanup } from './helpers.js';
import { startSpecServer } from './spec-server.js';
import { createSchemaValidator } from '../../src/screen/index.js';

const validator = createSchemaValidator();

async function spec(status: number, body: string) {
  const server = await startSpecServer(() => ({}));
  server.toolset = { status, body };
  onCleanup(() => server.close());
  return server;
}

describe('toolset discovery', () => {
  it('reports a body that is not JSON', async () => {
    const server = await spec(200, '<html>');
    const result = await fetchToolset(server.url, { validator, timeoutMs: 5000 });
    expect(result).toMatchObject({ ok: false, kind: 'invalid' });
    expect(!result.ok && result.error).toMatch(
      new RegExp(`^Toolset from ${server.url}/\\.well-known/rap-toolset is not valid JSON: `),
    );
  });

  it('refuses a toolset larger than the limit without reading it all', async () => {
    const server = await spec(
      200,
      JSON.stringify({ name: 'x', endpoint: 'http://127.0.0.1:1/i', tools: [], pad: 'x'.repeat(MAX_TOOLSET_BYTES) }),
    );
    expect(await fetchToolset(server.url, { validator, timeoutMs: 5000 })).toEqual({
      ok: false,
      url: `${server.url}/.well-known/rap-toolset`,
      kind: 'invalid',
      error: `Toolset from ${server.url}/.well-known/rap-toolset is larger than ${MAX_TOOLSET_BYTES} bytes`,
    });
  });

  it('does not follow a redirect (reported as its status) and cuts a long error body', async () => {
    const server = await spec(302, 'y'.repeat(5000));
    const result = await fetchToolset(server.url, { validator, timeoutMs: 5000 });
    expect(!result.ok && result.error).toBe(
      `Toolset fetch from ${server.url}/.well-known/rap-toolset returned status 302: ${'y'.repeat(997)}…`,
    );
    expect(server.discoveries).toBe(1);
  });

  it('gives up on a server that never answers', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const silent = createServer(() => undefined);
    silent.on('connection', (s) => sockets.add(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onCleanup(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          silent.close(() => resolve());
        }),
    );
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    expect(await fetchToolset(url, { validator, timeoutMs: 300 })).toEqual({
      ok: false,
      url: `${url}/.well-known/rap-toolset`,
      kind: 'unreachable',
      error: `Toolset fetch from ${url}/.well-known/rap-toolset failed: no answer within 300 ms`,
    });
  });
});
