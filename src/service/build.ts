// Building the service: every part created and wired (store, client, keys, sandbox, host tools,
// secrets, catalog and its publisher, queue, the request path of src/request, RAP, metrics, the
// console API). Nothing runs requests yet: service.ts routes the events and starts serving.

import { setTimeout as sleep } from 'node:timers/promises';
import {
  createRequestClient,
  createRequestKeys,
  createStoreClient,
  type RequestKeys,
  type StoreClient,
} from '../breadcrumbs/index.js';
import { checkOrigin } from '../tool-context/origin.js';
import { createCatalog, type Catalog, type OperatorTool } from '../catalog/catalog.js';
import { createStamper, type Stamper } from '../catalog/deployment.js';
import { createCatalogPublisher, type CatalogPublisher } from '../catalog/publisher.js';
import { deriveKey, REQUEST_KEYS_PURPOSE, resolveRunnerKey } from '../catalog/runner-key.js';
import type { Config } from '../config/index.js';
import { createConsoleApi, type ConsoleApi } from '../console/api.js';
import { coerceError, ErrorCode, RunnerError } from '../errors.js';
import { loadHostTools, publishHostTools, type HostTool } from '../host-tools/index.js';
import type { Logger } from '../logger.js';
import { createJobQueue, type JobQueue } from '../queue/job-queue.js';
import { createRap, type Rap } from '../rap/index.js';
import { createCreateExecutor } from '../authoring/create-flow.js';
import { loadAnswerTagCutover } from '../request/cutover.js';
import type { Intake } from '../request/intake.js';
import { createRequestPath } from '../request/path.js';
import { createClaimManager, type ClaimManager } from '../request/claims.js';
import { checkLeaseKey, createLeaseClaimManager, storeOffersLeases } from '../request/lease-claims.js';
import { createSandbox, resolveCapacity, type Sandbox } from '../sandbox/index.js';
import { createSchemaValidator, validateToolDefinition, type SchemaValidator } from '../screen/index.js';
import { createStore, type Store } from '../store/index.js';
import { redactUrl } from '../store/pg/index.js';
import type { AdminServer } from './admin-server.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createSecretResolver, loadSecretsFile, type SecretResolver } from '../tool-context/secrets.js';
import type { Lifecycle, ServiceExtension, ServiceOptions } from './service.js';
import { backoffMs } from '../backoff.js';

/** Everything a running service holds, built by buildService and wired by routeEvents/startServing. */
export interface Parts {
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
  /** The one schema validator of the service (manifests, definitions, code and host tools, extensions). */
  validator: SchemaValidator;
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
  /** Called once the service is RUNNING (extensions started, operator tools pinned): tool creation starts deciding. */
  markReady(): void;
}

const LEASE_KEY_PURPOSE = 'tools-runner/store-lease-key/v1';

// Claims: leases on a store that offers them (this project's), breadcrumb claims on any other.
// `--claims` forces one kind; every replica of a store must end up with the same kind.
async function selectClaims(
  config: Config,
  options: Parameters<typeof createClaimManager>[0],
  leaseKey: string,
): Promise<ClaimManager> {
  const offered = config.claims === 'breadcrumb' ? false : await storeOffersLeases(options.client);
  if (config.claims === 'lease' && !offered) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `--claims lease: the store at ${options.client.baseUrl} offers no leases (only this project's store does, with a lease key); use --claims auto or breadcrumb`,
    );
  }
  if (!offered) {
    options.logger.info('claims are breadcrumbs', { kind: 'breadcrumb' });
    return createClaimManager(options);
  }
  await checkLeaseKey(options.client, options.workspace, leaseKey);
  options.logger.info('claims are store leases', { kind: 'lease' });
  return createLeaseClaimManager({ ...options, leaseKey });
}

/** The host tools of the configured manifests (--manifest), published to the store; none without manifests. */
async function loadConfiguredHostTools(
  config: Config,
  client: StoreClient,
  log: Logger,
  validator: SchemaValidator,
): Promise<HostTool[]> {
  if (config.manifests.length === 0) return [];
  const loaded = await loadHostTools({
    paths: config.manifests,
    grantedCapabilities: config.grantedCapabilities,
    logger: log.child({ component: 'legacy' }),
    validator,
  });
  for (const error of loaded.errors) log.error('manifest rejected', { path: error.path, error: error.message });
  for (const denied of loaded.denied) log.warn('host tool denied', { ...denied });
  const published = await publishHostTools(client, loaded.tools, config.workspace, log.child({ component: 'legacy' }));
  log.info('host tools loaded', {
    tools: loaded.tools.map((t) => t.name),
    denied: loaded.denied.length,
    published: published.filter((p) => p.action !== 'unchanged').length,
  });
  return loaded.tools;
}

