// Embedded store throughput and event latency: sequential creates over HTTP keep-alive (the store
// client, i.e. fetch) against a file-backed store in a temp dir with the default configuration,
// while one event-stream reader measures create → event latency.
// Prints { creates_per_sec, create_p50_ms, create_p99_ms, create_to_event_p50_ms, create_to_event_p99_ms, n }.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { defaultConfig } from '../dist/config/index.js';
import { silentLogger } from '../dist/logger.js';
import { createStore } from '../dist/store/index.js';
import { createStoreClient, openEventStream } from '../dist/breadcrumbs/index.js';

const n = Number(process.argv.find((a) => a.startsWith('--n='))?.slice(4) ?? 5000);
const warmup = 500;
const dir = mkdtempSync(join(tmpdir(), 'bench-store-'));
const logger = silentLogger();
const config = defaultConfig({ port: 0, dataDir: dir });
const store = await createStore({ ...pick(config), logger });
const client = createStoreClient({ baseUrl: store.url, logger });
const controller = new AbortController();

const sentAt = new Map();
const eventLatency = [];
let connected;
const ready = new Promise((resolve) => (connected = resolve));
let waitFor = null;
const stream = openEventStream({
  client,
  logger,
  signal: controller.signal,
  onConnected: () => connected(),
  onEvent(event) {
    const now = performance.now();
    const i = event.context?.i;
    const t0 = sentAt.get(i);
    if (t0 !== undefined) {
      sentAt.delete(i);
      if (i >= warmup) eventLatency.push(now - t0);
    }
    if (waitFor && waitFor.i === i) waitFor.resolve();
  },
});
await ready;

const createLatency = [];
const body = (i) => ({
  title: `bench ${i}`,
  context: { i, tool: 'echo', input: { text: 'hello world' } },
  tags: ['workspace:tools', 'tool:request'],
  schema_name: 'tool.request.v1',
});
process.stderr.write(`warming up (${warmup})\n`);
let startedMs = 0;
for (let i = 0; i < warmup + n; i++) {
  if (i === warmup) {
    process.stderr.write(`measuring ${n} sequential creates\n`);
    startedMs = performance.now();
  }
  const t0 = performance.now();
  sentAt.set(i, t0);
  await client.createBreadcrumb(body(i));
  if (i >= warmup) createLatency.push(performance.now() - t0);
}
const elapsedMs = performance.now() - startedMs;
const walBytes = statSync(join(dir, 'store.db-wal'), { throwIfNoEntry: false })?.size ?? 0;
// Wait for the last event to arrive before stopping.
if (sentAt.has(warmup + n - 1)) await new Promise((resolve) => (waitFor = { i: warmup + n - 1, resolve }));
controller.abort();
await stream.closed;
await store.close();
rmSync(dir, { recursive: true, force: true });

function pct(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const round = (x) => Math.round(x * 1000) / 1000;
function pick(c) {
  const { host, port, dataDir, maxBodyBytes, authSecret, adminKey, secretsKey, pingIntervalMs, eventRetention } = c;
  return { host, port, dataDir, maxBodyBytes, authSecret, adminKey, secretsKey, pingIntervalMs, eventRetention };
}
console.log(
  JSON.stringify({
    creates_per_sec: Math.round((n / elapsedMs) * 1000),
    create_p50_ms: round(pct(createLatency, 50)),
    create_p99_ms: round(pct(createLatency, 99)),
    create_to_event_p50_ms: round(pct(eventLatency, 50)),
    create_to_event_p99_ms: round(pct(eventLatency, 99)),
    events_received: eventLatency.length,
    wal_bytes_at_end: walBytes,
    n,
  }),
);
