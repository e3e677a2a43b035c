// The embedded store of `start` (no --store-url): on the runner's thread (createStore), or with
// --store-thread on its own worker thread (store/thread.ts). Either way the service sees the same
// few things: its URL, the in-process endpoint, the database's size for /metrics, and close().

import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';
import { createStore, createStoreThread, type LocalEndpoint } from '../store/index.js';
import { isPostgresUrl } from '../store/pg/index.js';

export interface EmbeddedStore {
  url: string;
  local: LocalEndpoint;
  /** SQLite's file sizes (absent on PostgreSQL). */
  sizes?: () => { dbBytes: number; walBytes: number };
  close(): Promise<void>;
}

/** Starts the embedded store; `onDeath` is called if its thread dies while running (--store-thread only). */
export async function startEmbeddedStore(
  config: Config,
  leaseKey: string,
  logger: Logger,
  onDeath: (error: Error) => void,
): Promise<EmbeddedStore> {
  if (!config.storeThread) {
    const store = await createStore({ ...config, leaseKey, logger: logger.child({ component: 'store' }) });
    const retention = store.retention;
    return {
      url: store.url,
      local: store.local,
      ...(retention ? { sizes: () => retention.sizes() } : {}),
      close: () => store.close(),
    };
  }
  const thread = await createStoreThread(
    {
      options: {
        host: config.host,
        port: config.port,
        dataDir: config.dataDir,
        maxBodyBytes: config.maxBodyBytes,
        authSecret: config.authSecret,
        adminKey: config.adminKey,
        secretsKey: config.secretsKey,
        pingIntervalMs: config.pingIntervalMs,
        eventRetention: config.eventRetention,
        authMint: config.authMint,
        embedUrl: config.embedUrl,
        embedCommand: config.embedCommand,
        db: config.db,
        dbPoolSize: config.dbPoolSize,
        leaseKey,
        retentionMs: config.retentionMs,
        auditRetentionMs: config.auditRetentionMs,
        groupCommit: config.groupCommit,
      },
      log: {
        level: config.logLevel,
        format: config.logFormat === 'auto' ? (process.stderr.isTTY ? 'text' : 'json') : config.logFormat,
        bindings: { cmd: 'start', component: 'store', thread: 'store' },
      },
    },
    onDeath,
  );
  const sqlite = !(config.db !== undefined && isPostgresUrl(config.db));
  return {
    url: thread.url,
    local: thread.local,
    ...(sqlite ? { sizes: () => thread.sizes() ?? { dbBytes: 0, walBytes: 0 } } : {}),
    close: () => thread.close(),
  };
}
