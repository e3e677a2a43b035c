// The scheduler over time (docs/autonomy.md "The scheduler"): a store and two runner replicas at
// default settings for --minutes (default 10) with an operator's 1-s and 5-s schedules and a
// continuous tool writing 5 records a second through context.api (the shipped tools beside); at 20 % of the
// run 40 agent-written 1-s schedules join, at 30 % a burst of 500 breadcrumbs hits a subscription, at
// 40 % and 60 % the scheduler's lease holder is SIGKILLed (and started again), at 75 % both replicas
// stop for 12 s and start again. Prints JSON per schedule group: due, published, late, missed (and
// reported missed), duplicates, lag p50/p99 of on-time ticks, and the continuous tool's runs (a
// restart within one replica is a run ended by a budget or a crash). test/autonomy/scheduler-soak.test.ts
// runs it for 3 minutes.
//
//   node bench/scheduler-soak.mjs [--minutes=10]
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCli } from './cli-process.mjs';

const minutes = Number(process.argv.find((a) => a.startsWith('--minutes='))?.split('=')[1] ?? 10);
const RUN_MS = minutes * 60_000;
const DOWN_MS = 12_000;
const procs = new Set();
const dir = mkdtempSync(join(tmpdir(), 'tr-sched-soak-'));
// The shipped tools and a continuous operator tool that writes a pulse every 200 ms, naming its run.
const bootDir = join(dir, 'boot');
mkdirSync(join(bootDir, 'tools'), { recursive: true });
cpSync(new URL('../bootstrap-breadcrumbs/tools-self-contained', import.meta.url), join(bootDir, 'tools'), {
  recursive: true,
});
writeFileSync(
  join(bootDir, 'tools', 'pulse.json'),
  JSON.stringify({
    name: 'pulse',
    description: 'Writes a pulse every 200 ms for as long as it runs.',
    version: '1.0.0',
    code: {
      language: 'typescript',
      source: `export async function execute(input, context) {
        for (let n = 0; ; n++) {
          await context.api.createBreadcrumb({ title: 'pulse', schema_name: 'bench.pulse.v1', tags: ['bench:pulse'], context: { run: context.request.id, n }, ttl: new Date(Date.now() + 3600000).toISOString() }).catch((e) => context.log(String(e)));
          await new Promise((r) => setTimeout(r, 200));
        }
      }`,
    },
    input_schema: { type: 'object', properties: {} },
    output_schema: { type: 'object' },
    permissions: { net: false, breadcrumbs: { write: ['bench.pulse.v1'] } },
    limits: { timeout_ms: 5000, memory_mb: 64 },
    bootstrap: { enabled: true, mode: 'continuous' },
    examples: [{ description: 'runs until stopped', input: {}, output: {}, match: 'schema' }],
  }),
);

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function api(url, path, init) {
  const res = await fetch(`${url}${path}`, init);
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}
const post = (url, body) =>
  api(url, '/breadcrumbs', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
async function listAll(url, query) {
  const out = [];
  for (let offset = 0; ; offset += 500) {
    const page = await api(
      url,
      `/breadcrumbs?${new URLSearchParams({ ...query, limit: '500', offset: String(offset) })}`,
    );
    out.push(...page);
    if (page.length < 500) return out;
  }
}
const until = async (what, probe, ms = 120_000) => {
  const deadline = Date.now() + ms;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};
const at = (fraction) => new Promise((r) => setTimeout(r, Math.max(0, started + RUN_MS * fraction - Date.now())));

// A subscription tool for the burst and one for the 5-s ticks (agent-written: in the store).
const subscriber = (name, schema, tag) => ({
  title: name,
  schema_name: 'tool.code.v1',
  tags: ['tool', `tool:${name}`, 'workspace:tools'],
  context: {
    name,
    description: `counts ${schema}`,
    version: '1.0.0',
    code: { language: 'typescript', source: 'export async function execute() { return { ok: true }; }' },
    input_schema: { type: 'object', properties: {} },
    output_schema: { type: 'object' },
    permissions: { net: false, breadcrumbs: { read: [schema] } },
    subscriptions: [{ schema_name: schema, tag }],
    limits: { timeout_ms: 5000, memory_mb: 64 },
    examples: [{ description: 'no trigger', input: {}, output: { ok: true } }],
  },
});
const definition = (title, seconds, label) => ({
  title,
  schema_name: 'schedule.definition.v1',
  tags: ['schedule:definition'],
  context: { interval: { type: 'seconds', every_seconds: seconds }, labels: [label] },
});

const store = startCli(['store', '--port', '0', '--data-dir', dir], procs);
const url = (await store.line(/^store listening on /)).replace('store listening on ', '');
const replicas = [];
async function startReplica() {
  const admin = await freePort();
  const proc = startCli(
    ['start', '--store-url', url, '--admin-port', String(admin), '--bootstrap-dir', bootDir],
    procs,
  );
  await proc.line(/^runner ready$/);
  const replica = { proc, admin: `http://127.0.0.1:${admin}` };
  replicas.push(replica);
  return replica;
}
async function holder() {
  for (const r of replicas) {
    const status = await api(r.admin, '/autonomy').catch(() => undefined);
    const health = await api(r.admin, '/health').catch(() => undefined);
    if (status?.scheduler?.holder && status.scheduler.holder === health?.replica) return r;
  }
  return undefined;
}
async function killHolder() {
  let found;
  await until('a lease holder', async () => (found = await holder()) !== undefined);
  found.proc.proc.kill('SIGKILL');
  replicas.splice(replicas.indexOf(found), 1);
  await startReplica();
}

const started = Date.now();
const events = [];
await startReplica();
await startReplica();
const op1 = await post(url, definition('operator every 1 s', 1, 'op:1s'));
const op5 = await post(url, definition('operator every 5 s', 5, 'op:5s'));
await post(url, subscriber('on-burst', 'note.v1', 'burst'));
await post(url, subscriber('on-5s', 'schedule.tick.v1', 'op:5s'));

await at(0.2);
const agentDefs = [];
for (let i = 0; i < 40; i++) agentDefs.push((await post(url, definition(`agent ${i}`, 1, 'agent:1s'))).id);
events.push({ at_s: Math.round((Date.now() - started) / 1000), event: '40 agent schedules' });
await at(0.3);
await Promise.all(
  Array.from({ length: 500 }, (_, i) =>
    post(url, { title: `note ${i}`, schema_name: 'note.v1', tags: ['burst'], context: { i } }),
  ),
);
events.push({ at_s: Math.round((Date.now() - started) / 1000), event: '500-breadcrumb burst' });
await at(0.4);
await killHolder();
events.push({ at_s: Math.round((Date.now() - started) / 1000), event: 'SIGKILL of the holder' });
await at(0.6);
await killHolder();
events.push({ at_s: Math.round((Date.now() - started) / 1000), event: 'SIGKILL of the holder' });
await at(0.75);
const downFrom = Date.now();
await Promise.all(replicas.splice(0).map((r) => r.proc.stop()));
await new Promise((r) => setTimeout(r, DOWN_MS));
const downTo = Date.now();
await startReplica();
await startReplica();
events.push({ at_s: Math.round((downFrom - started) / 1000), event: `both replicas down for ${DOWN_MS / 1000} s` });
await at(1);
const end = Date.now();
// The ticks due before the end are in once the last one due is (or a tick after it).
await until('the last due ticks', async () => {
  const ticks = await listAll(url, {
    schema_name: 'schedule.tick.v1',
    tag: `schedule:${op1.id}`,
    include_context: 'true',
  });
  return ticks.some((t) => t.context.due_ms >= end);
});

const ticks = await listAll(url, { schema_name: 'schedule.tick.v1', include_context: 'true' });
const missedRecords = await listAll(url, { schema_name: 'schedule.missed.v1', include_context: 'true' });
const answers = await listAll(url, { schema_name: 'tool.response.v1', include_context: 'true' });
const succeeded = (tool) => answers.filter((r) => r.context.tool === tool && r.context.status === 'success').length;
// Runs are `continuous:pulse:<replica>:<n>`: a second n on one replica is a restart there.
const pulses = await listAll(url, { schema_name: 'bench.pulse.v1', include_context: 'true' });
const runs = new Set(pulses.map((p) => p.context.run));
const replicasSeen = new Set([...runs].map((run) => run.split(':').slice(2, -1).join(':')));
const quantile = (values, q) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * q))] : null;
};
function figures(ids, periodMs) {
  let due = 0;
  let published = 0;
  let duplicates = 0;
  let late = 0;
  let missed = 0;
  let missedInDowntime = 0;
  let reported = 0;
  const lags = [];
  for (const id of ids) {
    const mine = ticks.filter((t) => t.context.schedule_id === id && t.context.due_ms <= end);
    const dues = new Set(mine.map((t) => t.context.due_ms));
    duplicates += mine.length - dues.size;
    if (dues.size === 0) continue;
    const first = Math.min(...dues);
    const expected = Math.floor(end / periodMs) - first / periodMs + 1;
    due += expected;
    published += dues.size;
    for (let d = first; d <= end; d += periodMs)
      if (!dues.has(d)) {
        missed++;
        if (d >= downFrom - periodMs && d <= downTo + periodMs) missedInDowntime++;
      }
    for (const t of mine) {
      if (t.context.late) late++;
      else lags.push(Date.parse(t.context.fired_at) - t.context.due_ms);
    }
    reported += missedRecords.filter((m) => m.context.schedule_id === id).reduce((n, m) => n + m.context.skipped, 0);
  }
  return {
    schedules: ids.length,
    due,
    published,
    late,
    missed,
    missed_outside_downtime: missed - missedInDowntime,
    reported_missed: reported,
    duplicates,
    lag_p50_ms: quantile(lags, 0.5),
    lag_p99_ms: quantile(lags, 0.99),
    lag_max_ms: lags.length ? Math.max(...lags) : null,
  };
}
const result = {
  minutes,
  events,
  operator_1s: figures([op1.id], 1000),
  operator_5s: figures([op5.id], 5000),
  agents_1s: figures(agentDefs, 1000),
  continuous: { pulses: pulses.length, runs: runs.size, restarts_within_a_replica: runs.size - replicasSeen.size },
  burst_answered: succeeded('on-burst'),
  on_5s_tick_runs: succeeded('on-5s'),
  missed_records: missedRecords.length,
};
console.log(JSON.stringify(result, null, 2));
await Promise.all(replicas.map((r) => r.proc.stop()));
await store.stop();
rmSync(dir, { recursive: true, force: true });
