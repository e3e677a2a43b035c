// The composition root: builds the runner (and the embedded store unless an external one is
// configured), wires the parts, and owns the lifecycle.
//
// Lifecycle: INITIALIZED -> RUNNING -> DRAINING -> STOPPED (a failed startup throws; no service exists).
// Drain (SIGTERM): intake stops (no new work is taken; the store keeps it), queued jobs are dropped
// unclaimed, running jobs finish within the grace period or are aborted and their claims released,
// then the sandbox, admin port and embedded store close.

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequestKeys, createStoreClient, openEventStream, type RequestKeys, type StoreClient } from '../breadcrumbs/index.js';
import type { StoreEvent } from '../breadcrumbs/messages.js';
import { createCatalog, type Catalog, type OperatorTool } from '../catalog/catalog.js';
import { createStamper, type Stamper } from '../catalog/deployment.js';
import { createCatalogPublisher, type CatalogPublisher } from '../catalog/publisher.js';
import { deriveKey, REQUEST_KEYS_PURPOSE, resolveRunnerKey } from '../catalog/runner-key.js';
import { hostEnvironment, type Config } from '../config/index.js';
import { createConsoleApi, type ConsoleApi } from '../console/api.js';
import { coerceError, ErrorCode, RunnerError } from '../errors.js';
import { createSchemaCache, executeHostTool, loadHostTools, publishHostTools, type HostTool } from '../legacy/index.js';
import type { Logger } from '../logger.js';
import { createJobQueue, type JobQueue } from '../queue/job-queue.js';
import { createRap, type Rap } from '../rap/index.js';
import { createEventRouter } from '../request/1-events.js';
import { createIntake, type Intake } from '../request/2-intake.js';
import { createClaimManager } from '../request/3-claims.js';
import { loadAnswerTagCutover } from '../request/3-cutover.js';
import { createCodeExecutor, createHostExecutor } from '../request/6-execute.js';
import { createResponder } from '../request/7-respond.js';
import { createRequestHandler } from '../request/handler.js';
import { createSandbox, type Sandbox } from '../sandbox/index.js';
import { createSchemaValidator, validateToolDefinition } from '../screen/index.js';
import { createStore } from '../store/index.js';
import { startAdminServer, type AdminRoute, type AdminServer } from './admin-server.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createSecretResolver, loadSecretsFile, type SecretResolver } from './secrets.js';

export type Lifecycle = 'INITIALIZED' | 'RUNNING' | 'DRAINING' | 'STOPPED';

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  /** Human-facing lines (`store listening on ...`, `runner ready`). */
  out?: (line: string) => void;
  /** Extra handlers for store events (tool authoring plugs in here). */
  extensions?: ServiceExtension[];
}

/** A part that joins the running service (e.g. tool creation, bootstrap). */
export interface ServiceExtension {
  name: string;
  start(ctx: ExtensionContext): Promise<void>;
  handleEvent?(event: StoreEvent): void;
  /** Called after the event stream reconnects (run a catch-up scan). */
  onReconnect?(): void;
  /** The store's copy of a pinned operator tool is missing or differs from its file. */
  onOperatorDrift?(name: string): void;
  stop?(): Promise<void>;
  /** Routes it serves on the admin port (path → handler), e.g. `/mcp`. */
  adminRoutes?(): ReadonlyMap<string, AdminRoute>;
}

export interface ExtensionContext {
  client: StoreClient;
  /** The runner's key derivation (Idempotency-Keys, answer tags). */
  keys: RequestKeys;
  catalog: Catalog;
  sandbox: Sandbox;
  config: Config;
  logger: Logger;
  replica: string;
  signal: AbortSignal;
  /** Signs what the runner deploys (deployment stamps). */
  stamper: Stamper;
  /** Pins an operator tool: the catalog runs only this definition under its name. */
  pinOperatorTool(pin: OperatorTool): void;
  secrets: SecretResolver;
}

export interface Service {
  readonly storeUrl: string;
  readonly adminUrl: string | undefined;
  readonly replica: string;
  lifecycle(): Lifecycle;
  /** Drains and stops; idempotent. */
  stop(): Promise<void>;
}

