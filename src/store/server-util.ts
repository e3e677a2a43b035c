// Plumbing of the store's HTTP server: request dispatch over the route table (404/405, auth and
// role checks), listening with clear startup errors, and the periodic expiry sweep.

import type { DiskFullness } from './disk-full.js';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, RunnerError, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { ROLES, type Principal, type StoreAuth } from './auth.js';
import { HttpError } from './http-util.js';
import type { BreadcrumbWrites } from './breadcrumb-writes.js';
import type { Retention } from './retention.js';
import { bodyReader, type Route } from './routes.js';

const OPEN: Principal = { ownerId: '', agentId: null, roles: ROLES, scoped: false };

/** Routes one request: finds the route and method, authenticates and authorizes, runs the handler. */
export async function dispatch(
  routes: Route[],
  auth: StoreAuth,
  req: IncomingMessage,
  res: ServerResponse,
  maxBodyBytes: number,
): Promise<void> {
  const raw = req.url ?? '/';
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q === -1 ? '' : raw.slice(q + 1));
  let match: RegExpExecArray | null = null;
  let route: Route | undefined;
  for (const candidate of routes) {
    match = candidate.pattern.exec(path);
    if (match) {
      route = candidate;
      break;
    }
  }
  if (!route || !match) throw new HttpError(404, 'route_not_found', `no route ${JSON.stringify(path)}`);
  const method = route.methods[req.method ?? ''];
  if (!method) {
    const allow = Object.keys(route.methods).join(', ');
    throw new HttpError(
      405,
      'method_not_allowed',
      `method ${req.method} is not allowed on ${path} (allowed: ${allow})`,
      undefined,
      { Allow: allow },
    );
  }
  let params: string[];
  try {
    params = match.slice(1).map((part) => decodeURIComponent(part));
  } catch {
    throw new HttpError(404, 'not_found', `malformed path ${JSON.stringify(path)}`);
  }
  let principal = OPEN;
  if (method.need !== null) {
    principal = await auth.authenticate(req, path === '/events/stream' ? query : null);
    auth.authorize(principal, method.need);
  }
  await method.handle({ req, res, query, params, principal, body: bodyReader(req, res, maxBodyBytes) });
}

/** Listens on host:port; resolves once accepting, or throws config.invalid naming the address. */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      const where = `${host}:${port}`;
      const why =
        error.code === 'EADDRINUSE'
          ? `port ${port} on ${host} is already in use`
          : error.code === 'EACCES'
            ? `not permitted to listen on ${where}`
            : error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND'
              ? `address ${host} is not available on this machine`
              : `cannot listen on ${where}: ${error.message}`;
      reject(new RunnerError(ErrorCode.ConfigInvalid, why, { cause: error }));
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/** Listens like `listen` and resolves with the server's URL (`http://HOST:PORT`, IPv6 in brackets). */
export async function listenUrl(server: Server, port: number, host: string): Promise<string> {
  await listen(server, port, host);
  const address = server.address() as AddressInfo;
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

/** Sweeps expired breadcrumbs now and every `intervalMs`; returns the stop function. */
export function startPruning(prune: () => number | Promise<number>, intervalMs: number, logger: Logger): () => void {
  const run = async (): Promise<void> => {
    try {
      const removed = await prune();
      if (removed > 0) logger.info('expired breadcrumbs pruned', { removed });
    } catch (error) {
      logger.error('expiry sweep failed', { error: coerceError(error) });
    }
  };
  void run();
  const timer = setInterval(() => void run(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Runs the retention sweep now and every `intervalMs` (never two at once); returns the stop function.
 * A sweep works in paced batches and may still be running when the store closes its database: its
 * failure after the stop is the close, not a fault (logged at debug, not as an error).
 */
export function startRetention(retention: Retention, intervalMs: number, logger: Logger): () => void {
  let running = false;
  let stopped = false;
  const run = async (): Promise<void> => {
    if (running || stopped) return;
    running = true;
    try {
      const swept = await retention.sweep();
      if (swept.removed > 0 || swept.leases > 0 || swept.keys > 0) logger.info('retention swept', { ...swept });
    } catch (error) {
      if (stopped) logger.debug('retention sweep ended by the store closing', { error: coerceError(error) });
      else logger.error('retention sweep failed', { error: coerceError(error) });
    } finally {
      running = false;
    }
  };
  void run();
  const timer = setInterval(() => void run(), intervalMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** `GET /metrics` of the store: Prometheus text with the database size, writes and retention. */
export function storeMetrics(
  writes: BreadcrumbWrites | undefined,
  retention: Retention,
  leases: { count: number; writes: number },
  full: Pick<DiskFullness, 'reason' | 'refusedTotal'>,
): string {
  const sizes = retention.sizes();
  const lines: string[] = [];
  const metric = (name: string, type: 'gauge' | 'counter', help: string, value: number): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
  };
  metric(
    'tools_runner_store_db_bytes',
    'gauge',
    'Size of the database: the SQLite file (pages in use and free), or pg_database_size on PostgreSQL.',
    sizes.dbBytes,
  );
  metric(
    'tools_runner_store_db_free_bytes',
    'gauge',
    'Free pages of the database file not yet given back (incremental vacuum).',
    sizes.freeBytes,
  );
  metric('tools_runner_store_wal_bytes', 'gauge', 'Size of the write-ahead log.', sizes.walBytes);
  metric('tools_runner_store_leases', 'gauge', 'Rows of the lease table.', leases.count);
  metric(
    'tools_runner_store_full',
    'gauge',
    'Whether the last write was refused for lack of disk space (1) until a write commits again (0).',
    full.reason() === undefined ? 0 : 1,
  );
  metric(
    'tools_runner_store_full_refusals_total',
    'counter',
    'Writes refused with 507 store.full (disk full) since the store started.',
    full.refusedTotal(),
  );
  metric(
    'tools_runner_store_lease_writes_total',
    'counter',
    'Lease writes that were a small transaction of their own (acquire, renew, release; finish when the store does not group its commits), no event. A grouped finish counts in tools_runner_store_writes_total.',
    leases.writes,
  );
  metric(
    'tools_runner_store_retention_removed_total',
    'counter',
    'Records removed by retention since the store started.',
    retention.removedTotal(),
  );
  if (!writes) return lines.join('\n') + '\n';
  const stats = writes.stats();
  metric(
    'tools_runner_store_write_transactions_total',
    'counter',
    'Write transactions committed (group commit shares one among writes).',
    stats.transactions,
  );
  metric(
    'tools_runner_store_writes_total',
    'counter',
    'Breadcrumb writes (create, update, delete) committed or refused.',
    stats.writes,
  );
  return lines.join('\n') + '\n';
}
