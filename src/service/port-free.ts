// Checks that the embedded store's port is free before the store is opened: opening it prunes the
// data dir (event log, retention), which must not happen to a running instance on the same port.

import { createServer } from 'node:http';
import { listen } from '../store/server-util.js';

/** Throws config.invalid ("port P on H is already in use") when nothing could listen on host:port (0: free). */
export async function portFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await listen(probe, port, host);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}
