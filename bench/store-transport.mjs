// Store transport figures, both transports in one run (dist/ required: `npm run build`).
//  1. store-call latency: the runner's store client against one embedded store in this process,
//     over HTTP and in-process, the calls of one served request (create with Idempotency-Key,
//     PATCH with If-Match, GET full, listing by tag), interleaved so both see the same machine.
//  2. e2e call latency: two `tools-runner start` (embedded store, bootstrapped echo), one with
//     `--store-transport http`, one with `auto` (in-process), calls alternating between them one at
//     a time, measured from the bench's own client (over HTTP for both): request created -> its
//     tool.response.v1 event.
// Prints one JSON object. Flags: --calls=N (store calls per kind, default 2000), --e2e-n=N (default 200).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createStoreClient } from '../dist/breadcrumbs/index.js';
import { silentLogger } from '../dist/logger.js';
import { createStore } from '../dist/store/index.js';
import { connectCaller } from './_caller.mjs';
import { startCli } from './cli-process.mjs';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const CALLS = arg('calls', 2000);
const E2E_N = arg('e2e-n', 200);
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-transport-'));
const logger = silentLogger();
const log = (msg) => process.stderr.write(`[transport] ${msg}\n`);
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 1000) / 1000;
};

async function storeCalls() {
  const store = await createStore({
    host: '127.0.0.1',
    port: 0,
    dataDir: join(dir, 'direct'),
    maxBodyBytes: 1024 * 1024,
    authSecret: undefined,
    adminKey: undefined,
    secretsKey: undefined,
    pingIntervalMs: 5000,
    eventRetention: 10_000,
    logger,
  });
  const clients = {
    http: createStoreClient({ baseUrl: store.url, logger }),
    'in-process': createStoreClient({ baseUrl: store.url, logger, local: store.local }),
  };
  const times = {
    http: { create: [], patch: [], get: [], list: [], all: [] },
    'in-process': { create: [], patch: [], get: [], list: [], all: [] },
  };
  const timed = async (bucket, fn) => {
    const t0 = performance.now();
    const value = await fn();
    const ms = performance.now() - t0;
    bucket.push(ms);
    return value;
  };
  for (let i = 0; i < CALLS + 100; i++) {
    for (const [name, client] of Object.entries(clients)) {
      const t = times[name];
      const keep = i >= 100; // the first 100 rounds warm up
      const sink = keep ? t : { create: [], patch: [], get: [], list: [] };
      const { id } = await timed(sink.create, () =>
        client.createBreadcrumb(
          {
            title: 'r',
            schema_name: 'tool.response.v1',
            tags: [`request:${name}-${i}`],
            context: { ok: true, output: { message: 'hi' } },
          },
          { idempotencyKey: `${name}-${i}` },
        ),
      );
      await timed(sink.patch, () =>
        client.updateBreadcrumb(id, { context: { ok: true, output: { message: 'again' } } }, { ifMatch: 1 }),
      );
      await timed(sink.get, () => client.getBreadcrumbFull(id));
      await timed(sink.list, () => client.listBreadcrumbs({ tag: `request:${name}-${i}`, limit: 1 }));
    }
  }
  for (const client of Object.values(clients)) client.close();
  await store.close();
  const out = {};
  for (const [name, t] of Object.entries(times)) {
    const all = [...t.create, ...t.patch, ...t.get, ...t.list];
    out[name] = {
      p50_ms: pct(all, 50),
      p99_ms: pct(all, 99),
      create_p50_ms: pct(t.create, 50),
      patch_if_match_p50_ms: pct(t.patch, 50),
      get_full_p50_ms: pct(t.get, 50),
      list_by_tag_p50_ms: pct(t.list, 50),
    };
  }
  return out;
}

const start = (args) => startCli(args);

// A runner with its embedded store over `transport`, and a driver measuring one call at a time.
async function e2eRunner(transport) {
  const runner = start([
    'start',
    '--port',
    '0',
    '--data-dir',
    join(dir, `e2e-${transport}`),
    '--admin-port',
    '-1',
    '--bootstrap-dir',
    join(root, 'bootstrap-breadcrumbs'),
    '--store-transport',
    transport,
  ]);
  const url = (await runner.line(/^store listening on /)).replace('store listening on ', '');
  await runner.line(/^runner ready$/);
  const caller = await connectCaller(url, { ridPrefix: `bench-${transport}` });
  return {
    async once() {
      const { ms, context } = await caller.call();
      if (context === undefined) throw new Error(`no answer from the ${transport} runner`);
      return ms;
    },
    async stop() {
      caller.close();
      await runner.stop();
    },
  };
}

// Both runners run side by side; calls alternate between them, one at a time, so drift on a
// shared machine hits both alike.
async function e2e() {
  const runners = { http: await e2eRunner('http'), 'in-process': await e2eRunner('auto') };
  try {
    const lat = { http: [], 'in-process': [] };
    for (let i = 0; i < 20; i++) for (const r of Object.values(runners)) await r.once();
    for (let i = 0; i < E2E_N; i++) for (const [name, r] of Object.entries(runners)) lat[name].push(await r.once());
    return Object.fromEntries(
      Object.entries(lat).map(([name, xs]) => [name, { p50_ms: pct(xs, 50), p99_ms: pct(xs, 99) }]),
    );
  } finally {
    for (const r of Object.values(runners)) await r.stop();
  }
}

try {
  log(`store calls: ${CALLS} rounds of create/patch/get/list per transport`);
  const calls = await storeCalls();
  log(`e2e: ${E2E_N} echo calls one at a time per transport`);
  console.log(JSON.stringify({ store_call: calls, e2e_call_c1: await e2e() }, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