/** Everything a running service holds, built by buildService and wired by routeEvents/startServing. */
interface Parts {
  config: Config;
  log: Logger;
  out: (line: string) => void;
  replica: string;
  storeUrl: string;
  client: StoreClient;
  keys: RequestKeys;
  stamper: Stamper;
  sandbox: Sandbox;
  secrets: SecretResolver;
  catalog: Catalog;
  publisher: CatalogPublisher;
  queue: JobQueue;
  intake: Intake;
  metrics: Metrics;
  consoleApi: ConsoleApi;
  rap: Rap | undefined;
  extensions: ServiceExtension[];
  operatorTools: Map<string, OperatorTool>;
  /** Aborted when draining starts: intake and the event stream stop. */
  intakeController: AbortController;
  /** Aborted when the service must stop NOW. */
  hardStop: AbortController;
  /** Registers a shutdown step; steps run newest first. */
  onStop(step: string, run: () => Promise<void>): void;
  /** `streamLate`: startup went on before the stream's first connection. */
  state: { lifecycle: Lifecycle; streamConnected: boolean; streamLate: boolean; admin?: AdminServer };
  health(): { ok: boolean; [key: string]: unknown };
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
  try {
    const parts = await buildService(options, { replica, log, onStop, intakeController, hardStop });
    const firstConnection = routeEvents(parts);
    // Until the stream is up (at most one scan interval), catch-up scans stand in for it.
    await Promise.race([firstConnection, sleep(parts.config.scanIntervalMs, undefined, { signal: intakeController.signal, ref: false }).catch(() => undefined)]);
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

/** Builds and wires every part (store, client, sandbox, catalog, request path, RAP, console); nothing runs requests yet. */
async function buildService(
  options: ServiceOptions,
  base: { replica: string; log: Logger; onStop: Parts['onStop']; intakeController: AbortController; hardStop: AbortController },
): Promise<Parts> {
  const { config, logger } = options;
  const { replica, log, onStop, intakeController, hardStop } = base;
  const out = options.out ?? (() => {});
  const state: Parts['state'] = { lifecycle: 'INITIALIZED', streamConnected: false, streamLate: false };

  // First: a runner that cannot derive its keys must not touch the store.
  const runnerKey = resolveRunnerKey({ runnerSecret: config.runnerSecret, dataDir: config.dataDir, logger: log, storeUrl: config.storeUrl });
  log.info('runner keys derived', { source: runnerKey.source, ...(runnerKey.file ? { file: runnerKey.file } : {}) });
  const stamper = createStamper(runnerKey.key);
  const keys = createRequestKeys(deriveKey(runnerKey.master, REQUEST_KEYS_PURPOSE));

  let storeUrl = config.storeUrl;
  if (!storeUrl) {
    const store = await createStore({ ...config, logger: logger.child({ component: 'store' }) });
    onStop('store', () => store.close());
    storeUrl = store.url;
    out(`store listening on ${store.url}`);
  }

  const client = createStoreClient({
    baseUrl: storeUrl,
    logger: log.child({ component: 'client' }),
    auth: config.storeToken
      ? { token: config.storeToken }
      : { mint: { owner_id: config.ownerId, agent_id: config.agentId, roles: ['curator', 'emitter', 'subscriber'], ...(config.adminKey ? { adminKey: config.adminKey } : {}) } },
  });
  // Drop keep-alive sockets before the embedded store closes (it would wait for them).
  onStop('store client', async () => client.close());
  await waitForStore(client, log, config.storeWaitMs, intakeController.signal);

  // One schema validator (compiled-schema cache) for manifests, tool definitions, code tools and host tools alike.
  const validator = createSchemaValidator();
  const sandbox = await createSandbox({ config, logger: log.child({ component: 'sandbox' }) });
  onStop('sandbox', () => sandbox.close());

  let hostTools: HostTool[] = [];
  if (config.manifests.length > 0) {
    const loaded = await loadHostTools({ paths: config.manifests, grantedCapabilities: config.grantedCapabilities, logger: log.child({ component: 'legacy' }), validator });
    for (const error of loaded.errors) log.error('manifest rejected', { path: error.path, error: error.message });
    for (const denied of loaded.denied) log.warn('host tool denied', { ...denied });
    hostTools = loaded.tools;
    const published = await publishHostTools(client, hostTools, config.workspace, log.child({ component: 'legacy' }));
    log.info('host tools loaded', { tools: hostTools.map((t) => t.name), denied: loaded.denied.length, published: published.filter((p) => p.action !== 'unchanged').length });
  }

  const fileSecrets = config.secretsFile ? await loadSecretsFile(config.secretsFile, logger) : undefined;
  const secrets = createSecretResolver({ client, workspace: config.workspace, logger: log, ...(fileSecrets ? { fileSecrets } : {}) });

  let publish = (): void => {};
  const operatorTools = new Map<string, OperatorTool>();
  const extensions = options.extensions ?? [];
  // RAP (src/rap): remote toolsets join the host tools; created once the validator exists.
  let rap: Rap | undefined;
  const catalog = createCatalog({
    client,
    workspace: config.workspace,
    logger: log.child({ component: 'catalog' }),
    stamper,
    validate: (context, origin) => validateToolDefinition(context, { origin, config, validator }),
    operatorTools: () => operatorTools,
    hostTools: () => (rap ? rap.hostTools(hostTools) : hostTools),
    onChange: () => publish(),
    onOperatorDrift: (name) => {
      for (const extension of extensions) extension.onOperatorDrift?.(name);
    },
  });
  const publisher = createCatalogPublisher({
    client,
    keys,
    workspace: config.workspace,
    logger: log.child({ component: 'catalog' }),
    entries: () => catalog.entries(),
    rejected: () => catalog.rejected(),
  });
  publish = () => publisher.schedule();
  onStop('catalog publisher', () => publisher.close());

  const queue = createJobQueue({
    concurrency: config.concurrency,
    toolConcurrency: config.toolConcurrency,
    backlog: config.backlog,
    onJobError: (key, error) => log.error('job threw', { rid: key, error }),
  });
  const claims = createClaimManager({ client, workspace: config.workspace, holder: replica, ttlMs: config.claimTtlMs, keys, logger: log.child({ component: 'claims' }) });
  const responder = createResponder({ client, workspace: config.workspace, keys, logger: log.child({ component: 'responder' }) });

  const startedAt = Date.now();
  const health = (): { ok: boolean; [key: string]: unknown } => ({
    ok: state.lifecycle === 'RUNNING',
    status: state.lifecycle === 'RUNNING' ? 'ok' : state.lifecycle.toLowerCase(),
    lifecycle: state.lifecycle,
    replica,
    uptimeS: Math.round((Date.now() - startedAt) / 1000),
    store: { url: storeUrl, streamConnected: state.streamConnected },
    queue: queue.stats(),
    intake: intake.stats(),
    pool: sandbox.stats(),
    catalog: { active: catalog.entries().length, rejected: catalog.rejected().length },
    ...(rap ? { rap: rap.status() } : {}),
  });
  const metrics = createMetrics({
    queue: () => queue.stats(),
    pool: () => sandbox.stats(),
    catalog: () => ({ active: catalog.entries().length, rejected: catalog.rejected().length }),
    isKnownTool: (name) => catalog.resolve(name) !== undefined,
  });
  const hostEnv = hostEnvironment();
  const hostSchemas = createSchemaCache(validator);
  rap = createRap({
    config,
    logger: log.child({ component: 'rap' }),
    client,
    keys,
    validator,
    localHostTools: () => hostTools,
    catalogEntries: () => catalog.entries(),
    onChange: () => publish(),
    out,
  });
  const rapRuntime = rap;
  const legacyCutoverMs = await loadAnswerTagCutover({ client, keys, workspace: config.workspace, logger: log });
  // The web console's API (served on the admin port); its figures come from the handler's reports.
  const consoleApi = createConsoleApi({ config, client, keys, catalog, sandbox, validator, logger: log.child({ component: 'console' }), health: () => health() });
  // The request path (src/request): one handler, two executors.
  const executors = {
    code: createCodeExecutor({ client, sandbox, secrets, config, replica }),
    host: createHostExecutor({
      replica,
      run: (tool, input, ctx) =>
        executeHostTool(tool, input, {
          signal: ctx.signal,
          logger: log.child({ component: 'legacy', rid: ctx.rid }),
          config,
          env: hostEnv,
          schemas: hostSchemas,
          inputChecked: true,
          resolveSecret: (name) => secrets.resolveOne(name, { tool: tool.name, rid: ctx.rid, operator: true }),
          ...(rapRuntime ? { runRemote: (call) => rapRuntime.runRemote(call, { rid: ctx.rid, requestBreadcrumbId: ctx.breadcrumbId }) } : {}),
        }),
    }),
  };
  const handler = createRequestHandler({
    client,
    legacyCutoverMs,
    claims,
    catalog,
    validator,
    executors,
    responder,
    config,
    logger: log,
    replica,
    hardStop: hardStop.signal,
    onStarted: (report) => {
      consoleApi.stats.started(report);
      state.admin?.broadcast({ type: 'execution:started', ts: new Date().toISOString(), replica, ...report });
    },
    onFinished: (report) => {
      metrics.recordExecution(report);
      consoleApi.stats.finished(report);
      state.admin?.broadcast({ type: 'execution:finished', ts: new Date().toISOString(), replica, ...report });
    },
  });
  const intake = createIntake({
    client,
    legacyCutoverMs,
    claims,
    queue,
    workspace: config.workspace,
    keys,
    logger: log.child({ component: 'intake' }),
    scanIntervalMs: config.scanIntervalMs,
    run: (request, signal) => handler.handle(request, signal),
  });

  return {
    config, log, out, replica, storeUrl, client, keys, stamper, sandbox, secrets, catalog, publisher, queue, intake, metrics, consoleApi, rap,
    extensions, operatorTools, intakeController, hardStop, onStop, state, health,
  };
}

/** Opens the event stream and routes every event (src/request/1-events.ts); resolves on the first connection. */
function routeEvents(parts: Parts): Promise<void> {
  const { client, intake, catalog, extensions, metrics, log, state } = parts;
  const onEvent = createEventRouter({
    workspace: parts.config.workspace,
    logger: log,
    intake,
    catalog,
    others: () => (parts.rap ? [...extensions, parts.rap] : extensions),
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
      pinOperatorTool: (pin) => void parts.operatorTools.set(pin.tool.name, pin),
    });
    if (extension.stop) onStop(extension.name, () => extension.stop!());
  }
  await catalog.load();
  if (rap) {
    onStop('rap', () => rap.stop());
    await rap.start();
  }
  // One warm process per permission set of the catalog's code tools: first calls skip a cold spawn.
  sandbox.prewarm?.(catalog.entries().flatMap((entry) => {
    const route = catalog.resolve(entry.name);
    return route?.kind === 'code' ? [route.tool] : [];
  }));
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
      console: parts.consoleApi,
    });
    state.admin = admin;
    onStop('admin port', () => admin.close());
    log.info('admin port listening', { url: admin.url });
  }

  // Last line of defence: a fault escaping some callback is logged and counted, never the end of
  // the service (every known path handles its own errors; this catches the unknown ones).
  const onUncaught = (error: unknown): void => {
    parts.metrics.recordUncaught();
    log.error('uncaught error; the service keeps serving', { error });
  };
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  onStop('uncaught-error guard', async () => {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
  });

  state.lifecycle = 'RUNNING';
  log.info('runner ready', { store: parts.storeUrl, workspace: config.workspace, tools: catalog.entries().length });
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

/** Polls the store's health with backoff until it answers, `waitMs` passes or `signal` aborts. */
async function waitForStore(client: StoreClient, logger: Logger, waitMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + waitMs;
  let wait = 100;
  for (;;) {
    try {
      await client.health();
      return;
    } catch (error) {
      if (Date.now() > deadline || signal.aborted) {
        throw new RunnerError(ErrorCode.DependencyUnavailable, `store at ${client.baseUrl} is not reachable: ${coerceError(error).message}`, { cause: error });
      }
      logger.warn('store not reachable yet', { url: client.baseUrl, error });
      await sleep(wait, undefined, { ref: false });
      wait = Math.min(2_000, wait * 2);
    }
  }
}
