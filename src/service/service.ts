// The composition root, wiring only: build the parts (build.ts), route the store's events into the
// request path (src/request/events.ts), start serving, and stop; it owns the lifecycle.
//
// Lifecycle: INITIALIZED -> RUNNING -> DRAINING -> STOPPED (a failed startup throws; no service exists).
// Drain (SIGTERM): intake stops (no new work is taken; the store keeps it), queued jobs are dropped
// unclaimed, running jobs finish within the grace period or are aborted and their claims released,
// then the sandbox, admin port and embedded store close.

import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { openEventStream } from '../breadcrumbs/index.js';
import type { Config } from '../config/index.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { createEventRouter } from '../request/events.js';
import { createIgnoredRequestLog } from '../request/ignored-requests.js';
import { startAdminServer } from './admin-server.js';
import type { ServiceExtension } from '../extension.js';

export type { ExtensionContext, ServiceExtension } from '../extension.js';
import { buildService, type Parts } from './build.js';
import { portFree } from './port-free.js';
import { createUncaughtGuard } from './uncaught-guard.js';

/** Where the service is in its life (see the module comment). */
export type Lifecycle = 'INITIALIZED' | 'RUNNING' | 'DRAINING' | 'STOPPED';

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  /** Human-facing lines (`store listening on ...`, `runner ready`). */
  out?: (line: string) => void;
  /** Extra handlers for store events (bootstrap and MCP plug in here). */
  extensions?: ServiceExtension[];
  /** Aborted on the first SIGTERM/SIGINT: while starting (waiting for the store), startup gives up at once. */
  signal?: AbortSignal;
}

export interface Service {
  readonly storeUrl: string;
  readonly adminUrl: string | undefined;
  readonly replica: string;
  lifecycle(): Lifecycle;
  /** Drains and stops; idempotent. */
  stop(): Promise<void>;
}

/** Starts the whole service. Throws RunnerError (config.invalid / dependency.unavailable) on startup failure. */
export async function startService(options: ServiceOptions): Promise<Service> {
  const replica = `${options.config.agentId}@${hostname()}#${process.pid}-${randomBytes(3).toString('hex')}`;
  const log = options.logger.child({ replica });
  const cleanups: Array<{ step: string; run: () => Promise<void> }> = [];
  const runCleanups = async (): Promise<void> => {
    for (const { step, run } of cleanups.splice(0).reverse()) {
      const startedAt = performance.now();
      await run().catch((error: unknown) => log.warn('shutdown step failed', { step, error }));
      log.debug('shutdown step finished', { step, durationMs: Math.round(performance.now() - startedAt) });
    }
  };
  const onStop = (step: string, run: () => Promise<void>): void => void cleanups.push({ step, run });
  const intakeController = new AbortController();
  const hardStop = new AbortController();
  // Every in-flight store call, run and wait of the service listens to these two: no leak past 10.
  setMaxListeners(0, intakeController.signal, hardStop.signal);
  // A signal while the parts are built (waiting for the store) gives up at once; later, the caller
  // stops the started service (a drain).
  let built = false;
  const interrupted = (): void => {
    if (!built) intakeController.abort(new Error('interrupted while starting'));
  };
  options.signal?.addEventListener('abort', interrupted, { once: true });
  try {
    // A taken port fails before the store is opened (port-free.ts).
    if (!options.config.storeUrl) await portFree(options.config.host, options.config.port);
    const parts = await buildService(options, { replica, log, onStop, intakeController, hardStop });
    built = true;
    options.signal?.removeEventListener('abort', interrupted);
    const firstConnection = routeEvents(parts);
    // Until the stream is up (at most one scan interval), catch-up scans stand in for it.
    await Promise.race([
      firstConnection,
      sleep(parts.config.scanIntervalMs, undefined, { signal: intakeController.signal, ref: false }).catch(
        () => undefined,
      ),
    ]);
    if (!parts.state.streamConnected) {
      parts.state.streamLate = true;
      log.warn('event stream not connected yet; relying on catch-up scans until it is');
    }
    await startServing(parts);
    let stopping: Promise<void> | undefined;
    return {
      storeUrl: parts.storeUrl,
      get adminUrl() {
        return parts.state.admin?.url;
      },
      replica,
      lifecycle: () => parts.state.lifecycle,
      stop: () => (stopping ??= stopService(parts, runCleanups)),
    };
  } catch (error) {
    intakeController.abort();
    hardStop.abort();
    await runCleanups();
    throw coerceError(error);
  }
}

/** Opens the event stream and routes every event (src/request/events.ts); resolves on the first connection. */
function routeEvents(parts: Parts): Promise<void> {
  const { client, intake, catalog, extensions, metrics, log, state } = parts;
  const onEvent = createEventRouter({
    workspace: parts.config.workspace,
    logger: log,
    intake,
    catalog,
    others: () => (parts.rap ? [...extensions, parts.rap] : extensions),
    ignored: createIgnoredRequestLog({
      logger: log.child({ component: 'events' }),
      workspace: parts.config.workspace,
      count: (reason) => metrics.recordIgnored(reason),
    }),
  });
  return new Promise<void>((resolve) => {
    openEventStream({
      client,
      signal: parts.intakeController.signal,
      logger: log.child({ component: 'events' }),
      onEvent,
      onConnected: ({ reconnect }) => {
        state.streamConnected = true;
        resolve();
        // A first connection after startup went on without it: catch up on what it missed.
        const late = !reconnect && state.streamLate;
        if (reconnect) metrics.recordReconnect();
        if (reconnect || late) {
          log.info(reconnect ? 'event stream reconnected, catching up' : 'event stream connected late, catching up');
          void intake.scan(false);
          catalog.load().catch((error: unknown) => log.warn('catalog reload failed', { error }));
          // Extensions catch up only once started (their start runs its own first scan).
          if (state.lifecycle === 'RUNNING') for (const extension of extensions) extension.onReconnect?.();
        }
      },
    });
  });
}

