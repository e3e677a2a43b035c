// Failover of three `tools-runner start --db postgres://…` replicas on one PostgreSQL (issue 25):
// a throwaway cluster (test/support/pg-cluster-core.mjs), three replicas (each its own HTTP port and
// data dir; one shared database), one SSE client per replica on `/events/stream` (tool.response.v1,
// with ids). N requests (--n, default 1000) are written round robin through the replicas' store APIs
// at --rate per second (at most --window, default 32, written and unanswered); before request --kill-at (300) replica C is SIGKILLed, before request
// --restart-killed-at (450; 0 = never) it starts again on the same port and data dir, and before
// request --pg-restart-at (600) PostgreSQL stops (immediate: a crash as clients see it) and starts
// again on the same port and data dir. The tool records each execution through `context.api`
// (a breadcrumb per run), so duplicate runs are counted from the tool's side.
//
// Stream clients: A's and B's stay on their replica (reconnecting to it with Last-Event-ID if their
// stream drops); C's fails over to A with Last-Event-ID when C dies and stays there; after C's
// restart a fourth client C2 connects to it with Last-Event-ID 0 (a full catch-up from the event
// table). Each must have seen an answer event for every request.
//
// Checks (exit 1 when one fails): every request has exactly one tool.response.v1; no request ran
// more than once unless it was in flight at the kill (written before it and not yet answered: an
// upper bound of what C held); every stream client saw every answer. Prints one JSON object.
//
//   npm run build && nice -n 5 node bench/pg-failover.mjs --claims=breadcrumb
// Options: --n --rate --window --kill-at --restart-killed-at --pg-restart-at --claims=auto|lease|breadcrumb
//          --claim-ttl-ms (10000) --timeout-s (300)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createStoreClient } from '../dist/breadcrumbs/index.js';
import { silentLogger } from '../dist/logger.js';
import { startPgCluster } from '../test/support/pg-cluster-core.mjs';

