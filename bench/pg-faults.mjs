// Faults on PostgreSQL with three replicas (issue 40, "Done when"): three `tools-runner start --db`
// replicas (A, B, C) on one throwaway cluster (test/support/pg-cluster-core.mjs); writers use A and B
// only. C reaches PostgreSQL through the cut proxy (test/support/pg-cut-proxy.mjs). In turn: C is
// SIGSTOPped 5 times for 5 s; C's connection is cut right after its first write in a transaction
// (held --cut-s, default 5); PostgreSQL restarts (immediate stop, start); slow calls are written and
// C — holding some of them — is SIGKILLed.
//
// Meanwhile: requests of an echo tool (it records each run through `context.api`) at --rate per
// second through A and B, at most --window unanswered; and a probe that writes one small breadcrumb
// after another through A and B, timing each (the "write stall" the other replicas feel, per phase).
//
// Prints one JSON object: longest probe write per phase (stop, cut: the criterion is <= 2000 ms;
// pg_restart: the database itself was down), lost (requests never answered), duplicate answers,
// answers with retryable true for calls that ran, and the takeover time (SIGKILL -> the killed
// replica's slow call started again elsewhere). Exit 1 when lost, duplicates or lying answers > 0.
//
//   npm run build && nice -n 5 node bench/pg-faults.mjs
// Options: --rate (30) --window (32) --claim-ttl-ms (3000) --stops (5) --stop-s (5) --cut-s (5)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createStoreClient } from '../dist/breadcrumbs/index.js';
import { silentLogger } from '../dist/logger.js';
import { startPgCluster } from '../test/support/pg-cluster-core.mjs';
import { startCutProxy } from '../test/support/pg-cut-proxy.mjs';

