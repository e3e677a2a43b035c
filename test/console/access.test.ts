// Who may use the console, its API, /live and /metrics: the admin token when one is set (bearer or
// the login cookie), else loopback Host names only; cross-site requests and WebSocket hijacking
// are refused; a non-loopback bind without a token is refused at start. /health stays open.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ErrorCode } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { startAdminServer } from '../../src/service/admin-server.js';
import { createMetrics } from '../../src/service/metrics.js';
import { cleanupConsole, ensureConsoleBuilt, startConsoleService, type Running } from './helpers.js';
import { postJson, raw } from './http.js';

const TOKEN = 'console-test-admin-token-0123456789';

/** Opens /live; resolves 'open' or the refusal's HTTP status. */
function openLive(url: string, headers: Record<string, string> = {}, origin?: string): Promise<'open' | number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/live', { headers, ...(origin ? { origin } : {}) });
    ws.on('open', () => {
      ws.close();
      resolve('open');
    });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    ws.on('error', () => undefined);
  });
}

afterAll(cleanupConsole, 60_000);

describe('admin port binding', () => {
  const metrics = createMetrics({
    queue: () => ({ queued: 0, running: 0, backlog: 0, capacity: 1 }),
    pool: () => ({ warm: 0, busy: 0 }),
    catalog: () => ({ active: 0, rejected: 0 }),
    isKnownTool: () => false,
  });
  for (const host of ['0.0.0.0', '::', '192.0.2.10', 'example.com']) {
    it(`refuses non-loopback host ${host} without an admin token`, async () => {
      await expect(
        startAdminServer({ host, port: 0, logger: silentLogger(), metrics, health: () => ({ ok: true }) }),
      ).rejects.toMatchObject({
        code: ErrorCode.ConfigInvalid,
        message: `refusing to serve the admin port on non-loopback host "${host}" without adminToken (set --admin-token, or bind to 127.0.0.1)`,
      });
    });
  }
  it('binds a non-loopback host when a token is set', async () => {
    const admin = await startAdminServer({
      host: '0.0.0.0',
      port: 0,
      logger: silentLogger(),
      metrics,
      health: () => ({ ok: true }),
      adminToken: TOKEN,
    });
    try {
      expect((await raw(`http://127.0.0.1:${new URL(admin.url).port}/metrics`)).status).toBe(401);
    } finally {
      await admin.close();
    }
  });
});

