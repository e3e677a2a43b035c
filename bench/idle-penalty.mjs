// What a pause costs the next piece of work on this machine: the same work timed after idle gaps of
// --gaps ms (one process, nothing else running), p50 and p90 of --n repetitions per gap:
//   sqlite: one INSERT transaction of better-sqlite3 (WAL, synchronous=NORMAL, as the embedded store)
//   lease:  a lease acquire through the embedded store's in-process transport (src/store/local.ts),
//           as the runner claims a request
//   js:     2,000 JSON.stringify calls (compute only, no syscall)
// A spaced call (bench/e2e.mjs, calls 50 ms apart) runs every step of a call after such a gap.
// Run (after npm run build): node bench/idle-penalty.mjs [--gaps=0,1,20,50] [--n=150]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createLogger } from '../dist/logger.js';
import { createStore } from '../dist/store/store.js';

const opt = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const GAPS = opt('gaps', '0,1,20,50')
  .split(',')
  .map((g) => {
    const ms = Number(g);
    if (!Number.isInteger(ms) || ms < 0) throw new Error(`--gaps must be integers >= 0, got ${JSON.stringify(g)}`);
    return ms;
  });
const N = Number(opt('n', 150));
const round = (x) => Math.round(x * 1000) / 1000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = mkdtempSync(join(tmpdir(), 'bench-idle-penalty-'));
const LEASE_KEY = 'idle-penalty-lease-key-0123456789';
const store = await createStore({
  host: '127.0.0.1',
  port: 0,
  dataDir: join(dir, 'store'),
  maxBodyBytes: 64 * 1024,
  pingIntervalMs: 5000,
  eventRetention: 1000,
  leaseKey: LEASE_KEY,
  logger: createLogger({ level: 'silent' }),
});
const db = new Database(join(dir, 'bare.db'));
try {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID');
  const insert = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
  const tx = db.transaction((k) => insert.run(k, `value of ${k}`));
  let seq = 0;
  const work = {
    sqlite: () => tx(`k${seq++}`),
    lease: async () => {
      const n = seq++;
      const reply = await store.local.call('POST', '/x/leases/acquire', {
        query: new URLSearchParams(),
        headers: { 'X-Lease-Key': LEASE_KEY },
        body: { scope: 'ws', name: `n${n}`, holder: 'bench', token: `t${n}`, ttl_ms: 60_000 },
        token: undefined,
      });
      if (reply.status !== 200) throw new Error(`lease acquire answered ${reply.status}`);
    },
    js: () => {
      let length = 0;
      for (let i = 0; i < 2000; i++) length += JSON.stringify({ a: i, b: `x${i}` }).length;
      return length;
    },
  };
  const out = { n: N, gaps_ms: GAPS, ms: {} };
  for (const [name, run] of Object.entries(work)) {
    for (let i = 0; i < 20; i++) await run(); // warm-up
    out.ms[name] = {};
    for (const gap of GAPS) {
      const times = [];
      for (let i = 0; i < N; i++) {
        await sleep(gap);
        const t0 = performance.now();
        await run();
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      out.ms[name][`gap_${gap}`] = { p50: round(times[Math.floor(N / 2)]), p90: round(times[Math.floor(N * 0.9)]) };
    }
  }
  console.log(JSON.stringify(out));
} finally {
  db.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
