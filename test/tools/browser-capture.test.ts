// The shipped `browser-capture` tool with Debian's real Chromium (headless, DevTools on a free port)
// and a local test page, through the real sandbox with the DevTools host:port granted by
// --allow-private-hosts: title, text, links and a PNG screenshot come back over HTTP + WebSocket;
// the size cap omits the screenshot with the reason; IP and local page URLs are refused; without
// the grant the sandbox refuses the DevTools connection.

import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, sandboxToolOf, type Sandbox } from '../../src/sandbox/index.js';
import type { ToolDefinition } from '../../src/screen/index.js';
import { startChromium, type Chromium } from '../fixtures/servers/chromium.js';
import { codeOf, isolateTmp, testConfig } from '../sandbox/helpers.js';
import { shippedTool } from './helpers.js';

const PAGE = `<!doctype html><html><head><title>Capture test page</title><meta name="description" content="a page for tests"></head>
<body style="background:#fff"><h1>Hello capture</h1><p>Second paragraph.</p>
<a href="/next">Next page</a> <a href="https://example.org/x">Elsewhere</a> <a href="mailto:a@b.c">mail</a></body></html>`;

let tmp: ReturnType<typeof isolateTmp>;
let server: Server;
let pagePort = 0;
let chromium: Chromium;
let sandbox: Sandbox;
let tool: ToolDefinition;

beforeAll(async () => {
  tmp = isolateTmp();
  server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  pagePort = (server.address() as { port: number }).port;
  chromium = await startChromium(['page.example']);
  const config = testConfig({ allowPrivateHosts: { 'browser-capture': [chromium.devtools] } });
  sandbox = await createSandbox({ config, logger: silentLogger() });
  tool = await shippedTool('browser-capture.json', config);
}, 120_000);

afterAll(async () => {
  await sandbox?.close();
  await chromium?.stop();
  await new Promise((resolve) => server?.close(resolve));
  tmp.restore();
});

const capture = (input: Record<string, unknown>, t: ToolDefinition = tool, s: Sandbox = sandbox) =>
  s.run({
    tool: sandboxToolOf(t),
    input: { devtools: chromium.devtools, ...input },
    secrets: {},
    request: { id: 'r-cap', workspace: 'workspace:tools' },
  });

describe('browser-capture (shipped tool) with a real headless Chromium', () => {
  it('returns title, text, links and a PNG screenshot', async () => {
    const result = await capture({ url: `http://page.example:${pagePort}/`, width: 400, height: 300 });
    expect(result.ok ? '' : result.error).toBe('');
    const out = (result.ok ? result.output : {}) as Record<string, any>;
    expect(out).toMatchObject({
      status: 'loaded',
      title: 'Capture test page',
      url: `http://page.example:${pagePort}/`,
      description: 'a page for tests',
      text_truncated: false,
      links_total: 3,
      links: [
        { text: 'Next page', href: `http://page.example:${pagePort}/next` },
        { text: 'Elsewhere', href: 'https://example.org/x' },
      ],
    });
    expect(out.text).toContain('Hello capture');
    expect(out.text).toContain('Second paragraph.');
    const png = Buffer.from(out.screenshot.base64, 'base64');
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(png.readUInt32BE(16)).toBe(400); // IHDR width
    expect(png.readUInt32BE(20)).toBe(300);
    expect(out.screenshot.bytes).toBe(png.length);
  });

  it('omits a screenshot over the cap, saying why', async () => {
    const result = await capture({
      url: `http://page.example:${pagePort}/`,
      max_screenshot_bytes: 1000,
      max_text_chars: 5,
    });
    const out = (result.ok ? result.output : {}) as Record<string, any>;
    expect(out.screenshot).toBeUndefined();
    expect(out.screenshot_omitted).toMatch(/^the PNG is \d+ bytes, over max_screenshot_bytes 1000/);
    expect(out).toMatchObject({ text: 'Hello', text_truncated: true });
  });

  it.each([
    ['http://127.0.0.1/', 'IP address hosts are refused'],
    ['http://localhost:8080/', 'local host names are refused'],
    ['http://router.lan/', 'local host names are refused'],
  ])('refuses the page URL %s', async (url, why) => {
    const result = await capture({ url });
    expect(codeOf(result)).toBe('permission.denied');
    expect(result.ok ? '' : result.error.message).toContain(why);
  });

  it('without the grant, the sandbox refuses the DevTools connection', async () => {
    const ungranted = await createSandbox({ config: testConfig(), logger: silentLogger() });
    try {
      const plain = await shippedTool('browser-capture.json', testConfig());
      const result = await capture({ url: `http://page.example:${pagePort}/` }, plain, ungranted);
      expect(codeOf(result)).toBe('permission.denied');
      expect(result.ok ? '' : result.error.message).toContain(
        `--allow-private-hosts 'browser-capture=${chromium.devtools}'`,
      );
    } finally {
      await ungranted.close();
    }
  });

  it('declares itself read-only', () => {
    expect(tool.contract).toEqual({ side_effect: 'read-only' });
  });
});