const text = (name, dflt) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const num = (name, dflt) => Number(text(name, dflt));
const N = num('n', 1000);
const RATE = num('rate', 50);
const KILL_AT = num('kill-at', 300);
const RESTART_KILLED_AT = num('restart-killed-at', 450);
const PG_RESTART_AT = num('pg-restart-at', 600);
const WINDOW = num('window', 32);
const CLAIMS = text('claims', 'auto');
const CLAIM_TTL_MS = num('claim-ttl-ms', 10_000);
const TIMEOUT_MS = num('timeout-s', 300) * 1000;
if (!['auto', 'lease', 'breadcrumb'].includes(CLAIMS))
  throw new Error(`--claims must be auto, lease or breadcrumb, got "${CLAIMS}"`);

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const KEY = '5a'.repeat(32);
const WS = 'workspace:tools';
const TOOL = 'failover-echo';
const RUN_TAG = 'bench-failover-run';
const NAMES = ['A', 'B', 'C'];
const log = (msg) => process.stderr.write(`[pg-failover] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const errors = [];
const failedStarts = [];

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** One replica: `start --db` on a fixed port (so a restart keeps its URL); stderr lines kept as errors. */
function startReplica(replica) {
  const proc = spawn(
    process.execPath,
    [
      cli,
      'start',
      '--port',
      String(replica.port),
      '--data-dir',
      replica.dataDir,
      '--db',
      replica.db,
      '--secrets-key',
      KEY,
      '--claims',
      CLAIMS,
      '--claim-ttl-ms',
      String(CLAIM_TTL_MS),
      '--scan-interval-ms',
      '1000',
      '--admin-port',
      '-1',
      '--no-bootstrap',
    ],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Replicas share the runner secret: claim keys (and the lease key) derive from it.
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TOOLS_RUNNER_LOG_LEVEL: 'error',
        TOOLS_RUNNER_RUNNER_SECRET: 'bench-failover-runner-secret-0123456789',
      },
    },
  );
  replica.proc = proc;
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (chunk) => {
    for (const line of chunk.split('\n').filter(Boolean)) errors.push(`${replica.name}: ${line.slice(0, 300)}`);
  });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (!replica.alive && /^runner ready$/m.test(out)) {
        replica.alive = true;
        resolve();
      }
    });
    proc.once('exit', (code, signal) => reject(new Error(`replica ${replica.name} exited (${code ?? signal})`)));
  });
}

/** An SSE client of tool.response.v1 with ids: reconnects with Last-Event-ID (to `target()`) until closed. */
function streamClient(name, target, initialLastId) {
  const client = { name, seen: new Map(), lastId: initialLastId, reconnects: 0, hosts: [], log: [], closed: false };
  let req;
  const connect = () => {
    if (client.closed) return;
    const replica = target();
    if (client.hosts.at(-1) !== replica.name) client.hosts.push(replica.name);
    const headers = client.lastId !== undefined ? { 'Last-Event-ID': String(client.lastId) } : {};
    let buf = '';
    req = http.get(
      `${replica.url}/events/stream?x_ext=ids,gap&x_schema_name=tool.response.v1`,
      { headers, agent: false },
      (res) => {
        client.log.push(`${replica.name}: HTTP ${res.statusCode} after ${client.lastId ?? '-'}`);
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          buf += chunk;
          let end;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            const frame = buf.slice(0, end);
            buf = buf.slice(end + 2);
            let id;
            let data = '';
            for (const line of frame.split('\n')) {
              if (line.startsWith('id:')) id = line.slice(3).trim();
              else if (line.startsWith('data:')) data += line.slice(5).trim();
            }
            if (!data) continue;
            const event = JSON.parse(data);
            if (id !== undefined) client.lastId = id;
            if (event.type === 'stream.gap') errors.push(`stream ${name}: gap frame ${data.slice(0, 200)}`);
            const rid = event.context?.request_id;
            if (rid) client.seen.set(rid, (client.seen.get(rid) ?? 0) + 1);
          }
        });
        res.on('close', again);
      },
    );
    req.on('error', (error) => {
      client.log.push(`${replica.name}: ${error.code ?? error.message}`);
      again();
    });
  };
  let pending = false;
  function again() {
    if (client.closed || pending) return;
    pending = true;
    client.reconnects++;
    setTimeout(() => {
      pending = false;
      connect();
    }, 250);
  }
  connect();
  client.close = () => {
    client.closed = true;
    req?.destroy();
  };
  return client;
}

const t0 = performance.now();
const cluster = await startPgCluster();
const dir = mkdtempSync(join(tmpdir(), 'bench-pg-failover-'));
const replicas = [];
const streams = [];
let exitCode = 1;
try {
  const db = await cluster.database('failover');
  for (const name of NAMES)
    replicas.push({ name, port: await freePort(), dataDir: join(dir, name), db, alive: false, accepted: 0 });
  for (const r of replicas) r.url = `http://127.0.0.1:${r.port}`;
  log(`starting ${replicas.length} replicas on ${cluster.url('failover')} (--claims ${CLAIMS})`);
  await Promise.all(replicas.map(startReplica));
  const clients = replicas.map((r) => createStoreClient({ baseUrl: r.url, logger: silentLogger() }));
  const firstAlive = () => replicas.find((r) => r.alive);
  // A client stays on its replica while it lives; once it died, the client resumes on the first
  // live replica and stays there. Every client starts at Last-Event-ID 0: connected before the
  // first request, it must see every answer from the start of the log.
  for (const r of replicas) {
    let home = r;
    streams.push(streamClient(r.name, () => (home = home.alive ? home : firstAlive()), '0'));
  }
  await clients[0].createBreadcrumb({
    title: TOOL,
    schema_name: 'tool.code.v1',
    tags: ['tool', `tool:${TOOL}`, WS],
    context: {
      name: TOOL,
      description: 'echoes its index; records each run through context.api',
      version: '1.0.0',
      code: {
        language: 'typescript',
        source: `export async function execute(input, context) {
          await context.api.createBreadcrumb({ title: 'run', schema_name: 'bench.failover-run.v1', tags: ['${RUN_TAG}'], context: { rid: input.rid } });
          return { i: input.i };
        }`,
      },
      input_schema: { type: 'object', additionalProperties: true },
      output_schema: { type: 'object' },
      permissions: { net: false, api: 'write' },
      limits: { timeout_ms: 20_000, memory_mb: 64 },
      examples: [{ description: 'echoes', input: { i: 0, rid: 'example' }, output: { i: 0 } }],
    },
  });
  await sleep(1000); // every replica has the tool (its event) before the first request

  const rids = Array.from({ length: N }, (_, i) => `fo-${i}-${crypto.randomUUID().slice(0, 8)}`);
  const answeredNow = () => {
    const all = new Set();
    for (const s of streams) for (const rid of s.seen.keys()) all.add(rid);
    return all;
  };
  let writeRetries = 0;
  const write = async (i) => {
    for (let attempt = 0; ; attempt++) {
      const alive = replicas.filter((r) => r.alive);
      const r = alive[(i + attempt) % alive.length];
      try {
        await clients[replicas.indexOf(r)].createBreadcrumb(
          {
            title: `Request: ${TOOL}`,
            schema_name: 'tool.request.v1',
            tags: ['tool:request', WS],
            context: { tool: TOOL, input: { i, rid: rids[i] }, requestId: rids[i] },
          },
          { idempotencyKey: `failover:${rids[i]}` },
        );
        r.accepted++;
        return;
      } catch (error) {
        if (error.status === 409) return; // an earlier attempt committed
        if (attempt > 600) throw error;
        writeRetries++;
        await sleep(100);
      }
    }
  };
  const events = {};
  let inFlightAtKill = new Set();
  let inFlightAtPgRestart = new Set();
  let restarting = Promise.resolve();
  const writing = [];
  const tw = performance.now();
  for (let i = 0; i < N; i++) {
    if (i === KILL_AT) {
      const c = replicas[2];
      const answered = answeredNow();
      inFlightAtKill = new Set(rids.slice(0, i).filter((rid) => !answered.has(rid)));
      c.alive = false;
      c.proc.kill('SIGKILL');
      events.kill = { before_request: i, replica: c.name, ms: Math.round(performance.now() - t0) };
      log(`SIGKILL ${c.name} before request ${i} (${inFlightAtKill.size} written and unanswered)`);
    }
    if (i === RESTART_KILLED_AT && RESTART_KILLED_AT > KILL_AT) {
      // In the background: writes go on to A and B while C boots; C takes writes once it is ready.
      const c = replicas[2];
      const at = performance.now();
      // Like an orchestrator's restart policy: a start that fails (the database restarting while
      // C boots: `start` exits 1) is tried again a second later, up to 5 times.
      const boot = async () => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await startReplica(c);
          } catch (error) {
            failedStarts.push(`${c.name} start attempt ${attempt}: ${error.message}`);
            if (attempt >= 5) throw error;
            await sleep(1000);
          }
        }
      };
      restarting = boot().then(
        () => {
          events.restart_killed = {
            before_request: i,
            replica: c.name,
            at_ms: Math.round(at - t0),
            ready_after_ms: Math.round(performance.now() - at),
          };
          streams.push(streamClient('C2', () => c, '0'));
          log(`restarted ${c.name} (asked before request ${i})`);
        },
        (error) => failedStarts.push(`${c.name} not restarted: ${error.message}`),
      );
    }
    if (i === PG_RESTART_AT) {
      const answered = answeredNow();
      inFlightAtPgRestart = new Set(rids.slice(0, i).filter((rid) => !answered.has(rid)));
      const started = performance.now();
      await cluster.restart();
      events.pg_restart = {
        before_request: i,
        at_ms: Math.round(started - t0),
        down_and_up_ms: Math.round(performance.now() - started),
      };
      log(`PostgreSQL restarted before request ${i}`);
    }
    // Flow control: at most WINDOW requests written and not yet answered, so "in flight at the
    // kill" is the few C may really hold, not a backlog the replicas have not reached yet.
    while (i - answeredNow().size >= WINDOW) await sleep(20);
    writing.push(write(i));
    const due = tw + ((i + 1) * 1000) / RATE;
    if (due > performance.now()) await sleep(due - performance.now());
  }
  await Promise.all(writing);
  await restarting;
  const writeSeconds = (performance.now() - tw) / 1000;
  log(`${N} requests written in ${writeSeconds.toFixed(1)} s; waiting for answers`);

  const reader = clients[0];
  const answersOf = async () => {
    const items = await reader.listAll({ schema_name: 'tool.response.v1', tag: WS, include_context: true });
    const map = new Map();
    for (const item of items) {
      const rid = item.context?.request_id;
      map.set(rid, [...(map.get(rid) ?? []), item.context]);
    }
    return map;
  };
  const deadline = Date.now() + TIMEOUT_MS;
  let answers = await answersOf();
  while (rids.some((rid) => !answers.has(rid)) && Date.now() < deadline) {
    await sleep(500);
    answers = await answersOf().catch(() => answers);
  }
  const answeredMs = Math.round(performance.now() - t0);
  // A claim TTL and two scans more, so a second run or a second answer would show.
  await sleep(CLAIM_TTL_MS + 2000);
  answers = await answersOf();
  const runs = await reader.listAll({ tag: RUN_TAG, include_context: true });
  const runsOf = new Map();
  const wallT0 = Date.now() - performance.now() + t0;
  const runTimes = new Map();
  for (const run of runs) {
    runsOf.set(run.context.rid, (runsOf.get(run.context.rid) ?? 0) + 1);
    runTimes.set(run.context.rid, [
      ...(runTimes.get(run.context.rid) ?? []),
      Math.round(Date.parse(run.updated_at) - wallT0),
    ]);
  }
  const streamDeadline = Date.now() + 60_000;
  while (streams.some((s) => rids.some((rid) => !s.seen.has(rid))) && Date.now() < streamDeadline) await sleep(250);
  for (const s of streams) s.close();

  const unanswered = rids.filter((rid) => !answers.has(rid));
  const multiAnswered = rids.filter((rid) => (answers.get(rid)?.length ?? 0) > 1);
  const statuses = {};
  const failures = [];
  for (const list of answers.values())
    for (const a of list) {
      statuses[a.status] = (statuses[a.status] ?? 0) + 1;
      if (a.status !== 'success' && failures.length < 3) failures.push(JSON.stringify(a).slice(0, 400));
    }
  const duplicates = rids.filter((rid) => (runsOf.get(rid) ?? 0) > 1);
  const beyondKill = duplicates.filter((rid) => !inFlightAtKill.has(rid));
  const neverRan = rids.filter((rid) => !runsOf.has(rid));
  const streamReport = streams.map((s) => {
    const missing = rids.filter((rid) => !s.seen.has(rid));
    return {
      client: s.name,
      hosts: s.hosts.join(' -> '),
      measured:
        s.name === 'C2'
          ? 'connected to the restarted C with Last-Event-ID 0 (full catch-up from the event table)'
          : s.hosts.length > 1
            ? `its replica died: resumed on ${s.hosts.at(-1)} with Last-Event-ID`
            : 'stayed on its replica (resuming with Last-Event-ID after any drop)',
      reconnects: s.reconnects,
      connections: s.log.filter((l) => l.includes('HTTP')).slice(0, 8),
      connection_errors: s.log.filter((l) => !l.includes('HTTP')).length,
      last_id: s.lastId,
      answers_seen: s.seen.size,
      repeated_frames: [...s.seen.values()].reduce((sum, n) => sum + n - 1, 0),
      missing: missing.length,
      missing_sample: missing.slice(0, 5),
    };
  });
  const checks = {
    every_request_answered_exactly_once: unanswered.length === 0 && multiAnswered.length === 0,
    no_duplicate_runs_beyond_the_kill: beyondKill.length === 0,
    every_stream_saw_every_answer: streamReport.every((s) => s.missing === 0),
  };
  const ok = Object.values(checks).every(Boolean);
  console.log(
    JSON.stringify(
      {
        bench: 'pg-failover',
        ok,
        checks,
        claims: CLAIMS,
        requests: N,
        write_rate_per_sec: RATE,
        window: WINDOW,
        claim_ttl_ms: CLAIM_TTL_MS,
        events,
        accepted_per_replica: Object.fromEntries(replicas.map((r) => [r.name, r.accepted])),
        write_retries: writeRetries,
        unanswered: { count: unanswered.length, sample: unanswered.slice(0, 5) },
        answered_more_than_once: { count: multiAnswered.length, sample: multiAnswered.slice(0, 5) },
        answer_statuses: statuses,
        failed_answers_sample: failures,
        executions: {
          total: runs.length,
          never_ran_but_answered: neverRan.filter((rid) => answers.has(rid)).length,
          in_flight_at_kill: inFlightAtKill.size,
          in_flight_at_pg_restart: inFlightAtPgRestart.size,
          duplicated: duplicates.map((rid) => ({
            rid,
            runs: runsOf.get(rid),
            in_flight_at_kill: inFlightAtKill.has(rid),
            in_flight_at_pg_restart: inFlightAtPgRestart.has(rid),
            run_at_ms: runTimes.get(rid)?.sort((a, b) => a - b),
            answer_attempt: answers.get(rid)?.[0]?.metadata?.attempt,
          })),
          duplicated_beyond_the_kill: beyondKill.length,
        },
        streams: streamReport,
        write_seconds: Math.round(writeSeconds * 10) / 10,
        all_answered_after_ms: answeredMs,
        total_ms: Math.round(performance.now() - t0),
        failed_starts: failedStarts,
        errors: { count: errors.length, sample: errors.slice(0, 8) },
      },
      null,
      1,
    ),
  );
  exitCode = ok ? 0 : 1;
} catch (error) {
  console.error(error);
  console.error(errors.slice(0, 20).join('\n'));
} finally {
  for (const s of streams) s.close();
  for (const r of replicas)
    if (r.proc && r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill('SIGTERM');
  await Promise.all(
    replicas.map(
      (r) =>
        r.proc &&
        r.proc.exitCode === null &&
        r.proc.signalCode === null &&
        new Promise((res) => r.proc.once('exit', res)),
    ),
  );
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(exitCode);
