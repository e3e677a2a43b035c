// CLI client commands (call, bootstrap, export) reach the store: its URL (--store-url, else the local
// embedded store's address from --host/--port) and a client with the right credentials.

import { createStoreClient, type StoreClient } from '../breadcrumbs/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';

/** The store base URL a client command should talk to. */
export function clientStoreUrl(config: Config): string {
  if (config.storeUrl) return config.storeUrl;
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host === '::' ? '[::1]' : config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${config.port}`;
}

/**
 * The store client of a CLI command: `--store-token` when given, else a token minted for `agentId`
 * (with `--admin-key` when the store requires it).
 */
export function cliStoreClient(config: Config, logger: Logger, agentId: string, roles: string[]): StoreClient {
  return createStoreClient({
    baseUrl: clientStoreUrl(config),
    logger,
    auth: config.storeToken
      ? { token: config.storeToken }
      : { mint: { owner_id: config.ownerId, agent_id: agentId, roles, ...(config.adminKey ? { adminKey: config.adminKey } : {}) } },
  });
}
