// `tools-runner store`: runs the embedded RCRT-compatible breadcrumb store on its own until
// SIGTERM/SIGINT. Prints exactly one stdout line, `store listening on http://HOST:PORT`, once the
// port accepts connections (so scripts and tests can wait for it); startup problems are one line
// on stderr and a non-zero exit.

import { coerceError } from '../../errors.js';
import { portFree } from '../../service/port-free.js';
import { createStore } from '../../store/index.js';
import { EXIT, type CommandContext } from '../command.js';
import { applyTieringFlags } from '../v8-tiering.js';

/** Runs `tools-runner store` until SIGTERM/SIGINT. */
export async function run({ config, positionals, logger, out, err, signal }: CommandContext): Promise<number> {
  if (positionals.length > 0) {
    err(
      `tools-runner store: unexpected argument ${JSON.stringify(positionals[0])} (usage: tools-runner store [--host H] [--port P] [--data-dir D])`,
    );
    return EXIT.Usage;
  }
  let store;
  try {
    await portFree(config.host, config.port);
    store = await createStore({
      host: config.host,
      port: config.port,
      dataDir: config.dataDir,
      db: config.db,
      dbPoolSize: config.dbPoolSize,
      dbStatementTimeoutMs: config.dbStatementTimeoutMs,
      dbLockTimeoutMs: config.dbLockTimeoutMs,
      dbIdleInTransactionTimeoutMs: config.dbIdleInTransactionTimeoutMs,
      dbKeepaliveMs: config.dbKeepaliveMs,
      maxBodyBytes: config.maxBodyBytes,
      authSecret: config.authSecret,
      adminKey: config.adminKey,
      secretsKey: config.secretsKey,
      pingIntervalMs: config.pingIntervalMs,
      eventRetention: config.eventRetention,
      authMint: config.authMint,
      embedUrl: config.embedUrl,
      embedCommand: config.embedCommand,
      leaseKey: config.leaseKey,
      groupCommit: config.groupCommit,
      retentionMs: config.retentionMs,
      auditRetentionMs: config.auditRetentionMs,
      agentRetentionMs: config.agentRetentionMs,
      agentQuotaRecords: config.agentQuotaRecords,
      agentQuotaBytes: config.agentQuotaBytes,
      agentQuotaExempt: config.agentQuotaExempt,
      agentId: config.agentId,
      logger: logger.child({ component: 'store' }),
    });
  } catch (error) {
    err(`tools-runner store: ${coerceError(error).message}`);
    return EXIT.Failed;
  }
  out(`store listening on ${store.url}`);
  applyTieringFlags();
  if (!signal.aborted)
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  await store.close();
  return EXIT.Ok;
}
