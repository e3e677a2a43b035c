// Web console figures, measured in Debian's Chromium (playwright-core) against the real service
// built in dist/ (embedded store, real Deno sandbox, the console on the admin port).
// Prints { catalog_tools, catalog_api_ms_p50, catalog_load_ms_p50/p95 (cold: new browser context),
//          catalog_load_warm_ms_p50, tool_page_load_ms_p50, editor_load_ms_p50, live_* , runner_* }.
//   page load: navigation start -> the page's `console:ready` mark (data fetched and rendered)
//   live synthetic: /live messages broadcast by a real admin server at N executions/s (2 messages
//     each); whether the page received every one, how far behind it ended, longest main-thread task
//   live real: requests written at 100/s for a real tool through the runner; executions/s achieved
//     and whether Live showed every one
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { chromium } from 'playwright-core';
import { createStoreClient } from '../dist/breadcrumbs/index.js';
import { defaultConfig } from '../dist/config/index.js';
import { defaultAssetsDir, loadAssets, sendJson } from '../dist/console/http.js';
import { silentLogger } from '../dist/logger.js';
import { startAdminServer } from '../dist/service/admin-server.js';
import { createMetrics } from '../dist/service/metrics.js';
import { startService } from '../dist/service/service.js';
import { serviceExtensions } from '../dist/cli/extensions.js';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const TOOLS = arg('tools', 1000);
const LOADS = arg('loads', 15);
const LIVE_SECONDS = arg('live-seconds', 10);
const REAL_SECONDS = arg('real-seconds', 10);
const log = (msg) => process.stderr.write(`[console] ${msg}\n`);
const WS = 'workspace:tools';
const pct = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] * 10) / 10;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const UPPER =
  'export async function execute(input: { text: string }) {\n  return { text: input.text.toUpperCase() };\n}\n';
const tool = (name, source) => ({
  name,
  description: `bench tool ${name}: upper-cases a text`,
  version: '1.0.0',
  code: { language: 'typescript', source },
  input_schema: { type: 'object', properties: { text: { type: 'string', description: 'a text' } }, required: ['text'] },
  output_schema: {
    type: 'object',
    properties: { text: { type: 'string', description: 'the result' } },
    required: ['text'],
  },
  permissions: { net: false },
  examples: [{ description: 'shouts', input: { text: 'hi' }, output: { text: 'HI' }, match: 'exact' }],
});

const dir = mkdtempSync(join(tmpdir(), 'bench-console-'));
// The real-execution part calls 19 tools; --reuse opts them into process reuse (docs/sandbox.md "Sandbox").
const REUSE = process.argv.includes('--reuse');
const reuseTools = REUSE ? Array.from({ length: 19 }, (_, i) => `bench-${String(i).padStart(4, '0')}`) : [];
const config = defaultConfig({
  port: 0,
  dataDir: dir,
  adminPort: 0,
  bootstrap: false,
  poolSize: 2,
  concurrency: 8,
  toolConcurrency: 8,
  logLevel: 'silent',
  reuseTools,
});
const service = await startService({ config, logger: silentLogger(), extensions: serviceExtensions(config) });
const admin = service.adminUrl;
const client = createStoreClient({
  baseUrl: service.storeUrl,
  logger: silentLogger(),
  auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'bench' } },
});
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
const out = { catalog_tools: TOOLS };
let synthetic;