/** Builds and wires every part (store, client, sandbox, catalog, request path, RAP, console); nothing runs requests yet. */
export async function buildService(
  options: ServiceOptions,
  base: {
    replica: string;
    log: Logger;
    onStop: Parts['onStop'];
    intakeController: AbortController;
    hardStop: AbortController;
  },
): Promise<Parts> {
  const { config, logger } = options;
  const { replica, log, onStop, intakeController, hardStop } = base;
  const out = options.out ?? (() => {});
  const state: Parts['state'] = { lifecycle: 'INITIALIZED', streamConnected: false, streamLate: false };

  // First: a runner that cannot derive its keys must not touch the store.
  const runnerKey = resolveRunnerKey({
    runnerSecret: config.runnerSecret,
    dataDir: config.dataDir,
    logger: log,
    storeUrl: config.storeUrl,
    sharedDb: !config.storeUrl && config.db ? redactUrl(config.db) : undefined,
    role: 'service',
  });
  log.info('runner keys derived', { source: runnerKey.source, ...(runnerKey.file ? { file: runnerKey.file } : {}) });
  const stamper = createStamper(runnerKey.key);
  const keys = createRequestKeys(deriveKey(runnerKey.master, REQUEST_KEYS_PURPOSE));

  // The key of the store's lease routes: configured, or derived like every other runner key (so the
  // embedded store and replicas sharing the runner secret agree on it without configuration).
  const leaseKey = config.leaseKey ?? deriveKey(runnerKey.master, LEASE_KEY_PURPOSE).toString('base64url');
  let storeUrl = config.storeUrl;
  let store: Store | undefined;
  if (!storeUrl) {
    const embedded = await createStore({ ...config, leaseKey, logger: logger.child({ component: 'store' }) });
    store = embedded;
    onStop('store', () => embedded.close());
    storeUrl = embedded.url;
    out(`store listening on ${embedded.url}`);
  }

  const client = createStoreClient({
    baseUrl: storeUrl,
    ...(store && config.storeTransport === 'auto' ? { local: store.local } : {}),
    logger: log.child({ component: 'client' }),
    auth: config.storeToken
      ? { token: config.storeToken }
      : {
          mint: {
            owner_id: config.ownerId,
            agent_id: config.agentId,
            roles: ['curator', 'emitter', 'subscriber'],
            ...(config.adminKey ? { adminKey: config.adminKey } : {}),
          },
        },
  });
  // Drop keep-alive sockets before the embedded store closes (it would wait for them).
  onStop('store client', async () => client.close());
  await waitForStore(client, log, config.storeWaitMs, intakeController.signal);

  // One schema validator (compiled-schema cache) for manifests, tool definitions, code tools and host tools alike.
  const validator = createSchemaValidator();
  const sandbox = await createSandbox({ config, logger: log.child({ component: 'sandbox' }) });
  onStop('sandbox', () => sandbox.close());

  const hostTools = await loadConfiguredHostTools(config, client, log, validator);

  const fileSecrets = config.secretsFile ? await loadSecretsFile(config.secretsFile, logger) : undefined;
  const secrets = createSecretResolver({
    client,
    workspace: config.workspace,
    logger: log,
    ...(fileSecrets ? { fileSecrets } : {}),
    shares: config.shareSecrets,
  });

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
    // once and continuous tools run on their own: never offered to callers (MCP, RAP, exports).
    entries: () =>
      catalog.entries().filter((entry) => {
        const route = catalog.resolve(entry.name);
        return route?.kind !== 'code' || route.tool.bootstrap === undefined;
      }),
    rejected: () => catalog.rejected(),
  });
  publish = () => publisher.schedule();
  onStop('catalog publisher', () => publisher.close());

  const capacity = resolveCapacity(config);
  const queue = createJobQueue({
    concurrency: capacity.concurrency,
    cpuConcurrency: capacity.cpuConcurrency,
    toolConcurrency: config.toolConcurrency,
    backlog: config.backlog,
    onJobError: (key, error) => log.error('job threw', { rid: key, error }),
  });
  const claims = await selectClaims(
    config,
    {
      client,
      workspace: config.workspace,
      holder: replica,
      ttlMs: config.claimTtlMs,
      keys,
      logger: log.child({ component: 'claims' }),
    },
    leaseKey,
  );

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
    ...warnings(),
  });
  const warnings = (): { warnings?: string[] } => {
    const found = (options.extensions ?? []).flatMap((extension) => extension.warnings?.() ?? []);
    return found.length > 0 ? { warnings: found } : {};
  };
  const metrics = createMetrics({
    queue: () => queue.stats(),
    pool: () => sandbox.stats(),
    catalog: () => ({ active: catalog.entries().length, rejected: catalog.rejected().length }),
    isKnownTool: (name) => catalog.resolve(name) !== undefined,
    droppedLogLines: () => logger.droppedLines(),
    ...(store ? { storeSizes: () => (store as Store).retention.sizes() } : {}),
  });
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
  let markReady = (): void => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const cutover = await loadAnswerTagCutover({ client, keys, workspace: config.workspace, logger: log });
  // The web console's API (served on the admin port); its figures come from the job's reports.
  const consoleApi = createConsoleApi({
    config,
    client,
    keys,
    catalog,
    sandbox,
    validator,
    logger: log.child({ component: 'console' }),
    health: () => health(),
    extensionStatus: (name) => options.extensions?.find((extension) => extension.name === name)?.status?.(),
  });
  // Nested calls (context.tools.call) write their requests and wait for the answers with one request client.
  const nestedRequests = createRequestClient({ client, keys, workspace: config.workspace, pollMaxMs: 500 });
  onStop('nested calls', async () => nestedRequests.close());
  // The request path (src/request/path.ts): every request of every kind, tool calls and tool creation.
  const { intake } = createRequestPath({
    client,
    keys,
    config,
    logger: log,
    replica,
    catalog,
    validator,
    queue,
    sandbox,
    secrets,
    cutover,
    claims,
    hardStop: hardStop.signal,
    toolCalls: {
      requests: nestedRequests,
      keys,
      maxDepth: config.nestedCallMaxDepth,
      logger: log.child({ component: 'tool-calls' }),
    },
    originOf: (record, rid, authenticated) => checkOrigin(keys, record, rid, authenticated),
    ...(rapRuntime ? { runRemote: (call, request) => rapRuntime.runRemote(call, request) } : {}),
    // Always on: when creation is disabled it answers every create request with a rejection
    // (permission.denied) instead of leaving agents without an answer.
    create: createCreateExecutor({
      client,
      keys,
      sandbox,
      config,
      logger: log.child({ component: 'tool-creation' }),
      validator,
      stamper,
      catalog,
      secrets,
      ready,
    }),
    secretValues: () => Object.values(fileSecrets ?? {}),
    onLiveProgress: (report) =>
      state.admin?.broadcast({ type: 'execution:progress', ts: new Date().toISOString(), replica, ...report }),
    onStarted: (report) => {
      consoleApi.stats.started(report);
      state.admin?.broadcast({ type: 'execution:started', ts: new Date().toISOString(), replica, ...report });
    },
    onFinished: (report) => {
      metrics.recordExecution(report);
      consoleApi.stats.finished(report);
      state.admin?.broadcast({ type: 'execution:finished', ts: new Date().toISOString(), replica, ...report });
    },
    onEnded: (report) => {
      consoleApi.stats.ended(report);
      state.admin?.broadcast({ type: 'execution:ended', ts: new Date().toISOString(), replica, ...report });
    },
  });

  return {
    config,
    log,
    out,
    replica,
    storeUrl,
    client,
    keys,
    stamper,
    sandbox,
    secrets,
    validator,
    catalog,
    publisher,
    queue,
    intake,
    metrics,
    consoleApi,
    rap,
    extensions,
    operatorTools,
    intakeController,
    hardStop,
    onStop,
    state,
    health,
    markReady,
  };
}

