// The embedded RCRT-compatible breadcrumb store: node:http + better-sqlite3, or PostgreSQL with
// `db: postgres://…` (pg/; several replicas on one database); differences from upstream in
// docs/compat.md.
//
// Lifecycle: RUNNING once `createStore` resolves (the port accepts connections); CLOSING after
// `close()` is called (new requests get 503, SSE streams are ended, idle keep-alive sockets are
// closed, in-flight requests finish — or are cut after a grace period); CLOSED once the server
// and the database are closed.

import type { Socket } from 'node:net';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Config } from '../config/index.js';
import { ErrorCode, RunnerError, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { DEFAULT_OWNER_ID, createStoreAuth } from './auth.js';
import { createBreadcrumbReads } from './breadcrumb-reads.js';
import { createBreadcrumbWrites, type BreadcrumbWrites, type WriteStats } from './breadcrumb-writes.js';
import { createSearchIndex, type SearchIndex } from './fts-index.js';
import { CHECKPOINT_INTERVAL_MS, startCheckpointer } from './checkpointer.js';
import { openDatabase, type Db } from './db.js';
import type { LeasesPort, ReadsPort, RegistryPort, SearchPort, SecretsPort, WritesPort } from './backend.js';
import {
  DEFAULT_PG_SESSION,
  isPostgresUrl,
  isUnavailable,
  openPgBackend,
  type PgBackend,
  type PgSession,
} from './pg/index.js';
import {
  createEmbeddingQueue,
  embedderFromConfig,
  sqliteVectors,
  type Embedder,
  type EmbeddingQueue,
} from './embeddings.js';
import { createEventLog } from './event-log.js';
import { createRegistry } from './registry.js';
import { createBreadcrumbSearch } from './search.js';
import type { BreadcrumbReads } from './breadcrumb-reads.js';
import { HttpError, isLoopbackHost, sendError } from './http-util.js';
import { createLeaseGate, createLeases, type Leases } from './leases.js';
import { createRetention, type Retention, type RetentionStorage } from './retention.js';
import { sqliteRetentionStorage } from './retention-sqlite.js';
import { createLocalEndpoint, type LocalEndpoint } from './local.js';
import { quotaOf } from './quota.js';
import { createStoreOperations } from './operations.js';
import { createDiskFullness, isDiskFull, type DiskFullness } from './disk-full.js';
import { createRoutes } from './routes.js';
import { createSecretsRepo } from './secrets.js';
import { resolveSecretsKey } from './secrets-key.js';
import { createSseHub, type EventFeed, type SseHub } from './sse.js';
import { dispatch, listen, startPruning, startRetention, storeMetrics } from './server-util.js';

/** Options of `createStore`: the store group of Config plus a logger and two tuning knobs. */
export type StoreOptions = Pick<
  Config,
  | 'host'
  | 'port'
  | 'dataDir'
  | 'maxBodyBytes'
  | 'authSecret'
  | 'adminKey'
  | 'secretsKey'
  | 'pingIntervalMs'
  | 'eventRetention'
> &
  Partial<
    Pick<
      Config,
      | 'authMint'
      | 'embedUrl'
      | 'embedCommand'
      | 'db'
      | 'dbPoolSize'
      | 'dbStatementTimeoutMs'
      | 'dbLockTimeoutMs'
      | 'dbIdleInTransactionTimeoutMs'
      | 'dbKeepaliveMs'
      | 'agentQuotaRecords'
      | 'agentQuotaBytes'
      | 'agentId'
    >
  > & {
    /** Writer identities no quota counts besides `agentId` (the runner's own). */
    agentQuotaExempt?: readonly string[];
    /** An embedder given in code (tests, embedding hosts); wins over embedUrl/embedCommand. */
    embedder?: Embedder;
    logger: Logger;
    /** Unsent bytes after which a live SSE consumer is disconnected; default max(8 MiB, 4 × maxBodyBytes). */
    sseBufferCapBytes?: number;
    /** Interval of the expired-breadcrumb sweep; default 30 s. */
    pruneIntervalMs?: number;
    /** Key of the lease routes (`X-Lease-Key`); unset: no lease routes, runners use breadcrumb claims. */
    leaseKey?: string | undefined;
    /** Retention of the runner's finished records (retention.ts); 0 or unset: kept forever. */
    retentionMs?: number;
    /** Retention of audit-bearing records; 0 or unset: kept forever. */
    auditRetentionMs?: number;
    /** Retention of agents' own records (retention.ts); 0 or unset: kept forever. */
    agentRetentionMs?: number;
    /** Commit writes that arrive together in one transaction (default true; false for A/B benches). */
    groupCommit?: boolean;
    /** SQLite: how long a written row waits to be indexed for search (fts-index.ts; default FTS_DELAY_MS). */
    searchIndexDelayMs?: number;
  };

/** A running store. */
export interface Store {
  /** `http://host:port` with the real port. */
  url: string;
  port: number;
  /** The in-process endpoint (same calls and semantics as the HTTP routes, no sockets, no JSON). */
  local: LocalEndpoint;
  /** Counters of the write path (transactions, writes, time inside them). */
  writeStats(): WriteStats;
  /** The retention sweeper (runs every pruneIntervalMs, or a quarter of the retention) and the database's size. */
  retention: Retention;
  /** Resolves once no breadcrumb is waiting to be embedded (immediately without an embedder). */
  embeddingsIdle(): Promise<void>;
  /** Ends SSE streams, stops the server, closes the database. Idempotent. */
  close(): Promise<void>;
}

const CLOSE_GRACE_MS = 2000;

// The PostgreSQL pool size and session settings of `options` (the defaults where unset).
function pgConnection(options: StoreOptions): { poolSize: number; session: PgSession } {
  const d = DEFAULT_PG_SESSION;
  return {
    poolSize: options.dbPoolSize ?? 10,
    session: {
      statementTimeoutMs: options.dbStatementTimeoutMs ?? d.statementTimeoutMs,
      lockTimeoutMs: options.dbLockTimeoutMs ?? d.lockTimeoutMs,
      idleInTransactionTimeoutMs: options.dbIdleInTransactionTimeoutMs ?? d.idleInTransactionTimeoutMs,
      keepaliveMs: options.dbKeepaliveMs ?? d.keepaliveMs,
    },
  };
}

// The HTTP answer to a failed request (logged unless it is an HttpError).
function answerOf(
  error: unknown,
  classify: (error: unknown) => HttpError | undefined,
  logger: Logger,
  req: IncomingMessage,
): HttpError {
  if (error instanceof HttpError) return error;
  const known = classify(error);
  const where = { method: req.method, path: req.url?.split('?')[0] };
  if (known?.status === 503)
    logger.warn('store request failed: the database is unreachable', { ...where, error: coerceError(error).message });
  if (known) return known;
  logger.error('store request failed', { ...where, error: coerceError(error) });
  return new HttpError(500, 'internal', 'internal store error');
}

// The answer to a failure that is not an HttpError: 507 on a full disk, 503 when PostgreSQL is unreachable.
function failureOf(pg: PgBackend | undefined, fullness: DiskFullness): (error: unknown) => HttpError | undefined {
  return (error) => {
    if (isDiskFull(error)) return fullness.refuse(error);
    if (pg && isUnavailable(error))
      return new HttpError(503, 'unavailable', "the store's database is unreachable; retry shortly");
    return undefined;
  };
}

/** Starts the store; resolves once it accepts connections. Throws RunnerError(config.invalid) on startup problems. */
export async function createStore(options: StoreOptions): Promise<Store> {
  const { host, logger } = options;
  if (!isLoopbackHost(host) && options.authSecret === undefined) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `refusing to serve the store on non-loopback host "${host}" without authSecret (set --auth-secret, or bind to 127.0.0.1)`,
    );
  }
  for (const secret of [options.authSecret, options.adminKey, options.secretsKey, options.leaseKey])
    if (secret) logger.redact(secret);

  const pgUrl = options.db !== undefined && options.db !== '' ? options.db : undefined;
  if (pgUrl !== undefined && !isPostgresUrl(pgUrl)) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `db must be a postgres:// or postgresql:// URL, got ${JSON.stringify(pgUrl.split('@').pop())}`,
    );
  }
  if (pgUrl !== undefined && options.secretsKey === undefined) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      'a PostgreSQL store needs --secrets-key (every replica must encrypt and decrypt secrets with the same key)',
    );
  }
  // A malformed configured key fails before anything touches the disk.
  const configuredKey =
    options.secretsKey === undefined
      ? undefined
      : resolveSecretsKey({ secretsKey: options.secretsKey, dataDir: options.dataDir, logger });
  const db: Db | undefined = pgUrl === undefined ? openDatabase(options.dataDir) : undefined;
  const checkpointer =
    db === undefined || options.dataDir === ':memory:'
      ? undefined
      : startCheckpointer({ file: db.name, intervalMs: CHECKPOINT_INTERVAL_MS, logger });
  let pg: PgBackend | undefined;
  let server: Server;
  let sse: SseHub;
  let stopPrune: () => void = () => {};
  let reads: BreadcrumbReads | undefined;
  let writer: BreadcrumbWrites | undefined;
  let searchIndex: SearchIndex | undefined;
  let retention: Retention | undefined;
  let retentionStorage: RetentionStorage | undefined;
  let stopRetention: () => void = () => {};
  let embeddings: EmbeddingQueue | undefined;
  let local: ((url: string) => LocalEndpoint) | undefined;
  let inflight = 0;
  const fullness = createDiskFullness(logger);
  let idle: (() => void) | undefined;
  let state: 'RUNNING' | 'CLOSING' | 'CLOSED' = 'RUNNING';
  const sockets = new Set<Socket>();
  try {
    const key = configuredKey ?? resolveSecretsKey({ secretsKey: undefined, dataDir: options.dataDir, logger });
    const embedder = options.embedder ?? embedderFromConfig(options);
    const quota = quotaOf(options);
    let log: EventFeed;
    let writes: WritesPort;
    let readsPort: ReadsPort;
    let registry: RegistryPort;
    let secrets: SecretsPort;
    let search: SearchPort;
    let leases: LeasesPort;
    let sqliteLeases: Leases | undefined;
    if (db === undefined) {
      pg = await openPgBackend({
        url: pgUrl as string,
        ...pgConnection(options),
        secretsKey: key,
        eventRetention: options.eventRetention,
        embedder,
        logger,
        quota,
      });
      ({ log, writes, reads: readsPort, registry, secrets, search, leases } = pg);
      embeddings = pg.embeddings;
      retentionStorage = pg.retention;
    } else {
      const sqliteLog = createEventLog(db, options.eventRetention);
      embeddings = embedder ? createEmbeddingQueue(sqliteVectors(db), embedder, logger) : undefined;
      const queue = embeddings;
      searchIndex = createSearchIndex(db, logger, options.searchIndexDelayMs);
      const sqliteWrites = createBreadcrumbWrites(
        db,
        sqliteLog,
        searchIndex,
        queue ? (id, version, text) => queue.schedule(id, version, text) : undefined,
        { groupCommit: options.groupCommit ?? true, quota },
      );
      writer = sqliteWrites;
      writes = sqliteWrites;
      reads = createBreadcrumbReads(db);
      readsPort = reads;
      registry = createRegistry(db);
      secrets = createSecretsRepo(db, key);
      search = createBreadcrumbSearch({ db, reads, index: searchIndex, embedder, logger });
      log = sqliteLog;
      sqliteLeases = createLeases(db, Date.now, sqliteWrites.defer);
      leases = sqliteLeases;
    }
    await registry.ensureTenant(DEFAULT_OWNER_ID, 'Default Tenant');
    sse = createSseHub({
      log,
      logger,
      pingIntervalMs: options.pingIntervalMs,
      bufferCapBytes: options.sseBufferCapBytes ?? Math.max(8 * 1024 * 1024, 4 * options.maxBodyBytes),
    });
    const auth = createStoreAuth({
      authSecret: options.authSecret,
      adminKey: options.adminKey,
      mintMode: options.authMint ?? 'admin-key',
      onMint: async (ownerId, agentId, roles) => await registry.upsertAgent(ownerId, agentId, roles),
    });
    if (auth.enabled && options.authMint === 'open') {
      logger.warn(
        'OPEN TOKEN MINTING: anyone who can reach this port can mint a token for any owner (upstream-compatible mode, --auth-mint open)',
        { host },
      );
    }
    if (embedder) logger.info('search embeds text with the configured embedder', { embedder: embedder.describe });
    const hub = sse;
    // Leases (the runner's claims without breadcrumbs): a table of either backend, behind the lease key.
    const gate = createLeaseGate(options.leaseKey);
    const classify = failureOf(pg, fullness);
    const ops = createStoreOperations({
      auth,
      writes,
      logger,
      reads: readsPort,
      secrets,
      search,
      startedMs: Date.now(),
      streams: () => hub.count(),
      leases: gate.enabled,
      degraded: () => fullness.reason(),
    });
    const leaseGate = (header: string | string[] | undefined): void => gate.check(header);
    const kept = createRetention(
      retentionStorage ?? sqliteRetentionStorage(db as Db, writer as BreadcrumbWrites, sqliteLeases as Leases),
      {
        retentionMs: options.retentionMs ?? 0,
        auditRetentionMs: options.auditRetentionMs ?? 0,
        agentRetentionMs: options.agentRetentionMs ?? 0,
        exempt: quota.exempt,
      },
    );
    retention = kept;
    // A short retention is swept more often (a quarter of it, at least every second), so records
    // never outlive it by much more than that.
    const retentionEvery = Math.min(
      options.pruneIntervalMs ?? 30_000,
      Math.max(1000, Math.floor((options.retentionMs || Number.MAX_SAFE_INTEGER) / 4)),
    );
    stopRetention = startRetention(kept, retentionEvery, logger);
    const statsOfWrites = writer;
    const metrics = async (): Promise<string> => {
      await kept.measure();
      const lease = { count: await leases.count(), writes: await leases.writes() };
      return storeMetrics(statsOfWrites, kept, lease, fullness);
    };
    const routes = createRoutes({ auth, ops, writes, sse, registry, leases, leaseGate, metrics });
    local = (url) =>
      createLocalEndpoint({
        url,
        auth,
        ops,
        sse: hub,
        running: () => state === 'RUNNING',
        leases,
        leaseGate,
        classify,
        wrote: () => fullness.wrote(),
      });
    stopPrune = startPruning(() => writes.pruneExpired(), options.pruneIntervalMs ?? 30_000, logger);
    const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
      if (state !== 'RUNNING') {
        res.shouldKeepAlive = false;
        sendError(res, new HttpError(503, 'unavailable', 'the store is shutting down'));
        return;
      }
      inflight++;
      try {
        await dispatch(routes, auth, req, res, options.maxBodyBytes);
        if (req.method !== 'GET' && res.statusCode < 300) fullness.wrote();
      } catch (error) {
        sendError(res, answerOf(error, classify, logger, req));
      } finally {
        if (--inflight === 0 && idle) idle();
      }
    };
    server = createServer({ noDelay: true, keepAliveTimeout: 65_000 }, (req, res) => void handle(req, res));
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    await listen(server, options.port, host);
  } catch (error) {
    stopPrune();
    stopRetention();
    embeddings?.close();
    reads?.close();
    await checkpointer?.stop();
    db?.close();
    await pg?.close();
    throw error;
  }

  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info('store listening', {
    url,
    ...(pg ? { db: 'postgres' } : { dataDir: options.dataDir }),
    auth: options.authSecret !== undefined,
  });

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    state = 'CLOSING';
    stopPrune();
    stopRetention();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    sse.closeAll();
    server.closeIdleConnections();
    // Clients may still connect while the listener shuts (a reconnecting stream, a keep-alive pool
    // opening a socket): keep closing idle connections until the grace period forces the rest.
    // A socket that never sent a byte is not "idle" to node:http; it holds close() until the grace.
    const sweep = setInterval(() => {
      server.closeIdleConnections();
      for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy();
    }, 50);
    const timer = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
    await closed;
    clearInterval(sweep);
    clearTimeout(timer);
    // a lease's finish may be waiting to share a commit: nothing else will come to share it now
    writer?.flush();
    if (inflight > 0) await new Promise<void>((resolve) => (idle = resolve));
    embeddings?.close();
    await embeddings?.idle();
    searchIndex?.close();
    reads?.close();
    await checkpointer?.stop();
    db?.close();
    await pg?.close();
    state = 'CLOSED';
    logger.info('store closed', { url });
  };
  const endpoint = (local as (url: string) => LocalEndpoint)(url);
  const statsOf = writer as BreadcrumbWrites;
  return {
    url,
    port,
    local: endpoint,
    writeStats: () => statsOf.stats(),
    retention: retention as Retention,
    embeddingsIdle: () => embeddings?.idle() ?? Promise.resolve(),
    close: () => (closing ??= close()),
  };
}
