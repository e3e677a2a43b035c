// `tools-runner export --format rap` names the endpoint that serves the toolset: the RAP listener's
// /invoke (the same URL the live /.well-known/rap-toolset gives), never the admin port; without a
// known listener address it says what to pass.

import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupAll, runCli, startRunnerWithStore } from '../e2e/harness.js';

afterEach(cleanupAll);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function exportRap(args: string[]): Promise<{ code: number | string; out: string; err: string }> {
  const cli = runCli(['export', '--format', 'rap', ...args]);
  const code = await cli.exited;
  return { code, out: cli.stdout.join('\n'), err: cli.stderr.join('') };
}

describe('export --format rap endpoint', () => {
  it("is the RAP listener's /invoke, as served live, and that URL accepts invocations", async () => {
    const rapPort = await freePort();
    const { url } = await startRunnerWithStore(['--rap-port', String(rapPort)]);
    const rap = `http://127.0.0.1:${rapPort}`;
    const live = (await (await fetch(`${rap}/.well-known/rap-toolset`)).json()) as { endpoint: string };
    expect(live.endpoint).toBe(`${rap}/invoke`);
    await expect
      .poll(
        async () => {
          const { code, out } = await exportRap(['--store-url', url, '--rap-port', String(rapPort)]);
          return code === 0 ? (JSON.parse(out) as { endpoint?: string }).endpoint : `exit ${code}`;
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe(live.endpoint);
    // The advertised URL is a route that takes invocations (a bad one gets the tool server's 400, not 405).
    const res = await fetch(live.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(400);
  });

  it('--rap-public-url wins; without it or a fixed --rap-port the command says what to pass', async () => {
    const offline = ['--from-files', '--store-url', 'http://127.0.0.1:1'];
    const pub = await exportRap([...offline, '--rap-public-url', 'https://rap.example.com/tools/']);
    expect(pub.code).toBe(0);
    expect((JSON.parse(pub.out) as { endpoint: string }).endpoint).toBe('https://rap.example.com/tools/invoke');
    const none = await exportRap(offline);
    expect(none.code).toBe(2);
    expect(none.err).toBe(
      "tools-runner export: --format rap needs the address RAP runtimes reach the tool server at: pass --rap-public-url (or the service's fixed --rap-port)\n",
    );
  });
});
