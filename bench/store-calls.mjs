// Store transactions per tool call, A/B in one run: `tools-runner start` (embedded store, echo tool,
// warm isolation) with each claim kind and with group commit on and off; --calls calls by 16
// concurrent callers (each writes a request and waits for its answer event). Reads the store's
// /metrics before and after, and prints per call: writes of the group-commit path (breadcrumb writes,
// and a lease's finish, which joins them when group commit is on), the SQLite transactions they took,
// lease writes that were a transaction of their own, and the total.
// --rate=R: the calls are started R per second instead (open loop), where a call's writes come one at a
// time and share nothing with another call's (process mode's rate, a quiet hour's).
// --only=lease,true runs one claim kind and group-commit setting.
// Usage: node bench/store-calls.mjs [--calls=400] [--rate=50] [--only=lease,true]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCli } from './cli-process.mjs';
import { connectCaller } from './_caller.mjs';

const CALLS = Number(process.argv.find((a) => a.startsWith('--calls='))?.slice(8) ?? 400);
const RATE = Number(process.argv.find((a) => a.startsWith('--rate='))?.slice(7) ?? 0);
const ONLY = process.argv.find((a) => a.startsWith('--only='))?.slice(7);
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-calls-'));
const procs = new Set();

const metrics = async (url) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return {
    writes: value('tools_runner_store_writes_total'),
    tx: value('tools_runner_store_write_transactions_total'),
    leases: value('tools_runner_store_lease_writes_total'),
  };
};

async function measure(claims, group) {
  const runner = startCli(
    [
      'start',
      '--port',
      '0',
      '--data-dir',
      join(dir, `${claims}-${group}`),
      '--admin-port',
      '-1',
      '--bootstrap-dir',
      join(root, 'bootstrap-breadcrumbs'),
      `--claims=${claims}`,
      `--group-commit=${group}`,
    ],
    procs,
  );
  const url = (await runner.line(/^store listening on /)).replace('store listening on ', '');
  await runner.line(/^runner ready$/);
  const caller = await connectCaller(url, { ridPrefix: `calls-${claims}-${group}` });
  const call = () => caller.call();
  for (let i = 0; i < 20; i++) await call();
  const before = await metrics(url);
  if (RATE > 0) {
    const calls = [];
    const t0 = performance.now();
    for (let i = 0; i < CALLS; i++) {
      const wait = t0 + (i * 1000) / RATE - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      calls.push(call());
    }
    await Promise.all(calls);
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next++ < CALLS) await call();
      }),
    );
  }
  const after = await metrics(url);
  caller.close();
  await runner.stop();
  const per = (key) => +((after[key] - before[key]) / CALLS).toFixed(2);
  return {
    claims,
    group_commit: group,
    calls: CALLS,
    ...(RATE > 0 ? { rate: RATE } : { concurrency: 16 }),
    breadcrumb_writes_per_call: per('writes'),
    write_tx_per_call: per('tx'),
    lease_tx_per_call: per('leases'),
    total_tx_per_call: +(per('tx') + per('leases')).toFixed(2),
  };
}

try {
  const runs = [
    ['breadcrumb', false],
    ['breadcrumb', true],
    ['lease', false],
    ['lease', true],
  ].filter(([claims, group]) => ONLY === undefined || ONLY === `${claims},${group}`);
  for (const [claims, group] of runs) console.log(JSON.stringify(await measure(claims, group)));
} finally {
  for (const proc of procs) proc.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
