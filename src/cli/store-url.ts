// Where CLI client commands (call, bootstrap, export) find the store: --store-url, else the local
// embedded store's address from --host/--port.

import type { Config } from '../config/index.js';

/** The store base URL a client command should talk to. */
export function clientStoreUrl(config: Config): string {
  if (config.storeUrl) return config.storeUrl;
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host === '::' ? '[::1]' : config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${config.port}`;
}
