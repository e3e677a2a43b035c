// Group commit, A/B in one run: the same write workload against a file-backed embedded store with
// one transaction per write (`groupCommit: false`, the old path) and with writes that arrive
// together sharing one transaction (the default). The workload is a runner's per-call write mix
// over HTTP keep-alive at `--c` concurrent callers: create a request, create its answer (with an
// Idempotency-Key), update the request — plus 2 SSE clients reading every event. Rounds alternate
// A and B so machine noise hits both alike.
// Prints per round and mode: writes/s, transactions per write, µs inside write transactions per
// write, process CPU µs per write, and the data directory's bytes per write.
// Usage: node bench/store-group-commit.mjs [--n=3000] [--c=16] [--rounds=2]
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { defaultConfig } from '../dist/config/index.js';
import { silentLogger } from '../dist/logger.js';
import { createStore } from '../dist/store/index.js';
import { createStoreClient, openEventStream } from '../dist/breadcrumbs/index.js';

const arg = (name, fallback) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const n = arg('n', 3000);
const concurrency = arg('c', 16);
const rounds = arg('rounds', 2);
const logger = silentLogger();

const dirBytes = (dir) => readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);

async function round(groupCommit) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gc-'));
  const config = defaultConfig({ port: 0, dataDir: dir });
  const { host, port, dataDir, maxBodyBytes, authSecret, adminKey, secretsKey, pingIntervalMs, eventRetention } =
    config;
  const store = await createStore({
    host,
    port,
    dataDir,
    maxBodyBytes,
    authSecret,
    adminKey,
    secretsKey,
    pingIntervalMs,
    eventRetention,
    groupCommit,
    logger,
  });
  const client = createStoreClient({ baseUrl: store.url, logger });
  const controller = new AbortController();
  let events = 0;
  const streams = [];
  for (let i = 0; i < 2; i++) {
    let connected;
    const ready = new Promise((resolve) => (connected = resolve));
    streams.push(
      openEventStream({
        client,
        logger,
        signal: controller.signal,
        onConnected: () => connected(),
        onEvent: () => void events++,
      }),
    );
    await ready;
  }
  const call = async (i) => {
    const { id } = await client.createBreadcrumb({
      title: `request ${i}`,
      schema_name: 'tool.request.v1',
      tags: ['workspace:bench', 'tool:request'],
      context: { tool: 'echo', input: { i, text: 'hello world' } },
    });
    await client.createBreadcrumb(
      {
        title: `answer ${i}`,
        schema_name: 'tool.response.v1',
        tags: ['workspace:bench', `answer:${id}`],
        context: { ok: true, output: { i, text: 'hello world' } },
      },
      { idempotencyKey: `answer-${id}` },
    );
    await client.updateBreadcrumb(id, { context: { tool: 'echo', input: { i }, done: true } });
  };
  const before = store.writeStats();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await call(next++);
    }),
  );
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const after = store.writeStats();
  controller.abort();
  await Promise.allSettled(streams);
  client.close();
  await store.close();
  const writes = after.writes - before.writes;
  const result = {
    mode: groupCommit ? 'group' : 'per-write',
    writes,
    writes_per_sec: Math.round((writes / elapsed) * 1000),
    tx_per_write: +((after.transactions - before.transactions) / writes).toFixed(3),
    tx_us_per_write: +(((after.busyMs - before.busyMs) * 1000) / writes).toFixed(1),
    cpu_us_per_write: +((cpu.user + cpu.system) / writes).toFixed(1),
    bytes_per_write: Math.round(dirBytes(dir) / writes),
    events_seen: events,
  };
  rmSync(dir, { recursive: true, force: true });
  return result;
}

for (let r = 0; r < rounds; r++) {
  for (const mode of r % 2 === 0 ? [false, true] : [true, false])
    console.log(JSON.stringify({ round: r + 1, ...(await round(mode)) }));
}
