// A throwaway PostgreSQL cluster: Debian's postgresql package (initdb, pg_ctl) in a temp dir,
// listening on 127.0.0.1 on a free port, trust auth for one role. initdb refuses to run as root
// (CI runs as root in a fresh container), so as root the cluster runs as the `postgres` system
// user through runuser. Plain JavaScript (types in pg-cluster-core.d.mts) so that the tests
// (through pg-cluster.ts) and the benches (bench/pg-*.mjs, run without a TypeScript step) share it.

import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Where Debian's postgresql packages put the server binaries (newest major first). */
function binDir() {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const majors = readdirSync(base)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  for (const major of majors) {
    const dir = join(base, major, 'bin');
    if (existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  return undefined;
}

const BIN = binDir();

/** Why a cluster cannot start here, or undefined when it can. */
export const PG_UNAVAILABLE =
  BIN === undefined
    ? 'PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)'
    : process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0
      ? 'running as root and there is no "postgres" system user to run the test cluster as (initdb refuses root)'
      : undefined;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const ROLE = 'tr';

/**
 * Starts a cluster; throws with the tool's output when initdb or pg_ctl fails. `durable`: keep the
 * server's fsync defaults (benches); else fsync is off. `settings`: extra `-c name=value` pairs.
 */
export async function startPgCluster(options = {}) {
  if (BIN === undefined || PG_UNAVAILABLE !== undefined) throw new Error(PG_UNAVAILABLE ?? 'no PostgreSQL');
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'tr-pg-'));
  const data = join(dir, 'data');
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const argv = (tool, args) =>
    root ? ['runuser', ['-u', 'postgres', '--', join(BIN, tool), ...args]] : [join(BIN, tool), args];
  const failed = (tool, args, status, output) => new Error(`${tool} ${args.join(' ')} failed (${status}): ${output}`);
  const runSync = (tool, args) => {
    const [command, list] = argv(tool, args);
    const result = spawnSync(command, list, { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    if (result.status !== 0) throw failed(tool, args, result.status ?? result.signal, result.stderr || result.stdout);
  };
  // pg_ctl start/stop without blocking the event loop (a bench keeps its streams read meanwhile).
  const run = (tool, args) =>
    new Promise((resolve, reject) => {
      const [command, list] = argv(tool, args);
      execFile(command, list, { cwd: dir, encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) =>
        error ? reject(failed(tool, args, error.code ?? error.signal, stderr || stdout)) : resolve(),
      );
    });
  runSync('initdb', ['-D', data, '-U', ROLE, '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
  const port = await freePort();
  // fsync off (unless durable): a test cluster needs no durability against an OS crash (a killed
  // server keeps every commit: the kernel has the WAL); synchronous_commit stays on, so restart()
  // loses no commit.
  const settings = [
    'listen_addresses=127.0.0.1',
    'max_connections=200',
    ...(options.durable ? [] : ['fsync=off', 'full_page_writes=off']),
    ...(options.settings ?? []),
  ];
  const serverOptions = `-p ${port} -k ${dir} ${settings.map((s) => `-c ${s}`).join(' ')}`;
  const start = () =>
    run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', serverOptions, '-w', '-t', '60', 'start']);
  await start();
  const admin = `postgres://${ROLE}@127.0.0.1:${port}/postgres`;
  let next = 0;
  let stopped = false;
  return {
    port,
    dataDir: data,
    url: (name) => `postgres://${ROLE}@127.0.0.1:${port}/${name}`,
    postmasterPid: () => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    async database(name = `t${process.pid}_${next++}`) {
      const client = new pg.Client({ connectionString: admin });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://${ROLE}@127.0.0.1:${port}/${name}`;
    },
    async restart() {
      await run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      await start();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        await run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
