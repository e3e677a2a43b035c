// Embedded store memory under a big listing, and write latency under many replaying readers.
// The store runs as its own process (`tools-runner store`, file-backed temp dir) so its peak RSS
// (VmHWM from /proc) is measured alone:
//  1. seed N breadcrumbs (default 100,000, ~1 KB context each) over HTTP, restart the store;
//  2. GET /breadcrumbs?include_context=true (no limit: every row) read as a stream by this process;
//     report rows, bytes, store peak RSS before/after, and the listing's duration;
//  3. 30 SSE readers resume from Last-Event-ID 0 (x_ext=ids) over the last 150 events made ~40 KB
//     each, while this process times sequential creates against the same store.
// Prints one JSON object. Usage: node bench/store-listing.mjs [--n=100000]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const n = Number(process.argv.find((a) => a.startsWith('--n='))?.slice(4) ?? 100_000);
const dir = mkdtempSync(join(tmpdir(), 'bench-listing-'));
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function startStore() {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        'dist/cli/main.js',
        'store',
        '--port',
        '0',
        '--data-dir',
        dir,
        '--log-level',
        'error',
        '--max-body-bytes',
        String(256 * 1024),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text) => {
      const match = /store listening on (\S+)/.exec(text);
      if (match) resolve({ child, url: match[1] });
    });
    child.once('exit', (code) => reject(new Error(`store exited with ${code}`)));
  });
}

async function stopStore({ child }) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rssMb: Math.round(kb('VmRSS') / 1024), peakRssMb: Math.round(kb('VmHWM') / 1024) };
}

function request(url, method, path, body) {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      url + path,
      {
        method,
        agent,
        headers: text ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } : {},
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const filler = 'lorem ipsum dolor sit amet '.repeat(36).slice(0, 960);
const out = { n };
try {
  let store = await startStore();
  const seedStart = performance.now();
  for (let i = 0; i < n; i += 64) {
    await Promise.all(
      Array.from({ length: Math.min(64, n - i) }, (_, k) =>
        request(store.url, 'POST', '/breadcrumbs', {
          title: `row ${i + k}`,
          tags: ['bench'],
          schema_name: 'bench.v1',
          context: { i: i + k, filler },
        }),
      ),
    );
  }
  out.seedSeconds = Math.round((performance.now() - seedStart) / 100) / 10;
  await stopStore(store);

  store = await startStore();
  out.storeAtStart = memory(store.child.pid);
  let peakDuring = 0;
  const sampler = setInterval(() => (peakDuring = Math.max(peakDuring, memory(store.child.pid).rssMb)), 50);
  const listStart = performance.now();
  const listed = await new Promise((resolve, reject) => {
    http
      .get(`${store.url}/breadcrumbs?include_context=true`, { agent }, (res) => {
        let bytes = 0;
        let rows = 0;
        let tail = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          bytes += Buffer.byteLength(chunk);
          // Count row starts without holding the body: every item begins with {"id":
          const text = tail + chunk;
          rows += text.split('{"id":').length - 1;
          tail = text.slice(-6);
        });
        res.on('end', () => resolve({ status: res.statusCode, rows, bytes }));
      })
      .on('error', reject);
  });
  clearInterval(sampler);
  out.listing = {
    ...listed,
    mb: Math.round(listed.bytes / 1024 / 1024),
    seconds: Math.round((performance.now() - listStart) / 100) / 10,
  };
  out.storeAfterListing = { ...memory(store.child.pid), sampledPeakRssMbDuringListing: peakDuring };

  // Replay: 150 big events at the end of the log, 30 readers resuming from 0 would replay everything;
  // resume from just before the big ones instead so the figure is about those.
  const big = 'z'.repeat(40_000);
  const before = n;
  for (let i = 0; i < 150; i += 25) {
    await Promise.all(
      Array.from({ length: 25 }, (_, k) =>
        request(store.url, 'POST', '/breadcrumbs', { title: `big ${i + k}`, tags: ['big'], context: { big } }),
      ),
    );
  }
  const readers = Array.from(
    { length: 30 },
    () =>
      new Promise((resolve, reject) => {
        http
          .get(
            `${store.url}/events/stream?x_ext=ids`,
            { agent: false, headers: { 'Last-Event-ID': String(before) } },
            (res) => {
              let frames = 0;
              let tail = '';
              res.setEncoding('utf8');
              res.on('data', (chunk) => {
                const text = tail + chunk;
                frames += text.split('\nid: ').length - 1 + (text.startsWith('id: ') ? 1 : 0);
                tail = text.slice(-5);
                if (frames >= 150) {
                  res.destroy();
                  resolve(performance.now());
                }
              });
            },
          )
          .on('error', reject);
      }),
  );
  const replayStart = performance.now();
  const latencies = [];
  let replaying = true;
  const done = Promise.all(readers).then((ends) => {
    replaying = false;
    return ends;
  });
  while (replaying) {
    const t0 = performance.now();
    await request(store.url, 'POST', '/breadcrumbs', { title: 'probe', tags: ['probe'], context: {} });
    latencies.push(performance.now() - t0);
  }
  const ends = await done;
  latencies.sort((a, b) => a - b);
  const pct = (p) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] * 10) / 10;
  out.replay = {
    readers: 30,
    events: 150,
    eventBytes: big.length,
    replayMs: Math.round(Math.max(...ends) - replayStart),
    probeCreates: latencies.length,
    createP50Ms: pct(0.5),
    createMaxMs: Math.round(latencies[latencies.length - 1] * 10) / 10,
  };
  out.storeAtEnd = memory(store.child.pid);
  await stopStore(store);
} finally {
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