/** Polls the store's health with backoff until it answers, `waitMs` passes or `signal` aborts. */
async function waitForStore(client: StoreClient, logger: Logger, waitMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + waitMs;
  let tries = 0;
  for (;;) {
    try {
      await client.health();
      return;
    } catch (error) {
      if (signal.aborted) {
        throw new RunnerError(
          ErrorCode.DependencyUnavailable,
          `interrupted while waiting for the store at ${client.baseUrl} (not reachable: ${coerceError(error).message})`,
          { cause: error },
        );
      }
      if (Date.now() > deadline) {
        throw new RunnerError(
          ErrorCode.DependencyUnavailable,
          `store at ${client.baseUrl} is not reachable after ${waitMs} ms (--store-wait-ms): ${coerceError(error).message}`,
          { cause: error },
        );
      }
      logger.warn('store not reachable yet', { url: client.baseUrl, error, waitMs });
      // A referenced timer: while nothing else is open, this wait is what keeps the process alive
      // (an unreferenced one let a `start` with an unreachable --store-url exit 0 at once).
      const wait = backoffMs({ initialMs: 100, maxMs: 2_000 }, tries++);
      await sleep(Math.min(wait, Math.max(0, deadline - Date.now()) + 1), undefined, { signal }).catch(() => undefined);
    }
  }
}
