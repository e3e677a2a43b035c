// A read-only tool cannot exhaust the service's memory through context.api: 100 concurrent
// searches (limit 100) over 900 KB breadcrumbs, by tag and by text, in a real Deno process against
// the real embedded store (SQLite on disk), while the service's RSS is sampled.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, type StoreClient } from '../../src/breadcrumbs/index.js';
import { defaultConfig, type Config } from '../../src/config/index.js';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { createToolApi } from '../../src/tool-context/tool-api.js';
import { createStore, type Store } from '../../src/store/index.js';

const RECORDS = 110;
const RECORD_BYTES = 900 * 1024;

let dir: string;
let store: Store;
let client: StoreClient;
let sandbox: Sandbox;
let config: Config;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'api-abuse-'));
  config = defaultConfig({ port: 0, dataDir: dir, logLevel: 'silent' });
  store = await createStore({ ...config, logger: silentLogger() });
  client = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  sandbox = await createSandbox({ config, logger: silentLogger() });
  for (let i = 0; i < RECORDS; i++) {
    await client.createBreadcrumb({
      title: `big ${i}`,
      tags: ['big'],
      context: { text: `needle ${i} ` + 'x'.repeat(RECORD_BYTES) },
    });
  }
}, 300_000);

afterAll(async () => {
  await sandbox?.close();
  client?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('context.api abuse', () => {
  it('100 concurrent searches over 900 KB breadcrumbs keep the service under 512 MB RSS and end in rate.exceeded', async () => {
    const baseline = process.memoryUsage().rss;
    let maxRss = baseline;
    const sampler = setInterval(() => {
      maxRss = Math.max(maxRss, process.memoryUsage().rss);
    }, 20);
    try {
      const result = await sandbox.run({
        tool: {
          name: 'hog',
          version: '1.0.0',
          net: [],
          api: 'read',
          timeoutMs: 120_000,
          memoryMb: 512,
          source: `export async function execute(input, context) {
          const calls = Array.from({ length: 100 }, (_, i) => context.api.searchBreadcrumbs(i % 10 === 9 ? { q: 'needle', limit: 100 } : { tag: 'big', limit: 100 }));
          const settled = await Promise.allSettled(calls);
          const codes = {};
          for (const s of settled) { const key = s.status === 'fulfilled' ? 'ok:' + s.value.length : s.reason.code; codes[key] = (codes[key] ?? 0) + 1; }
          return codes;
        }`,
        },
        input: {},
        secrets: {},
        request: { id: 'abuse-1', workspace: 'workspace:tools' },
        api: createToolApi({ client, tool: 'hog', rid: 'abuse-1', config }),
      });
      expect(result).toEqual(expect.objectContaining({ ok: true, output: { 'rate.exceeded': 100 } }));
    } finally {
      clearInterval(sampler);
    }
    const rssMb = maxRss / 1024 / 1024;
    if (process.env['PRINT_FIGURES'])
      process.stdout.write(
        `service max RSS under context.api abuse: ${rssMb.toFixed(0)} MB (${(baseline / 1024 / 1024).toFixed(0)} MB before)\n`,
      );
    expect(rssMb).toBeLessThan(512);
  }, 300_000);
});
