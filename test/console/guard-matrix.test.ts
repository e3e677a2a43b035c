// The admin port's one guard, table-driven: every route (the console's page and API, /login,
// /metrics, /health, /live, and the extension route /mcp) × Host × Origin × token/cookie, against the
// real service (no token, and with one), with the status each must answer. Plus `--admin-hosts`.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { cleanupConsole, ensureConsoleBuilt, startConsoleService, type Running } from './helpers.js';
import { raw } from './http.js';

const TOKEN = 'guard-matrix-admin-token-0123456789';
const INIT = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'matrix', version: '1' } },
});

type Route = 'page' | 'api' | 'api-post' | 'login' | 'metrics' | 'health' | 'live' | 'mcp-post' | 'mcp-get';
const ROUTES: Route[] = ['page', 'api', 'api-post', 'login', 'metrics', 'health', 'live', 'mcp-post', 'mcp-get'];

/** Sends one request to `route` with exactly these headers; the status (101 = the WebSocket opened). */
function hit(base: string, route: Route, headers: Record<string, string>): Promise<number> {
  if (route === 'live') {
    return new Promise((resolve) => {
      const ws = new WebSocket(base.replace(/^http/, 'ws') + '/live', { headers });
      ws.on('open', () => {
        ws.close();
        resolve(101);
      });
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
      });
      ws.on('error', () => undefined);
    });
  }
  const json = { 'content-type': 'application/json' };
  const mcp = { ...json, accept: 'application/json, text/event-stream' };
  const spec: Record<
    Exclude<Route, 'live'>,
    { path: string; method?: string; headers?: Record<string, string>; body?: string }
  > = {
    page: { path: '/', headers: { accept: 'text/html' } },
    api: { path: '/api/catalog' },
    'api-post': { path: '/api/screen', method: 'POST', headers: json, body: '{"tool_spec":{}}' },
    login: {
      path: '/login',
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${TOKEN}`,
    },
    metrics: { path: '/metrics' },
    health: { path: '/health' },
    'mcp-post': { path: '/mcp', method: 'POST', headers: mcp, body: INIT },
    'mcp-get': { path: '/mcp', headers: { accept: 'text/event-stream' } },
  };
  const s = spec[route];
  return raw(base + s.path, {
    method: s.method ?? 'GET',
    headers: { ...s.headers, ...headers },
    ...(s.body !== undefined ? { body: s.body } : {}),
  }).then((reply) => reply.status);
}

/** One row: a request shape and the status per route. */
interface Row {
  name: string;
  headers(host: string): Record<string, string>;
  expect: Record<Route, number>;
}

const all = (status: number, except: Partial<Record<Route, number>> = {}): Record<Route, number> =>
  ({ ...Object.fromEntries(ROUTES.map((r) => [r, status])), ...except }) as Record<Route, number>;

// Without a token: what the own Host answers (login: nothing to log in to; mcp GET without a session: 400).
const OPEN_OK = all(200, { login: 401, live: 101, 'mcp-get': 400 });

const NO_TOKEN: Row[] = [
  { name: 'own Host 127.0.0.1:<port>, no Origin', headers: (h) => ({ host: h }), expect: OPEN_OK },
  { name: 'Host localhost:<port>', headers: (h) => ({ host: h.replace('127.0.0.1', 'localhost') }), expect: OPEN_OK },
  { name: 'own Host and own Origin', headers: (h) => ({ host: h, origin: `http://${h}` }), expect: OPEN_OK },
  {
    name: 'DNS rebinding: Host and Origin rebind.attacker.example:<port>',
    headers: (h) => ({
      host: h.replace('127.0.0.1', 'rebind.attacker.example'),
      origin: `http://${h.replace('127.0.0.1', 'rebind.attacker.example')}`,
    }),
    expect: all(403),
  },
  {
    name: 'rebound Host without Origin (curl, a rebinding GET)',
    headers: (h) => ({ host: h.replace('127.0.0.1', 'rebind.attacker.example') }),
    expect: all(403),
  },
  { name: 'loopback name with another port', headers: () => ({ host: '127.0.0.1:1' }), expect: all(403) },
  { name: 'loopback name without a port', headers: () => ({ host: 'localhost' }), expect: all(403) },
  { name: '*.localhost', headers: (h) => ({ host: h.replace('127.0.0.1', 'app.localhost') }), expect: all(403) },
  {
    name: 'own Host, Origin of another site',
    headers: (h) => ({ host: h, origin: 'http://evil.example' }),
    expect: all(403),
  },
  { name: 'own Host, Origin null', headers: (h) => ({ host: h, origin: 'null' }), expect: all(403) },
  {
    name: 'own Host, Origin of another loopback port',
    headers: (h) => ({ host: h, origin: 'http://127.0.0.1:1' }),
    expect: all(403),
  },
  {
    name: 'own Host, Sec-Fetch-Site cross-site',
    headers: (h) => ({ host: h, 'sec-fetch-site': 'cross-site' }),
    expect: { ...OPEN_OK, 'api-post': 403, login: 403, live: 403, 'mcp-post': 403, 'mcp-get': 403 },
  },
];

const WITH_TOKEN: Row[] = [
  { name: 'no credentials', headers: (h) => ({ host: h }), expect: all(401, { page: 401, health: 200, login: 303 }) },
  {
    name: 'bearer token',
    headers: (h) => ({ host: h, authorization: `Bearer ${TOKEN}` }),
    expect: all(200, { login: 303, live: 101, 'mcp-get': 400 }),
  },
  {
    name: 'wrong bearer token',
    headers: (h) => ({ host: h, authorization: `Bearer ${TOKEN}x` }),
    expect: all(401, { health: 200, login: 303 }),
  },
  {
    name: 'bearer token, any Host (a non-loopback deployment)',
    headers: () => ({ host: 'runner.internal.example:8443', authorization: `Bearer ${TOKEN}` }),
    expect: all(200, { login: 303, live: 101, 'mcp-get': 400 }),
  },
  {
    name: 'bearer token, Origin of another site',
    headers: (h) => ({ host: h, authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' }),
    expect: all(403),
  },
  // The session cookie opens the console; /mcp wants the bearer token itself (MCP clients are not browsers).
  {
    name: 'session cookie',
    headers: (h) => ({ host: h, cookie: 'SESSION' }),
    expect: all(200, { login: 303, live: 101, 'mcp-post': 401, 'mcp-get': 401 }),
  },
  {
    name: 'forged session cookie',
    headers: (h) => ({ host: h, cookie: 'tr_console=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
    expect: all(401, { health: 200, login: 303 }),
  },
];

afterAll(cleanupConsole, 60_000);

describe.each([
  ['without an admin token', NO_TOKEN, {}],
  ['with an admin token', WITH_TOKEN, { adminToken: TOKEN }],
] as const)('admin port guard %s', (_label, rows, overrides) => {
  let run: Running;
  let host: string;
  let cookie = '';
  beforeAll(async () => {
    await ensureConsoleBuilt();
    run = await startConsoleService(overrides);
    host = new URL(run.adminUrl).host;
    if ('adminToken' in overrides) {
      const login = await raw(`${run.adminUrl}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `token=${TOKEN}`,
      });
      cookie = ((login.headers['set-cookie'] as string[])[0] as string).split(';')[0] as string;
    }
  }, 60_000);

  for (const row of rows) {
    it(row.name, async () => {
      const got: Record<string, number> = {};
      for (const route of ROUTES) {
        const headers = row.headers(host);
        if (headers['cookie'] === 'SESSION') headers['cookie'] = cookie;
        got[route] = await hit(run.adminUrl, route, headers);
      }
      expect(got).toEqual(row.expect);
    });
  }
});

describe('--admin-hosts', () => {
  it('lets the listed names through without a token, and only those', async () => {
    const run = await startConsoleService({ adminHosts: ['tools.test', 'proxy.test:8443'] });
    const port = new URL(run.adminUrl).port;
    const status = (hostHeader: string): Promise<number> => hit(run.adminUrl, 'mcp-post', { host: hostHeader });
    expect(await status(`tools.test:${port}`)).toBe(200);
    expect(await status('tools.test')).toBe(200);
    expect(await status('proxy.test:8443')).toBe(200);
    expect(await status(`proxy.test:${port}`)).toBe(403);
    expect(await status('tools.test:1')).toBe(403);
    expect(await status(`other.test:${port}`)).toBe(403);
  });

  it('refuses an entry that is not "name" or "name:port"', async () => {
    await expect(startConsoleService({ adminHosts: ['http://tools.test'] })).rejects.toThrow(
      'admin host "http://tools.test" is not "name" or "name:port" (no scheme, path or wildcard)',
    );
  });
});
