// A throwaway PostgreSQL cluster for tests: Debian's postgresql package (initdb, pg_ctl) in a temp
// dir, listening on 127.0.0.1 on a free port, trust auth for one role. initdb refuses to run as
// root (CI runs as root in a fresh container), so as root the cluster runs as the `postgres`
// system user through runuser. One cluster per test file (started on first use, stopped after the
// file); each `database()` is a fresh, empty database in it.

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Where Debian's postgresql packages put the server binaries (newest major first). */
function binDir(): string | undefined {
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

/** Why PostgreSQL tests cannot run here, or undefined when they can. In CI a missing server is an error, not a skip. */
export const PG_UNAVAILABLE: string | undefined =
  BIN === undefined
    ? 'PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)'
    : process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0
      ? 'running as root and there is no "postgres" system user to run the test cluster as (initdb refuses root)'
      : undefined;

if (PG_UNAVAILABLE !== undefined && process.env.CI)
  throw new Error(`PostgreSQL tests cannot run in CI: ${PG_UNAVAILABLE}`);

function freePort(): Promise<number> {
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

/** A running throwaway cluster. */
export interface PgCluster {
  /** A connection URL of a fresh, empty database. */
  database(): Promise<string>;
  /** Stops the server immediately (a crash as clients see it) and starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const ROLE = 'tr';

/** Starts a cluster; throws with the tool's output when initdb or pg_ctl fails. */
export async function startPgCluster(): Promise<PgCluster> {
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
  const run = (tool: string, args: string[]): void => {
    const command = root ? 'runuser' : join(BIN, tool);
    const argv = root ? ['-u', 'postgres', '--', join(BIN, tool), ...args] : args;
    const result = spawnSync(command, argv, { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    if (result.status !== 0)
      throw new Error(
        `${tool} ${args.join(' ')} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout}`,
      );
  };
  run('initdb', ['-D', data, '-U', ROLE, '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale', 'C']);
  const port = await freePort();
  // fsync off: a test cluster needs no durability against an OS crash (a killed server keeps every
  // commit: the kernel has the WAL); synchronous_commit stays on, so restart() loses no commit.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`;
  const start = (): void =>
    run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', options, '-w', '-t', '60', 'start']);
  start();
  const admin = `postgres://${ROLE}@127.0.0.1:${port}/postgres`;
  let next = 0;
  let stopped = false;
  return {
    async database() {
      const name = `t${process.pid}_${next++}`;
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
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      start();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

let shared: Promise<PgCluster> | undefined;

/** The test file's cluster, started on first use; `stopSharedPgCluster` (afterAll) stops it. */
export function sharedPgCluster(): Promise<PgCluster> {
  shared ??= startPgCluster();
  return shared;
}

/** Stops the file's cluster if one was started. */
export async function stopSharedPgCluster(): Promise<void> {
  const cluster = shared;
  shared = undefined;
  if (cluster) await (await cluster).stop();
}
