// The admin port against a hostile web page, in a real browser (Debian's Chromium via
// playwright-core): a DNS-rebinding page (rebind.attacker.example mapped to 127.0.0.1 by
// --host-resolver-rules) and a page of another origin try to drive /mcp (initialize, tools/list,
// tools/call) and the console API with fetch(); every attempt must fail. And the documented login:
// the admin token typed into the login form lands on the console.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA } from '../../src/breadcrumbs/messages.js';
import {
  cleanupConsole,
  ensureConsoleBuilt,
  putTool,
  startConsoleService,
  toolContext,
  until,
  UPPER,
  type Running,
  WS,
} from './helpers.js';

const EVIL = 'rebind.attacker.example';
const OTHER = 'other.attacker.example';

let browser: Browser;
let open: Running;

/** What the attacking page's script reports: per step, the HTTP status or the fetch error. */
interface Attempt {
  step: string;
  status?: number;
  body?: string;
  error?: string;
}

/**
 * The attacker's script (runs in the page): initialize, tools/list, tools/call on `base`/mcp.
 * A function (not a string): the page evaluates it with `base` and the tool's name.
 */
async function attack(args: { base: string; tool: string }): Promise<Attempt[]> {
  const out: Attempt[] = [];
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const post = async (step: string, body: unknown): Promise<Response | undefined> => {
    try {
      const res = await fetch(`${args.base}/mcp`, { method: 'POST', headers, body: JSON.stringify(body) });
      out.push({ step, status: res.status, body: (await res.clone().text()).slice(0, 2000) });
      return res;
    } catch (error) {
      out.push({ step, error: String(error) });
      return undefined;
    }
  };
  const init = await post('initialize', {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'evil', version: '1' } },
  });
  const session = init?.headers.get('mcp-session-id');
  if (session) headers['mcp-session-id'] = session;
  await post('initialized', { jsonrpc: '2.0', method: 'notifications/initialized' });
  await post('tools/list', { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
  await post('tools/call', {
    jsonrpc: '2.0',
    id: 3,
    method: 'tools/call',
    params: { name: args.tool, arguments: { text: 'pwned' } },
  });
  try {
    const res = await fetch(`${args.base}/api/catalog`);
    out.push({ step: 'api/catalog', status: res.status });
  } catch (error) {
    out.push({ step: 'api/catalog', error: String(error) });
  }
  return out;
}

/** The attacker's own web server (on loopback too, so Chromium's local-network checks do not stop the page first). */
async function attackerSite(): Promise<Server> {
  const server = createServer((_req, res) =>
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<!doctype html><title>cute cats</title><h1>cute cats</h1>'),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

beforeAll(async () => {
  await ensureConsoleBuilt();
  open = await startConsoleService();
  await putTool(open.client, toolContext('r-shout', UPPER, { description: 'Upper-cases a text.' }));
  await until(async () => {
    const body = (await (await fetch(`${open.adminUrl}/api/catalog`)).json()) as {
      tools: Array<{ name: string; state: string }>;
    };
    return body.tools.some((t) => t.name === 'r-shout' && t.state === 'runnable') ? true : undefined;
  }, 'r-shout in the catalog');
  browser = await chromium.launch({
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-dev-shm-usage',
      `--host-resolver-rules=MAP ${EVIL} 127.0.0.1, MAP ${OTHER} 127.0.0.1`,
    ],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await cleanupConsole();
}, 60_000);

describe('a hostile web page against the admin port (no admin token)', () => {
  it("cannot drive /mcp or the API through DNS rebinding (the page is served from the admin port's own host:port)", async () => {
    const port = new URL(open.adminUrl).port;
    // The page's document comes from the admin port itself (after the rebinding, the attacker's name
    // points there): whatever it answers, the page's origin is http://EVIL:<port> and its script runs.
    const page = await browser.newPage();
    await page.goto(`http://${EVIL}:${port}/cats.html`);
    const attempts = await page.evaluate(attack, { base: `http://${EVIL}:${port}`, tool: 'r-shout' });
    // Every step answered 403 (the Host is not the admin port's), none ran the tool.
    expect(attempts.map((a) => [a.step, a.status])).toEqual([
      ['initialize', 403],
      ['initialized', 403],
      ['tools/list', 403],
      ['tools/call', 403],
      ['api/catalog', 403],
    ]);
    expect(attempts.map((a) => a.body ?? '').join('\n')).not.toContain('PWNED');
    const requests = await open.client.listBreadcrumbs({
      schema_name: SCHEMA.ToolRequest,
      tag: WS,
      include_context: true,
    });
    expect(requests.filter((r) => JSON.stringify(r.context).includes('pwned'))).toEqual([]);
    await page.close();
  });

  it('cannot drive /mcp from a page of another origin (CORS preflight and the Origin check)', async () => {
    const site = await attackerSite();
    try {
      const page = await browser.newPage();
      await page.goto(`http://${OTHER}:${(site.address() as AddressInfo).port}/cats.html`);
      for (const base of [open.adminUrl, open.adminUrl.replace('127.0.0.1', 'localhost')]) {
        const attempts = await page.evaluate(attack, { base, tool: 'r-shout' });
        // The JSON POSTs die in the CORS preflight (403 to OPTIONS), the GET's answer is refused
        // (403, no CORS headers): the page gets no result at all, and nothing ran.
        expect(attempts.map((a) => [a.step, a.status ?? 'failed'])).toEqual([
          ['initialize', 'failed'],
          ['initialized', 'failed'],
          ['tools/list', 'failed'],
          ['tools/call', 'failed'],
          ['api/catalog', 'failed'],
        ]);
      }
      const requests = await open.client.listBreadcrumbs({
        schema_name: SCHEMA.ToolRequest,
        tag: WS,
        include_context: true,
      });
      expect(requests.filter((r) => JSON.stringify(r.context).includes('pwned'))).toEqual([]);
      await page.close();
    } finally {
      await new Promise((resolve) => site.close(resolve));
    }
  });

  it("the same script in the console's own origin does reach /mcp (the test can tell success from refusal)", async () => {
    const page = await browser.newPage();
    await page.goto(`${open.adminUrl}/health`);
    const attempts = await page.evaluate(attack, { base: open.adminUrl, tool: 'r-shout' });
    expect(attempts.map((a) => [a.step, a.status])).toEqual([
      ['initialize', 200],
      ['initialized', 202],
      ['tools/list', 200],
      ['tools/call', 200],
      ['api/catalog', 200],
    ]);
    expect(attempts.find((a) => a.step === 'tools/call')?.body).toContain('PWNED');
    await page.close();
  });
});