try {
  log(`writing ${TOOLS} tools (5% rejected)`);
  for (let i = 0; i < TOOLS; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, TOOLS - i) }, (_, k) => {
        const n = i + k;
        const name = `bench-${String(n).padStart(4, '0')}`;
        const source = n % 20 === 19 ? 'export async function execute(input) { return eval(input.text); }\n' : UPPER;
        return client.createBreadcrumb({
          title: name,
          schema_name: 'tool.code.v1',
          tags: ['tool', `tool:${name}`, WS],
          context: tool(name, source),
        });
      }),
    );
  }
  for (;;) {
    const body = await (await fetch(`${admin}/api/catalog`)).json();
    if (body.tools.length >= TOOLS) break;
    await sleep(200);
  }
  const apiTimes = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await (await fetch(`${admin}/api/catalog`)).arrayBuffer();
    apiTimes.push(performance.now() - t0);
  }
  out.catalog_api_ms_p50 = pct(apiTimes, 0.5);
  out.catalog_api_bytes = (await (await fetch(`${admin}/api/catalog`)).arrayBuffer()).byteLength;

  const ready = async (page) => page.evaluate(() => performance.getEntriesByName('console:ready')[0]?.startTime ?? -1);
  const load = async (hash, contextPerLoad) => {
    const times = [];
    let context = await browser.newContext();
    let page = await context.newPage();
    for (let i = 0; i < LOADS; i++) {
      if (contextPerLoad && i > 0) {
        await context.close();
        context = await browser.newContext();
        page = await context.newPage();
      }
      await page.goto(`${admin}/${hash}`);
      if (i > 0 && !contextPerLoad) await page.reload();
      await page.waitForFunction(() => performance.getEntriesByName('console:ready').length > 0);
      times.push(await ready(page));
    }
    await context.close();
    return times;
  };
  log('page loads');
  const cold = await load('#/catalog', true);
  out.catalog_load_ms_p50 = pct(cold, 0.5);
  out.catalog_load_ms_p95 = pct(cold, 0.95);
  out.catalog_load_warm_ms_p50 = pct(await load('#/catalog', false), 0.5);
  out.tool_page_load_ms_p50 = pct(await load('#/tool/bench-0001', true), 0.5);
  out.editor_load_ms_p50 = pct(await load('#/editor/bench-0001', true), 0.5);
  out.live_load_ms_p50 = pct(await load('#/live', true), 0.5);

  // Live, synthetic feed through a real admin server (its /live and the built page).
  const assets = loadAssets(defaultAssetsDir());
  const metrics = createMetrics({
    queue: () => ({ queued: 0, running: 0, backlog: 0, capacity: 1 }),
    pool: () => ({ warm: 0, busy: 0 }),
    catalog: () => ({ active: 0, rejected: 0 }),
    isKnownTool: () => true,
  });
  synthetic = await startAdminServer({
    host: '127.0.0.1',
    port: 0,
    logger: silentLogger(),
    metrics,
    health: () => ({ ok: true }),
    console: {
      handle: async (req, res, path) =>
        path === '/api/health'
          ? (sendJson(res, 200, {
              status: 'ok',
              queue: { queued: 0, running: 0, backlog: 0, capacity: 1 },
              pool: { warm: 0, busy: 0 },
            }),
            true)
          : assets.serve(res, path, false),
    },
  });
  for (const rate of [100, 1000]) {
    const page = await browser.newPage();
    await page.goto(`${synthetic.url}/#/live`);
    await page.waitForSelector('body[data-live="connected"]');
    await page.evaluate(() => {
      window.__bench = { longest: 0, gaps: 0, last: performance.now() };
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.__bench.longest = Math.max(window.__bench.longest, e.duration);
      }).observe({ type: 'longtask', buffered: false });
      const tick = () => {
        const now = performance.now();
        window.__bench.gaps = Math.max(window.__bench.gaps, now - window.__bench.last);
        window.__bench.last = now;
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    });
    const seconds = rate === 100 ? LIVE_SECONDS : Math.max(3, Math.round(LIVE_SECONDS / 2));
    const total = rate * seconds;
    const start = performance.now();
    let sent = 0;
    while (sent < total) {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate));
      for (; sent < due; sent++) {
        const rid = `r-${rate}-${sent}`;
        const tool = `bench-${String(sent % 50).padStart(4, '0')}`;
        const ts = new Date().toISOString();
        synthetic.broadcast({ type: 'execution:started', ts, rid, tool, agentId: `agent-${sent % 7}` });
        synthetic.broadcast({
          type: 'execution:finished',
          ts,
          rid,
          tool,
          agentId: `agent-${sent % 7}`,
          kind: 'code',
          status: sent % 13 === 0 ? 'error' : 'success',
          ...(sent % 13 === 0 ? { code: 'tool.error' } : {}),
          durationMs: 2 + (sent % 40),
        });
      }
      await sleep(5);
    }
    const sentAt = performance.now();
    await page
      .waitForFunction((n) => document.getElementById('live-count')?.textContent === String(n), total * 2, {
        timeout: 30_000,
      })
      .catch(() => undefined);
    const caughtUpMs = performance.now() - sentAt;
    const stats = await page.evaluate(() => ({
      received: Number(document.getElementById('live-count')?.textContent),
      rows: document.querySelectorAll('table.live tbody tr').length,
      ...window.__bench,
    }));
    out[`live_synthetic_${rate}_per_s`] = {
      messages_sent: total * 2,
      messages_shown: stats.received,
      all_shown: stats.received === total * 2,
      behind_after_last_ms: Math.round(caughtUpMs),
      longest_task_ms: Math.round(stats.longest),
      longest_frame_gap_ms: Math.round(stats.gaps),
      rows: stats.rows,
    };
    await page.close();
  }

  // Live, real executions through the runner at 100 requests/s.
  log(`real executions: 100 requests/s for ${REAL_SECONDS} s`);
  const page = await browser.newPage();
  await page.goto(`${admin}/#/live`);
  await page.waitForSelector('body[data-live="connected"]');
  const N = 100 * REAL_SECONDS;
  const t0 = performance.now();
  let written = 0;
  while (written < N) {
    const due = Math.min(N, Math.floor(((performance.now() - t0) / 1000) * 100));
    const batch = [];
    for (; written < due; written++) {
      batch.push(
        client.createBreadcrumb({
          title: 'bench',
          schema_name: 'tool.request.v1',
          tags: ['tool:request', WS, 'agent:bench'],
          context: {
            tool: `bench-${String(written % 19).padStart(4, '0')}`,
            input: { text: `n${written}` },
            requestId: `real-${written}`,
          },
        }),
      );
    }
    await Promise.all(batch);
    await sleep(10);
  }
  const writtenMs = performance.now() - t0;
  await page
    .waitForFunction((n) => document.getElementById('live-count')?.textContent === String(n), N * 2, {
      timeout: 120_000,
    })
    .catch(() => undefined);
  const doneMs = performance.now() - t0;
  const shown = Number(await page.evaluate(() => document.getElementById('live-count')?.textContent));
  out.live_real = {
    reuse: REUSE,
    requests: N,
    offered_per_s: Math.round((N / writtenMs) * 1000),
    executions_per_s: Math.round((shown / 2 / doneMs) * 1000),
    messages_shown: shown,
    all_shown: shown === N * 2,
    seconds_to_last: Math.round(doneMs / 100) / 10,
  };
  await page.close();
} finally {
  await browser.close();
  await synthetic?.close();
  client.close();
  await service.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out, null, 2) + '\n');
