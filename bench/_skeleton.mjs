// The spaced call's floor on this machine: a server with the runner's process topology and none of
// its logic. Started by bench/e2e.mjs as its own process (as the runner is); it speaks just enough
// of the store API for bench/_caller.mjs: POST /auth/token, POST /breadcrumbs, GET /events/stream.
//
// A request breadcrumb is answered with 201 at once; its `requestId` is then written as one line to
// a warm Deno process (at the sandboxes' niceness, reading its stdin asynchronously as a warm sandbox
// does after its first job), whose echoed line becomes a `tool.response.v1` event on every open stream.
// With --commits each side also commits one SQLite transaction (WAL, synchronous=NORMAL, as the
// embedded store): the request's before the 201, the answer's before its event.
//
// With --process (process mode's floor), every request gets a fresh Deno process instead, started
// through the product's own relay launcher (dist/sandbox/relay-launcher.js, at the sandboxes'
// niceness) with the sandbox's own command (buildDenoCommand: flags, environment, import map, DENO_DIR
// nowhere) around a one-shot echo script instead of the harness: it reads one job line, writes its
// answer line and exits. What it leaves out is all of the runner's logic and the harness.
//
// Usage (by bench/e2e.mjs): node bench/_skeleton.mjs <deno path> [--commits] [--process]; prints
// `skeleton listening on http://127.0.0.1:<port>` when ready.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const [denoPath, ...flags] = process.argv.slice(2);
const commits = flags.includes('--commits');
const oneShot = flags.includes('--process');
const SANDBOX_NICENESS = 10; // src/sandbox/process.ts
let stopping = false;

const dir = mkdtempSync(join(tmpdir(), 'bench-skeleton-'));
const echo = join(dir, 'echo.js');
writeFileSync(
  echo,
  `const enc = new TextEncoder(); const dec = new TextDecoder(); let buf = '';
for await (const chunk of Deno.stdin.readable) {
  buf += dec.decode(chunk, { stream: true });
  let nl;
  while ((nl = buf.indexOf('\\n')) >= 0) {
    const job = JSON.parse(buf.slice(0, nl)); buf = buf.slice(nl + 1);
    await Deno.stdout.write(enc.encode(JSON.stringify({ id: job.id, output: job.input }) + '\\n'));
  }
}
`,
);
const deno = oneShot
  ? undefined
  : spawn(denoPath, ['run', '-q', '--no-prompt', echo], { stdio: ['pipe', 'pipe', 'inherit'] });
if (deno) setPriority(deno.pid, SANDBOX_NICENESS);

// --process: one Deno process per job, through the relay launcher, with the sandbox's command
let launchJob;
let launcher; // --process: the relay launcher
if (oneShot) {
  const { createDenoRelayLauncher } = await import('../dist/sandbox/relay-launcher.js');
  const { buildDenoCommand, IMPORT_MAP_JSON } = await import('../dist/sandbox/command.js');
  const script = join(dir, 'one-shot.js');
  writeFileSync(
    script,
    // Deno.stdin.read, as the harness reads: with Deno.stdin.readable (web streams) a process cost 27.8
    // ms of CPU instead of 20.3 (600 calls at c16 each)
    `const buf = new Uint8Array(65536); let len = 0;
for (;;) {
  const n = await Deno.stdin.read(buf.subarray(len));
  if (n === null) Deno.exit(3);
  len += n;
  const nl = buf.subarray(0, len).indexOf(10);
  if (nl < 0) continue;
  const job = JSON.parse(new TextDecoder().decode(buf.subarray(0, nl)));
  Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify({ id: job.id, output: job.input }) + '\\n'));
  Deno.exit(0);
}
`,
  );
  const importMapPath = join(dir, 'import-map.json');
  writeFileSync(importMapPath, IMPORT_MAP_JSON);
  const cmd = buildDenoCommand({ denoPath, net: [], memoryMb: 128, cwd: dir, harnessPath: script, importMapPath });
  launcher = createDenoRelayLauncher({ denoPath, niceness: SANDBOX_NICENESS });
  launchJob = async (line) => {
    const child = await launcher.launch({ ...cmd, niceness: SANDBOX_NICENESS });
    let text = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      if (text === undefined) return; // answered: its one line is all a one-shot process says
      text += chunk;
      const nl = text.indexOf('\n');
      if (nl < 0) return;
      answered(text.slice(0, nl));
      text = undefined;
    });
    child.stderr.resume();
    child.stdin.on('error', () => undefined);
    child.stdin.end(line);
    const end = await child.ended;
    if (end.code !== 0 && !stopping)
      process.stderr.write(`skeleton: a one-shot process ended ${JSON.stringify(end)}\n`);
  };
}

const db = commits ? new Database(join(dir, 'skeleton.db')) : undefined;
db?.pragma('journal_mode = WAL');
db?.pragma('synchronous = NORMAL');
db?.exec('CREATE TABLE rows (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL)');
const insert = db?.prepare('INSERT INTO rows (id, body) VALUES (?, ?)');
const commit = db ? db.transaction((id, body) => insert.run(id, body)) : () => {};

const streams = new Set();
const pending = new Map(); // job id -> the request's requestId
let seq = 0; // event ids
let jobs = 0;

/** An answer line of a Deno process: its commit, then its event on every open stream. */
const answered = (line) => {
  const result = JSON.parse(line);
  const rid = pending.get(result.id);
  pending.delete(result.id);
  const context = { requestId: rid, status: 'success', output: result.output };
  const id = randomUUID();
  commit(id, JSON.stringify(context));
  const event = {
    type: 'breadcrumb.updated',
    breadcrumb_id: id,
    version: 1,
    schema_name: 'tool.response.v1',
    tags: ['tool:response', `request:${rid}`],
    updated_at: new Date().toISOString(),
    context,
  };
  const frame = `id: ${++seq}\ndata: ${JSON.stringify(event)}\n\n`;
  for (const res of streams) res.write(frame);
};

let out = '';
deno?.stdout.setEncoding('utf8');
deno?.stdout.on('data', (chunk) => {
  out += chunk;
  let nl;
  while ((nl = out.indexOf('\n')) >= 0) {
    const line = out.slice(0, nl);
    out = out.slice(nl + 1);
    answered(line);
  }
});

const readBody = (req) =>
  new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });

const server = createServer(async (req, res) => {
  const path = req.url.split('?')[0];
  if (req.method === 'POST' && path === '/auth/token') {
    await readBody(req);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ token: 'skeleton', expires_at: new Date(Date.now() + 3_600_000).toISOString() }));
    return;
  }
  if (req.method === 'GET' && path === '/events/stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    streams.add(res);
    req.on('close', () => streams.delete(res));
    return;
  }
  if (req.method === 'POST' && path === '/breadcrumbs') {
    const body = await readBody(req);
    const crumb = JSON.parse(body);
    const id = randomUUID();
    commit(id, body);
    res.writeHead(201, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id }));
    if (crumb.schema_name !== 'tool.request.v1') return;
    const job = ++jobs;
    pending.set(job, crumb.context?.requestId);
    const line = `${JSON.stringify({ id: job, input: crumb.context?.input ?? null })}\n`;
    if (launchJob) launchJob(line).catch((error) => process.stderr.write(`skeleton: ${error.message}\n`));
    else deno.stdin.write(line);
    return;
  }
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: `skeleton: no route for ${req.method} ${path}` }));
});

const stop = async () => {
  stopping = true;
  server.close();
  for (const res of streams) res.end();
  deno?.kill('SIGKILL');
  await launcher?.close();
  db?.close();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`skeleton listening on http://127.0.0.1:${server.address().port}\n`);
});