describe('with an admin token', () => {
  let run: Running;
  beforeAll(async () => {
    run = await startConsoleService({ adminToken: TOKEN });
  }, 60_000);

  it('refuses the API, pages, assets, /metrics and /live without the token', async () => {
    const api = await raw(`${run.adminUrl}/api/catalog`);
    expect(api.status).toBe(401);
    expect(api.json()).toEqual({
      code: 'unauthorized',
      error: 'the admin port requires the admin token (Authorization: Bearer <token>, or log in at /)',
    });
    const page = await raw(`${run.adminUrl}/`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(401);
    expect(page.text).toContain('<form method="post" action="/login">');
    expect(page.text).not.toContain('/assets/main.js');
    expect((await raw(`${run.adminUrl}/assets/main.js`)).status).toBe(401);
    expect((await raw(`${run.adminUrl}/metrics`)).status).toBe(401);
    expect(await openLive(run.adminUrl)).toBe(401);
    expect((await raw(`${run.adminUrl}/health`)).status).toBe(200);
  });

  it('refuses a wrong or malformed bearer token with the reason', async () => {
    const wrong = await raw(`${run.adminUrl}/api/catalog`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    expect(wrong.json().error).toBe('the bearer token is not the admin token');
    const basic = await raw(`${run.adminUrl}/api/catalog`, { headers: { authorization: `Basic ${TOKEN}` } });
    expect(basic.json()).toEqual({
      code: 'unauthorized',
      error: 'malformed Authorization header; expected "Bearer <admin token>"',
    });
    expect(await openLive(run.adminUrl, { authorization: 'Bearer nope-nope-nope-nope' })).toBe(401);
  });

  it('serves everything to the bearer token', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await raw(`${run.adminUrl}/api/catalog`, { headers: auth })).status).toBe(200);
    expect((await raw(`${run.adminUrl}/metrics`, { headers: auth })).status).toBe(200);
    expect(await openLive(run.adminUrl, auth)).toBe('open');
  });

  it('logs in with the form: the cookie holds no token and opens the API; a forged cookie does not', async () => {
    const bad = await raw(`${run.adminUrl}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=guess-guess-guess-guess',
    });
    expect(bad.status).toBe(401);
    expect(bad.text).toContain('That is not the admin token.');
    expect(bad.headers['set-cookie']).toBeUndefined();
    const good = await raw(`${run.adminUrl}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${encodeURIComponent(TOKEN)}`,
    });
    expect(good.status).toBe(303);
    expect(good.headers.location).toBe('/');
    const cookie = (good.headers['set-cookie'] as string[])[0] as string;
    expect(cookie).toMatch(/^tr_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(cookie).not.toContain(TOKEN);
    const session = cookie.split(';')[0] as string;
    expect((await raw(`${run.adminUrl}/api/catalog`, { headers: { cookie: session } })).status).toBe(200);
    expect(await openLive(run.adminUrl, { cookie: session })).toBe('open');
    const forged = await raw(`${run.adminUrl}/api/catalog`, {
      headers: { cookie: 'tr_console=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
    });
    expect(forged.status).toBe(401);
    expect(forged.json().error).toBe(
      'the console session cookie is not valid (the admin token changed?); log in again',
    );
  });

  it('refuses a cross-site request even with a valid token', async () => {
    const reply = await postJson(
      `${run.adminUrl}/api/screen`,
      { tool_spec: {} },
      { authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' },
    );
    expect(reply.status).toBe(403);
    expect(reply.json().code).toBe('origin_not_allowed');
  });
});

describe('without an admin token (loopback only)', () => {
  let run: Running;
  let host: string;
  beforeAll(async () => {
    await ensureConsoleBuilt();
    run = await startConsoleService();
    host = new URL(run.adminUrl).host;
  }, 60_000);

  for (const evil of ['evil.example', 'evil.example:8082', 'localhost.evil.example', '127.0.0.1.nip.io', '10.0.0.1']) {
    it(`refuses Host "${evil}" (DNS rebinding) on the API, pages, /live, /mcp and /health`, async () => {
      const reply = await raw(`${run.adminUrl}/api/catalog`, { headers: { host: evil } });
      expect(reply.status).toBe(403);
      expect(reply.json()).toEqual({
        code: 'host_not_allowed',
        error: `Host "${evil}" is not this admin port; without an admin token it answers only to 127.0.0.1, localhost and [::1] with its port ${new URL(run.adminUrl).port} (--admin-hosts adds names)`,
      });
      expect((await raw(`${run.adminUrl}/`, { headers: { host: evil } })).status).toBe(403);
      expect((await raw(`${run.adminUrl}/metrics`, { headers: { host: evil } })).status).toBe(403);
      expect(await openLive(run.adminUrl, { host: evil })).toBe(403);
      expect(
        (
          await raw(`${run.adminUrl}/mcp`, {
            method: 'POST',
            headers: { host: evil, 'content-type': 'application/json' },
            body: '{}',
          })
        ).status,
      ).toBe(403);
      expect((await raw(`${run.adminUrl}/health`, { headers: { host: evil } })).status).toBe(403);
    });
  }

  for (const name of ['localhost', 'LOCALHOST', '127.0.0.1', '[::1]']) {
    it(`serves Host "${name}"`, async () => {
      const port = new URL(run.adminUrl).port;
      expect((await raw(`${run.adminUrl}/api/catalog`, { headers: { host: `${name}:${port}` } })).status).toBe(200);
    });
  }

  for (const origin of ['http://evil.example', 'null', `http://${'127.0.0.1'}:1`]) {
    it(`refuses a POST and a /live upgrade from Origin ${origin}`, async () => {
      const reply = await postJson(`${run.adminUrl}/api/screen`, { tool_spec: {} }, { origin });
      expect(reply.status).toBe(403);
      expect(reply.json()).toEqual({
        code: 'origin_not_allowed',
        error: `Origin "${origin}" is not this admin port's origin (http://${host}); cross-site requests are refused`,
      });
      expect(await openLive(run.adminUrl, {}, origin)).toBe(403);
    });
  }

  it('accepts its own origin', async () => {
    expect((await postJson(`${run.adminUrl}/api/screen`, { tool_spec: {} }, { origin: `http://${host}` })).status).toBe(
      200,
    );
    expect(await openLive(run.adminUrl, {}, `http://${host}`)).toBe('open');
  });

  it('refuses a cross-site POST without Origin (Sec-Fetch-Site) and a form-encoded body', async () => {
    const site = await postJson(`${run.adminUrl}/api/screen`, { tool_spec: {} }, { 'sec-fetch-site': 'cross-site' });
    expect(site.status).toBe(403);
    expect(site.json().error).toBe('Sec-Fetch-Site "cross-site" is not same-origin; cross-site requests are refused');
    const form = await raw(`${run.adminUrl}/api/tools/x/call`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"input":{}}',
    });
    expect(form.status).toBe(415);
    expect(form.json()).toEqual({
      code: 'unsupported_media_type',
      error: 'Content-Type must be application/json, got "text/plain"',
    });
  });

  it('has nothing to log in to', async () => {
    const reply = await raw(`${run.adminUrl}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=whatever-whatever',
    });
    expect(reply.status).toBe(401);
    expect(reply.text).toContain('This admin port has no token configured; nothing to log in to.');
  });

  it('sends security headers with pages', async () => {
    const page = await raw(`${run.adminUrl}/`);
    expect(page.status).toBe(200);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
  });
});
