import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { createStoreClient } from '../dist/breadcrumbs/index.js';
import { defaultConfig } from '../dist/config/index.js';
import { silentLogger } from '../dist/logger.js';
import { startService } from '../dist/service/service.js';
const dir = mkdtempSync(join(tmpdir(), 'probe-'));
const config = defaultConfig({ port: 0, dataDir: dir, adminPort: 0, bootstrap: false, poolSize: 0, logLevel: 'silent' });
const service = await startService({ config, logger: silentLogger() });
const client = createStoreClient({ baseUrl: service.storeUrl, logger: silentLogger(), auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'bench' } } });
const UP = 'export async function execute(input) { return { text: input.text.toUpperCase() }; }';
for (let i = 0; i < 1000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => { const name = `bench-${i + k}`; return client.createBreadcrumb({ title: name, schema_name: 'tool.code.v1', tags: ['tool', `tool:${name}`, 'workspace:tools'], context: { name, description: 'd', version: '1.0.0', code: { source: UP }, input_schema: { type: 'object', properties: { text: { type: 'string', description: 'x' } } }, output_schema: { type: 'object' }, permissions: { net: false }, examples: [{ description: 'e', input: { text: 'a' } }] } }); }));
for (;;) { const b = await (await fetch(`${service.adminUrl}/api/catalog`)).json(); if (b.tools.length >= 1000) break; await new Promise((r) => setTimeout(r, 200)); }
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-dev-shm-usage'] });
for (let i = 0; i < 6; i++) {
  const ctx = await browser.newContext(); const page = await ctx.newPage();
  await page.goto(`${service.adminUrl}/${process.argv[2] ?? '#/catalog'}`);
  await page.waitForFunction(() => performance.getEntriesByName('console:ready').length > 0);
  const t = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource').map((r) => `${r.name.replace(location.origin, '')} ${Math.round(r.startTime)}-${Math.round(r.responseEnd)}`);
    return { ready: Math.round(performance.getEntriesByName('console:ready')[0].startTime), docEnd: Math.round(nav.responseEnd), dcl: Math.round(nav.domContentLoadedEventEnd), res };
  });
  console.log(JSON.stringify(t));
  await ctx.close();
}
await browser.close(); client.close(); await service.stop();
