// The store's PostgreSQL backend (`--db postgres://…`): one pool, migrations applied at start,
// the shared event log with its LISTEN pump, the repositories and the lease table, all behind the storage seam
// of ../backend.ts. Several replicas may run on one database at once (see docs/deployment.md).

import type pg from 'pg';
import { ErrorCode, RunnerError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { LeasesPort, ReadsPort, RegistryPort, SearchPort, SecretsPort, WritesPort } from '../backend.js';
import { createEmbeddingQueue, type Embedder, type EmbeddingQueue } from '../embeddings.js';
import type { RetentionStorage } from '../retention.js';
import type { EventFeed } from '../sse.js';
import { DEFAULT_PG_SESSION, migrate, openPool, redactUrl, type PgSession } from './db.js';
import { createPgEventLog, type PgEventLog } from './events.js';
import { createPgLeases } from './leases.js';
import { createPgReads } from './reads.js';
import { createPgRegistry } from './registry.js';
import { pgRetentionStorage } from './retention.js';
import { checkSecretsKey, createPgSecrets } from './secrets.js';
import type { AgentQuota } from '../quota.js';
import { createPgWrites } from './writes.js';

export { DEFAULT_PG_SESSION, isPostgresUrl, isUnavailable, redactUrl, type PgSession } from './db.js';

/** A running PostgreSQL backend. */
export interface PgBackend {
  log: EventFeed & Pick<PgEventLog, 'listenerCount'>;
  writes: WritesPort;
  reads: ReadsPort;
  search: SearchPort;
  secrets: SecretsPort;
  registry: RegistryPort;
  leases: LeasesPort;
  /** Retention's queries on this database (../retention.ts applies the rules). */
  retention: RetentionStorage;
  /** The background embedding of written records (with an embedder). */
  embeddings: EmbeddingQueue | undefined;
  /** Schema version after migrating. */
  schemaVersion: number;
  close(): Promise<void>;
}

/** Connects, migrates (under an advisory lock), checks the secrets key and starts the event pump. */
export async function openPgBackend(options: {
  url: string;
  poolSize: number;
  secretsKey: Buffer;
  eventRetention: number;
  embedder: Embedder | undefined;
  logger: Logger;
  quota?: AgentQuota | undefined;
  session?: PgSession;
}): Promise<PgBackend> {
  const { url, logger } = options;
  const session = options.session ?? DEFAULT_PG_SESSION;
  const pool: pg.Pool = openPool(url, options.poolSize, logger, session);
  let log: PgEventLog | undefined;
  try {
    const schemaVersion = await migrate(pool, logger);
    await checkSecretsKey(pool, options.secretsKey);
    log = await createPgEventLog({ pool, url, retention: options.eventRetention, logger, session });
    const reads = createPgReads(pool, { embedder: options.embedder, logger });
    const events = log;
    let embeddings: EmbeddingQueue | undefined;
    const writes = createPgWrites(
      pool,
      events,
      (id, version, text) => embeddings?.schedule(id, version, text),
      options.quota,
    );
    const leases = createPgLeases(pool);
    if (options.embedder) embeddings = createEmbeddingQueue(writes, options.embedder, logger);
    logger.info('store database is PostgreSQL', { db: redactUrl(url), schemaVersion, poolSize: options.poolSize });
    return {
      log: events,
      writes,
      reads,
      search: reads,
      secrets: createPgSecrets(pool, options.secretsKey),
      registry: createPgRegistry(pool),
      leases,
      retention: pgRetentionStorage(pool, writes, (limit) => leases.pruneOrphans(limit)),
      embeddings,
      schemaVersion,
      async close() {
        embeddings?.close();
        await embeddings?.idle();
        await events.close();
        await pool.end();
      },
    };
  } catch (error) {
    await log?.close();
    await pool.end().catch(() => {});
    if (error instanceof RunnerError) throw error;
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `cannot use database "${redactUrl(url)}": ${(error as Error).message || String(error)}`,
      { cause: error },
    );
  }
}