const num = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const RATE = num('rate', 30);
const WINDOW = num('window', 32);
const CLAIM_TTL_MS = num('claim-ttl-ms', 3000);
const STOPS = num('stops', 5);
const STOP_MS = num('stop-s', 5) * 1000;
const CUT_MS = num('cut-s', 5) * 1000;
const SLOW_CALLS = 6;
const SLOW_MS = 6000;

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const WS = 'workspace:tools';
const RUN_TAG = 'bench-faults-run';
const LEASE_KEY = 'bench-faults-lease-key-0123456789';
const log = (msg) => process.stderr.write(`[pg-faults] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const errors = [];

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** One replica: `start --db` (the scan interval at its default: a takeover must not wait for it). */
function startReplica(replica) {
  const args = ['start', '--port', String(replica.port), '--data-dir', replica.dataDir, '--db', replica.db];
  args.push('--secrets-key', '5a'.repeat(32), '--claim-ttl-ms', String(CLAIM_TTL_MS));
  args.push('--lease-key', LEASE_KEY, '--admin-port', '-1', '--no-bootstrap');
  const proc = spawn(process.execPath, [cli, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TOOLS_RUNNER_LOG_LEVEL: 'error',
      TOOLS_RUNNER_RUNNER_SECRET: 'bench-faults-runner-secret-0123456789',
    },
  });
  replica.proc = proc;
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (chunk) => {
    for (const line of chunk.split('\n').filter(Boolean)) errors.push(`${replica.name}: ${line.slice(0, 300)}`);
  });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (/^runner ready$/m.test(out)) resolve();
    });
    proc.once('exit', (code, signal) => reject(new Error(`replica ${replica.name} exited (${code ?? signal})`)));
  });
}

const tool = (name, description, source) => ({
  title: name,
  schema_name: 'tool.code.v1',
  tags: ['tool', `tool:${name}`, WS],
  context: {
    name,
    description,
    version: '1.0.0',
    code: { language: 'typescript', source },
    input_schema: { type: 'object', additionalProperties: true },
    output_schema: { type: 'object' },
    permissions: { net: false, api: 'write' },
    limits: { timeout_ms: 20_000, memory_mb: 64 },
    examples: [{ description: 'runs', input: { i: 0, rid: 'example', ms: 0 } }],
  },
});
const RECORD_RUN = `await context.api.createBreadcrumb({ title: 'run', schema_name: 'bench.faults-run.v1', tags: ['${RUN_TAG}'], context: { rid: input.rid } });`;

const t0 = performance.now();
const cluster = await startPgCluster();
const dir = mkdtempSync(join(tmpdir(), 'bench-pg-faults-'));
const replicas = [];
let proxy;
let exitCode = 1;
try {
  const db = await cluster.database('faults');
  proxy = await startCutProxy(new URL(db));
  const viaProxy = new URL(db);
  viaProxy.port = String(proxy.port);
  for (const name of ['A', 'B', 'C'])
    replicas.push({
      name,
      port: await freePort(),
      dataDir: join(dir, name),
      db: name === 'C' ? viaProxy.toString() : db,
    });
  for (const r of replicas) r.url = `http://127.0.0.1:${r.port}`;
  await startReplica(replicas[0]); // A creates the schema; B and C start on it
  await Promise.all(replicas.slice(1).map(startReplica));
  const [a, b] = replicas.slice(0, 2).map((r) => createStoreClient({ baseUrl: r.url, logger: silentLogger() }));
  const writers = [a, b];
  await a.createBreadcrumb(
    tool(
      'faults-echo',
      'echoes; records each run',
      `export async function execute(input, context) { ${RECORD_RUN} return { i: input.i }; }`,
    ),
  );
  await a.createBreadcrumb(
    tool(
      'faults-slow',
      'records its run, then works for input.ms',
      `export async function execute(input, context) { ${RECORD_RUN} await new Promise((r) => setTimeout(r, input.ms)); return { i: input.i }; }`,
    ),
  );
  await sleep(1000); // every replica has the tools (their events) before the first request

  // The probe: one small write after another through A and B, timed, tagged with the phase.
  let phase = 'warm-up';
  const longest = {};
  const refused = {};
  let probing = true;
  const probe = (async () => {
    for (let i = 0; probing; i++) {
      const at = phase;
      const started = performance.now();
      try {
        await writers[i % writers.length].createBreadcrumb({
          title: 'probe',
          context: { i },
          tags: ['bench-faults-probe'],
        });
      } catch {
        refused[at] = (refused[at] ?? 0) + 1; // a 503 while PostgreSQL is down: an answer, not a stall
      }
      const ms = performance.now() - started;
      longest[at] = Math.max(longest[at] ?? 0, Math.round(ms));
      await sleep(20);
    }
  })();

  // The requests: echo calls through A and B at RATE, at most WINDOW unanswered.
  const rids = [];
  const answersOf = async () => {
    const items = await writers[0].listAll({ schema_name: 'tool.response.v1', tag: WS, include_context: true });
    const map = new Map();
    for (const item of items) {
      const rid = item.context?.request_id;
      map.set(rid, [...(map.get(rid) ?? []), item.context]);
    }
    return map;
  };
  const runsOf = async () => {
    const map = new Map();
    for (const run of await writers[0].listAll({ tag: RUN_TAG, include_context: true }))
      map.set(run.context.rid, [...(map.get(run.context.rid) ?? []), Date.parse(run.created_at ?? run.updated_at)]);
    return map;
  };
  const write = async (rid, toolName, input) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await writers[(rids.length + attempt) % writers.length].createBreadcrumb(
          {
            title: `Request: ${toolName}`,
            schema_name: 'tool.request.v1',
            tags: ['tool:request', WS],
            context: { tool: toolName, input, requestId: rid },
          },
          { idempotencyKey: `faults:${rid}` },
        );
        return;
      } catch (error) {
        if (error.status === 409) return;
        if (attempt > 600) throw error;
        await sleep(100);
      }
    }
  };
  let answeredCount = 0;
  let feeding = true;
  const feeder = (async () => {
    const tw = performance.now();
    let n = 0;
    const counter = setInterval(
      () =>
        answersOf().then(
          (m) => (answeredCount = m.size),
          () => {},
        ),
      500,
    );
    while (feeding) {
      while (feeding && rids.length - answeredCount >= WINDOW) await sleep(20);
      const rid = `fa-${n}-${crypto.randomUUID().slice(0, 8)}`;
      rids.push(rid);
      void write(rid, 'faults-echo', { i: n, rid });
      n++;
      const due = tw + (n * 1000) / RATE;
      if (due > performance.now()) await sleep(due - performance.now());
    }
    clearInterval(counter);
  })();
  const events = {};
  const c = replicas[2];
  // C's own client writes one breadcrumb after another, so a pause or a cut finds C mid-write.
  let cWrites = 0;
  const cWriter = (async () => {
    while (feeding) {
      const ok = await fetch(`${c.url}/breadcrumbs`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ title: 'c', context: { n: cWrites }, tags: ['bench-faults-c'] }),
        signal: AbortSignal.timeout(10_000),
      }).then(
        (r) => r.arrayBuffer().then(() => r.ok),
        () => false,
      );
      if (ok) cWrites++;
      else await sleep(100);
    }
  })();
  await sleep(3000);

  phase = 'stop';
  for (let s = 0; s < STOPS; s++) {
    c.proc.kill('SIGSTOP');
    await sleep(STOP_MS);
    c.proc.kill('SIGCONT');
    await sleep(2000);
  }
  log(`C stopped ${STOPS} x ${STOP_MS} ms`);

  phase = 'cut';
  const cutAt = performance.now();
  // A client of C writes (as bench/pg-cut.mjs does): its first write in a transaction is cut.
  const armed = proxy.arm();
  const stuck = fetch(`${c.url}/breadcrumbs`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ title: 'cut off', context: {}, tags: ['bench-faults-cut'] }),
  }).catch(() => undefined);
  const cutDone = await Promise.race([armed.then(() => true), sleep(20_000).then(() => false)]);
  events.cut = cutDone
    ? { cut_after_ms: Math.round(performance.now() - cutAt), held_ms: CUT_MS }
    : 'C wrote nothing in a transaction within 20 s';
  await sleep(CUT_MS);
  log(`C cut: ${JSON.stringify(events.cut)}`);
  events.cut_write_through_c = await Promise.race([
    stuck.then((r) => r?.status ?? 'failed'),
    sleep(10_000).then(() => 'still waiting 10 s after the cut'),
  ]);

  phase = 'pg_restart';
  const restartAt = performance.now();
  await cluster.restart();
  events.pg_restart = { down_and_up_ms: Math.round(performance.now() - restartAt) };
  await sleep(3000);
  log('PostgreSQL restarted');

  // SIGKILL: slow calls, then the replica holding one (C when it holds any) dies; A or B takes it over.
  phase = 'kill';
  const slow = Array.from({ length: SLOW_CALLS }, (_, i) => `slow-${i}-${crypto.randomUUID().slice(0, 8)}`);
  await Promise.all(slow.map((rid, i) => write(rid, 'faults-slow', { i, rid, ms: SLOW_MS })));
  for (let runs = await runsOf(); slow.some((rid) => !runs.has(rid)); runs = await runsOf()) await sleep(50);
  const { leases } = await writers[0].lease('list', { scope: WS }, LEASE_KEY);
  const holders = leases.filter((lease) => slow.includes(lease.label)).map((lease) => lease.holder);
  const pidOf = (r) => `#${r.proc.pid}-`;
  const victim = [c, ...replicas.slice(0, 2)].find((r) => holders.some((h) => h.includes(pidOf(r))));
  const held = slow.filter((rid) => leases.find((l) => l.label === rid)?.holder.includes(pidOf(victim)));
  if (victim !== c) writers.splice(replicas.indexOf(victim), 1); // writers go on through the survivor
  const killedAt = Date.now();
  victim.proc.kill('SIGKILL');
  for (let deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    const answers = await answersOf();
    if (slow.every((rid) => answers.has(rid))) break;
    await sleep(200);
  }
  const runs = await runsOf();
  const taken = held.map((rid) => ((runs.get(rid)?.length ?? 0) > 1 ? Math.max(...runs.get(rid)) - killedAt : null));
  events.kill = {
    replica: victim.name,
    slow_calls: SLOW_CALLS,
    held_by_it: held.length,
    takeover_ms: taken,
  };
  log(`${victim.name} killed: ${JSON.stringify(events.kill)}`);
  const answeredBy = {};
  for (const list of (await answersOf()).values())
    for (const answer of list) {
      const r = replicas.find((x) => String(answer.metadata?.replica ?? '').includes(pidOf(x)));
      answeredBy[r?.name ?? '?'] = (answeredBy[r?.name ?? '?'] ?? 0) + 1;
    }
  events.answered_by = answeredBy;

  feeding = false;
  await feeder;
  await cWriter;
  let answers = await answersOf();
  for (let deadline = Date.now() + 120_000; rids.some((rid) => !answers.has(rid)) && Date.now() < deadline; ) {
    await sleep(500);
    answers = await answersOf().catch(() => answers);
  }
  await sleep(CLAIM_TTL_MS + 2000); // a second answer would show by now
  probing = false;
  await probe;
  answers = await answersOf();
  const allRuns = await runsOf();
  const all = [...rids, ...slow];
  const lost = all.filter((rid) => !answers.has(rid));
  const duplicateAnswers = all.filter((rid) => answers.get(rid).length > 1);
  const lying = [];
  const statuses = {};
  for (const rid of all)
    for (const answer of answers.get(rid) ?? []) {
      const code = answer.status === 'success' ? 'success' : answer.error?.code;
      statuses[code] = (statuses[code] ?? 0) + 1;
      if (answer.status !== 'success' && answer.error?.retryable === true && allRuns.has(rid)) lying.push(rid);
    }
  const result = {
    bench: 'pg-faults',
    requests: all.length,
    claim_ttl_ms: CLAIM_TTL_MS,
    longest_write_ms_on_a_and_b: longest,
    probe_writes_refused: refused,
    writes_through_c: cWrites,
    lost: lost.length,
    duplicate_answers: duplicateAnswers.length,
    retryable_answers_for_calls_that_ran: lying.length,
    takeover_ms: taken.every((ms) => ms !== null) && taken.length > 0 ? Math.max(...taken) : null,
    runs_more_than_once: all.filter((rid) => (allRuns.get(rid)?.length ?? 0) > 1).length,
    answer_statuses: statuses,
    events,
    total_ms: Math.round(performance.now() - t0),
    errors: { count: errors.length, sample: errors.slice(0, 6) },
  };
  console.log(JSON.stringify(result, null, 1));
  exitCode = lost.length + duplicateAnswers.length + lying.length === 0 ? 0 : 1;
} catch (error) {
  console.error(error);
  console.error(errors.slice(0, 20).join('\n'));
} finally {
  for (const r of replicas)
    if (r.proc && r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill('SIGKILL');
  proxy?.close();
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(exitCode);
