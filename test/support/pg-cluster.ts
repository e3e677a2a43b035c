// A throwaway PostgreSQL cluster for tests (the cluster itself is ./pg-cluster-core.mjs, shared with
// the benches): Debian's postgresql package in a temp dir, on a free port, as the `postgres` system
// user when run as root. One cluster per test file (started on first use, stopped after the file);
// each `database()` is a fresh, empty database in it.

import { PG_UNAVAILABLE, startPgCluster, type PgCluster } from './pg-cluster-core.mjs';

export { PG_UNAVAILABLE, startPgCluster, type PgCluster };

if (PG_UNAVAILABLE !== undefined && process.env.CI)
  throw new Error(`PostgreSQL tests cannot run in CI: ${PG_UNAVAILABLE}`);

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