/** Names at start each agent-written tool that asks for a secret neither scoped to it nor shared with it. */
async function warnUnsharedSecrets(parts: Parts): Promise<void> {
  for (const entry of parts.catalog.entries()) {
    const route = parts.catalog.resolve(entry.name);
    if (route?.kind !== 'code' || route.owner === 'operator' || route.tool.requiredSecrets.length === 0) continue;
    const tool = route.tool.name;
    const secrets = await parts.secrets.unshared(route.tool.requiredSecrets, {
      tool,
      rid: 'start',
      definitionId: route.breadcrumbId,
    });
    if (secrets.length > 0)
      parts.log.warn('agent tool asks for secrets the operator has not shared with it', {
        tool,
        secrets,
        share: `--share-secrets "${secrets.map((name) => `${name}=${tool}`).join(';')}"`,
      });
  }
}

/** Starts extensions, loads the catalog, prewarms, begins intake and serves the admin port; ends RUNNING. */
async function startServing(parts: Parts): Promise<void> {
  const { config, log, client, keys, catalog, sandbox, extensions, intake, onStop, state, rap } = parts;
  for (const extension of extensions) {
    await extension.start({
      client,
      keys,
      catalog,
      sandbox,
      config,
      logger: log.child({ component: extension.name }),
      replica: parts.replica,
      signal: parts.intakeController.signal,
      stamper: parts.stamper,
      secrets: parts.secrets,
      validator: parts.validator,
      pinOperatorTool: (pin) => void parts.operatorTools.set(pin.tool.name, pin),
      live: (message) => state.admin?.broadcast({ ts: new Date().toISOString(), replica: parts.replica, ...message }),
      metrics: parts.metrics.registry,
    });
    if (extension.stop) onStop(extension.name, () => extension.stop!());
  }
  await catalog.load();
  await warnUnsharedSecrets(parts).catch((error: unknown) => log.warn('secret sharing check failed', { error }));
  if (rap) {
    onStop('rap', () => rap.stop());
    await rap.start();
  }
  // One warm process per permission set of the catalog's code tools: first calls skip a cold spawn.
  sandbox.prewarm?.(
    catalog.entries().flatMap((entry) => {
      const route = catalog.resolve(entry.name);
      return route?.kind === 'code' ? [route.tool] : [];
    }),
  );
  await parts.publisher.flush();
  intake.start(parts.intakeController.signal);
  const catalogTimer = setInterval(() => {
    catalog.load().catch((error: unknown) => log.warn('catalog reload failed', { error }));
  }, config.scanIntervalMs);
  catalogTimer.unref();
  onStop('catalog timer', async () => clearInterval(catalogTimer));
  void intake.scan(true);

  if (config.adminPort >= 0) {
    const admin = await startAdminServer({
      host: config.adminHost,
      port: config.adminPort,
      logger: log.child({ component: 'admin' }),
      metrics: parts.metrics,
      routes: new Map(extensions.flatMap((extension) => [...(extension.adminRoutes?.() ?? [])])),
      health: parts.health,
      ...(config.adminToken !== undefined ? { adminToken: config.adminToken } : {}),
      adminHosts: config.adminHosts,
      console: parts.consoleApi,
    });
    state.admin = admin;
    onStop('admin port', () => admin.close());
    log.info('admin port listening', { url: admin.url });
  }

  // Last line of defence: a fault escaping some callback is logged and counted, never the end of
  // the service (every known path handles its own errors; this catches the unknown ones).
  const uninstall = createUncaughtGuard({ logger: log, count: () => parts.metrics.recordUncaught() }).install();
  onStop('uncaught-error guard', async () => uninstall());

  state.lifecycle = 'RUNNING';
  parts.markReady();
  log.info('runner ready', {
    store: parts.storeUrl,
    storeTransport: parts.client.transport,
    workspace: config.workspace,
    tools: catalog.entries().length,
  });
  parts.out('runner ready');
}

/** Drains (intake stops, running jobs get the grace period) and runs the shutdown steps. */
async function stopService(parts: Parts, runCleanups: () => Promise<void>): Promise<void> {
  const { config, log, queue, state } = parts;
  state.lifecycle = 'DRAINING';
  log.info('draining', { graceMs: config.drainGraceMs, ...queue.stats() });
  parts.intakeController.abort(new Error('service stopping'));
  const drained = await queue.drain(config.drainGraceMs);
  log.info('drained', drained);
  parts.hardStop.abort(new Error('service stopped'));
  await runCleanups();
  state.lifecycle = 'STOPPED';
}
