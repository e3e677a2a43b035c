// The two transports of the store client, for contract tests that must hold for both: HTTP to the
// store's port, and in-process through the embedded store's local endpoint.
import { createStoreClient, type StoreClient, type StoreClientOptions } from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import type { Store } from '../../src/store/index.js';
import { onCleanup } from '../store/helpers.js';

/** Both transports, as `describe.each` rows. */
export const TRANSPORTS = ['http', 'in-process'] as const;
export type Transport = (typeof TRANSPORTS)[number];

/** A client of `store` over `transport`, closed after the test. */
export function connect(transport: Transport, store: Store, options: Partial<StoreClientOptions> = {}): StoreClient {
  const client = createStoreClient({
    baseUrl: store.url,
    logger: silentLogger(),
    ...(transport === 'in-process' ? { local: store.local } : {}),
    ...options,
  });
  onCleanup(() => client.close());
  return client;
}
