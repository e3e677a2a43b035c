// The RAP runtime against a tool server that requires tokens (--rap-tokens): without a token from
// --rap-server-tokens the call fails naming the server and the 401; with it the call runs end to end
// under the token's caller; the token goes on the toolset fetch too, is never logged, never shown by
// `tools-runner config`, and malformed entries are refused naming the entry but never the token.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { SCHEMA } from '../../src/breadcrumbs/messages.js';
import { run as configCommand } from '../../src/cli/commands/config.js';
import { defaultConfig } from '../../src/config/index.js';
import { parseServerTokens } from '../../src/rap/runtime.js';
import {
  answer,
  captureLogger,
  eventually,
  hostTool,
  manifest,
  onCleanup,
  request,
  startRunner,
  tempDir,
  WS,
} from './helpers.js';

const ALICE = 'alice-token-0123456789abcdef';

async function tokenServer() {
  return startRunner({
    manifests: [manifest(tempDir(), [hostTool('host.echo', 'echo-json')])],
    rapTokens: [`alice=${ALICE}`],
  });
}

describe('--rap-server-tokens', () => {
  it("without a token the call fails naming the server and the 401; with it the call succeeds as the token's caller", async () => {
    const a = await tokenServer();

    const without = await startRunner({ rapServers: [a.rapUrl] });
    const refused = await answer(without.client, await request(without.client, 'host_echo', { a: 1 }));
    expect(refused.status).toBe('error');
    expect(refused.error?.code).toBe('tool.error');
    expect(refused.error?.message).toBe(
      `Error: RAP tool 'host_echo' failed: the server at ${a.rapUrl}/invoke responded with HTTP 401. No result will arrive for this call. The server requires a bearer token: give one for ${a.rapUrl} in --rap-server-tokens.`,
    );

    const wrong = await startRunner({ rapServers: [a.rapUrl], rapServerTokens: [`${a.rapUrl}=${ALICE}x`] });
    const refusedWrong = await answer(wrong.client, await request(wrong.client, 'host_echo', { a: 1 }));
    expect(refusedWrong.error?.message).toContain(
      `responded with HTTP 401. No result will arrive for this call. The token given for ${a.rapUrl} in --rap-server-tokens was refused.`,
    );
    expect(await a.client.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS })).toEqual([]);

    const { logger, lines } = captureLogger();
    const withToken = await startRunner(
      { rapServers: [`${a.rapUrl}/`], rapServerTokens: [`${a.rapUrl}/=${ALICE}`] },
      logger,
    );
    const echoed = await answer(withToken.client, await request(withToken.client, 'host_echo', { a: 1 }));
    expect(echoed).toMatchObject({
      status: 'success',
      output: { text: '{"a":1}' },
      metadata: { kind: 'host', transport: 'rap' },
    });
    const onA = await a.client.listAll({ schema_name: SCHEMA.ToolRequest, tag: WS, include_context: true });
    expect(onA.map((item) => item.tags)).toEqual([['tool:request', WS, 'agent:rap:alice']]);
    expect(JSON.stringify(lines)).not.toContain(ALICE);
  });

  it('sends the token on the toolset fetch of that server only', async () => {
    const seen: Array<[string, string | undefined]> = [];
    const server = createServer((req, res) => {
      seen.push([`${req.headers.host}${req.url}`, req.headers.authorization]);
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onCleanup(() => new Promise((resolve) => server.close(resolve)));
    const port = (server.address() as AddressInfo).port;
    const one = `http://127.0.0.1:${port}/one`;
    const two = `http://127.0.0.1:${port}/two`;
    await startRunner({ rapServers: [one, two], rapServerTokens: [`${one}=tok=with=equals`] });
    await eventually(() => (seen.length >= 2 ? true : undefined));
    expect(seen.sort()).toEqual([
      [`127.0.0.1:${port}/one/.well-known/rap-toolset`, 'Bearer tok=with=equals'],
      [`127.0.0.1:${port}/two/.well-known/rap-toolset`, undefined],
    ]);
  });

  it('refuses entries that name no configured server, twice the same server or an empty token, never echoing a token', () => {
    const servers = ['http://a.example:1', 'http://b.example:2/rap/'];
    expect([...parseServerTokens(['http://a.example:1=s3cret=', 'http://b.example:2/rap=t2'], servers)]).toEqual([
      ['http://a.example:1', 's3cret='],
      ['http://b.example:2/rap', 't2'],
    ]);
    expect(() => parseServerTokens(['http://c.example:3=s3cret'], servers)).toThrow(
      '--rap-server-tokens entry 1 must be "url=token" with url one of --rap-servers (http://a.example:1, http://b.example:2/rap/), got url "http://c.example:3"',
    );
    expect(() => parseServerTokens(['s3cret'], servers)).toThrow('got url "(no \\"=\\")"');
    expect(() => parseServerTokens(['http://a.example:1=x', 'http://a.example:1/=y'], servers)).toThrow(
      '--rap-server-tokens names http://a.example:1 twice',
    );
    expect(() => parseServerTokens(['http://a.example:1= '], servers)).toThrow(
      'the token for http://a.example:1 is empty',
    );
    expect(() => parseServerTokens(['http://a.example:1=a b'], servers)).toThrow('contains whitespace');
  });

  it('`tools-runner config` hides the tokens', async () => {
    const out: string[] = [];
    const config = defaultConfig({
      rapServers: ['http://a.example:1'],
      rapServerTokens: [`http://a.example:1=${ALICE}`],
    });
    await configCommand({
      config,
      positionals: [],
      out: (line: string) => out.push(line),
      err: () => undefined,
    } as never);
    expect(out.join('\n')).not.toContain(ALICE);
    expect(JSON.parse(out.join('\n')).rapServerTokens).toBe('<hidden>');
  });
});
