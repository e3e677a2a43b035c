// http transport against a real node:http server on port 0: URL templates, secret headers, JSON
// bodies, result_schema, status mapping, timeouts, connection errors, caps and redirects.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  executeHostTool,
  loadManifest,
  type ExecuteHostToolOptions,
  type HostTool,
} from '../../src/host-tools/index.js';
import {
  captureLogger,
  createTempDirs,
  schemas,
  secretsFrom,
  testConfig,
  validator,
  writeManifest,
  type OptionOverrides,
} from './helpers.js';

const temp = createTempDirs();
const TOKEN = 'tok-5f1e2d3c4b';
let server: Server;
let base: string;
const held: ServerResponse[] = [];

function route(req: IncomingMessage, res: ServerResponse, body: string): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(value));
  };
  const status = /^\/status\/(\d+)$/.exec(url.pathname);
  if (status)
    return json(Number(status[1]), { error: `status ${status[1]} for ${TOKEN.slice(0, 3)}` }, { 'retry-after': '2' });
  switch (url.pathname.split('/')[1]) {
    case 'echo':
      return json(200, {
        method: req.method,
        path: req.url,
        accept: req.headers.accept,
        auth: req.headers.authorization ?? null,
        type: req.headers['content-type'] ?? null,
        body: body === '' ? null : JSON.parse(body),
      });
    case 'leak':
      return json(200, { echoed: req.headers.authorization });
    case 'slow':
      held.push(res);
      return;
    case 'bad-json':
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end('<html>not json</html>');
    case 'wrong-shape':
      return json(200, { count: 'many' });
    case 'redirect':
      res.writeHead(302, { location: 'http://elsewhere.example/' });
      return void res.end();
    case 'big':
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ data: 'x'.repeat(10_000) }));
    case 'empty':
      res.writeHead(204);
      return void res.end();
    default:
      return json(500, { error: 'no route' });
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => route(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(() => temp.cleanup());

afterAll(async () => {
  for (const res of held.splice(0)) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function tool(
  pathTemplate: string,
  over: Record<string, unknown> = {},
  transport: Record<string, unknown> = {},
): Promise<HostTool> {
  const result = await loadManifest(
    await writeManifest(await temp.make(), {
      version: 1,
      tools: [
        {
          id: 'remote.call',
          description: 'Calls the test server',
          transport: {
            kind: 'http',
            method: 'POST',
            url: `${base}${pathTemplate}`,
            headers: { Authorization: 'Bearer ${secret:api/token}' },
            ...transport,
          },
          input_schema: { type: 'object' },
          result_schema: null,
          secrets: ['api/token'],
          ...over,
        },
      ],
    }),
    { validator },
  );
  if (!result.ok) throw new Error(result.error);
  return result.tools[0] as HostTool;
}

async function options(over: OptionOverrides = {}): Promise<ExecuteHostToolOptions> {
  return {
    logger: captureLogger().logger,
    schemas,
    resolveSecret: secretsFrom({ 'api/token': TOKEN }),
    ...over,
    config: testConfig(over.config),
  };
}

describe('http transport', () => {
  it('fills {placeholders} with encoded arguments, sends the JSON body and the secret header', async () => {
    const opts = await options();
    const result = await executeHostTool(await tool('/echo/{id}?q={q}'), { id: 'a b/c', q: 'x&y', extra: true }, opts);
    expect(result).toMatchObject({
      ok: true,
      output: {
        method: 'POST',
        path: '/echo/a%20b%2Fc?q=x%26y',
        auth: 'Bearer ***REDACTED***',
        type: 'application/json',
        body: { id: 'a b/c', q: 'x&y', extra: true },
      },
    });
    expect(result.evidence).toMatchObject({
      transport: 'http',
      argv: ['POST', `${base}/echo/a%20b%2Fc?q=x%26y`],
      cwd: null,
      exit: null,
      status: 200,
      envKeys: [],
    });
    expect(JSON.stringify(result.evidence)).not.toContain(TOKEN);
  });

  it('the request is an effect when sent (net.fetch to its host); the transport facts are the evidence', async () => {
    const opts = await options();
    const result = await executeHostTool(await tool('/echo/{id}'), { id: 'a' }, opts);
    const { hostname, port } = new URL(base);
    expect(result.effects).toEqual([{ kind: 'net.fetch', target: `${hostname}:${port}`, at_ms: expect.any(Number) }]);
    expect(result.evidence).toEqual({
      argv: ['POST', `${base}/echo/a`],
      cwd: null,
      exit: null,
      stdoutBytes: expect.any(Number),
      stderrBytes: 0,
      truncated: false,
      envKeys: [],
      transport: 'http',
      status: 200,
    });
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    const refused = await executeHostTool(await tool('/echo/{id}'), {}, opts);
    expect(refused).toMatchObject({ ok: false, error: { code: 'input.invalid' } });
    expect(refused.effects).toBeUndefined();
  });

  it('manifest headers replace the defaults whatever their case', async () => {
    const t = await tool(
      '/echo/x',
      {},
      { headers: { ACCEPT: 'application/vnd.api+json', Authorization: 'Bearer ${secret:api/token}' } },
    );
    expect(await executeHostTool(t, {}, await options())).toMatchObject({
      ok: true,
      output: { accept: 'application/vnd.api+json' },
    });
  });

  it('GET sends no body', async () => {
    const result = await executeHostTool(await tool('/echo/{id}', {}, { method: 'GET' }), { id: 7 }, await options());
    expect(result).toMatchObject({ ok: true, output: { method: 'GET', path: '/echo/7', body: null, type: null } });
  });

  it('a missing placeholder argument is input.invalid and sends nothing', async () => {
    const opts = await options();
    const result = await executeHostTool(await tool('/echo/{id}'), {}, opts);
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'input.invalid', message: 'url placeholder {id} has no value: argument "id" is missing' },
    });
    expect(await executeHostTool(await tool('/echo/{id}'), { id: '..' }, opts)).toMatchObject({
      ok: false,
      error: { code: 'input.invalid', message: 'url placeholder {id} cannot be ".."' },
    });
    expect(result.effects).toBeUndefined();
  });

  it('an unresolvable header secret is secret.missing', async () => {
    const result = await executeHostTool(await tool('/echo/x'), {}, await options({ resolveSecret: secretsFrom({}) }));
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'secret.missing',
        message: 'secret "api/token" required by host tool "remote.call" could not be resolved',
      },
    });
  });

  it('a secret echoed back by the endpoint is redacted from the output and from the logs', async () => {
    const log = captureLogger();
    const result = await executeHostTool(await tool('/leak'), {}, await options({ logger: log.logger }));
    expect(result).toMatchObject({ ok: true, output: { echoed: 'Bearer ***REDACTED***' } });
    log.logger.warn('probe', { value: TOKEN });
    expect(log.text()).not.toContain(TOKEN);
  });

  it.each([
    [400, 'input.invalid', false],
    [422, 'input.invalid', false],
    [401, 'permission.denied', false],
    [403, 'permission.denied', false],
    [404, 'tool.error', false],
    [409, 'conflict', false],
    [429, 'rate.exceeded', true],
    [418, 'tool.error', false],
    [500, 'dependency.unavailable', true],
    [503, 'dependency.unavailable', true],
  ])('status %i -> %s (retryable %s)', async (status, code, retryable) => {
    const result = await executeHostTool(await tool(`/status/${status}`), {}, await options());
    expect(result).toMatchObject({
      ok: false,
      error: {
        code,
        retryable,
        message: `POST ${base}/status/${status} answered ${status}: {"error":"status ${status} for tok"}`,
        details: { status, retryAfterMs: 2000 },
      },
    });
  });

  it('a timeout is dependency.unavailable (retryable)', async () => {
    const result = await executeHostTool(await tool('/slow', {}, { timeout_ms: 200 }), {}, await options());
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'dependency.unavailable', message: `POST ${base}/slow timed out after 200 ms`, retryable: true },
    });
  });

  it('a refused connection is dependency.unavailable (retryable)', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const t = await tool('/x');
    const moved = { ...t, transport: { ...t.transport, url: `http://127.0.0.1:${port}/x` } } as HostTool;
    const result = await executeHostTool(moved, {}, await options());
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'dependency.unavailable',
        message: `POST http://127.0.0.1:${port}/x failed: ECONNREFUSED`,
        retryable: true,
      },
    });
  });

  it('a body that is not JSON is output.invalid; a wrong shape fails result_schema', async () => {
    const bad = await executeHostTool(await tool('/bad-json'), {}, await options());
    expect(bad).toMatchObject({ ok: false, error: { code: 'output.invalid', details: { status: 200 } } });
    expect(!bad.ok && bad.error.message).toMatch(new RegExp(`^response of POST ${base}/bad-json is not valid JSON: `));
    const shaped = await executeHostTool(
      await tool('/wrong-shape', { result_schema: { type: 'object', properties: { count: { type: 'integer' } } } }),
      {},
      await options(),
    );
    expect(shaped).toMatchObject({
      ok: false,
      error: { code: 'output.invalid', message: 'tool result does not match result_schema: /count must be integer' },
    });
  });

  it('redirects are not followed; oversized answers are output_limit; 204 is {}', async () => {
    expect(await executeHostTool(await tool('/redirect'), {}, await options())).toMatchObject({
      ok: false,
      error: { code: 'tool.error', message: `POST ${base}/redirect answered 302; redirects are not followed` },
    });
    const opts = await options({ config: { maxOutputBytes: 2048 } });
    expect(await executeHostTool(await tool('/big'), {}, opts)).toMatchObject({
      ok: false,
      error: { code: 'output_limit', message: `response of POST ${base}/big is larger than 2048 bytes` },
    });
    expect((await executeHostTool(await tool('/big'), {}, opts)).evidence).toMatchObject({ truncated: true });
    expect(await executeHostTool(await tool('/empty'), {}, await options())).toMatchObject({ ok: true, output: {} });
  });

  it('an aborted caller signal ends the call as cancelled, not retryable', async () => {
    const controller = new AbortController();
    const pending = executeHostTool(await tool('/slow'), {}, await options({ signal: controller.signal }));
    controller.abort(new Error('drain'));
    expect(await pending).toMatchObject({
      ok: false,
      error: {
        code: 'internal',
        message: 'host tool "remote.call" was cancelled before it finished',
        retryable: false,
      },
    });
  });
});
