// Building the service: every part created and wired (store, client, keys, sandbox, host tools,
// secrets, catalog and its publisher, queue, the request path of src/request, RAP, metrics, the
// console API). Nothing runs requests yet: service.ts routes the events and starts serving.

import { setTimeout as sleep } from 'node:timers/promises';
import { createRequestClient, createRequestKeys, createStoreAuthProbe, createStoreClient, type RequestKeys, type StoreClient } from '../breadcrumbs/index.js';
import { verifiedOrigin } from '../tool-context/origin.js';
import { createCatalog, type Catalog, type OperatorTool } from '../catalog/catalog.js';
import { createStamper, type Stamper } from '../catalog/deployment.js';
import { createCatalogPublisher, type CatalogPublisher } from '../catalog/publisher.js';
import { deriveKey, REQUEST_KEYS_PURPOSE, resolveRunnerKey } from '../catalog/runner-key.js';
import { hostEnvironment, type Config } from '../config/index.js';
import { createConsoleApi, type ConsoleApi } from '../console/api.js';
import { coerceError, ErrorCode, RunnerError } from '../errors.js';
import { createSchemaCache, executeHostTool, loadHostTools, publishHostTools, type HostTool } from '../host-tools/index.js';
import type { Logger } from '../logger.js';
import { createJobQueue, type JobQueue } from '../queue/job-queue.js';
import { createRap, type Rap } from '../rap/index.js';
import { createIntake, type Intake } from '../request/2-intake.js';
import { createClaimManager } from '../request/3-claims.js';
import { loadAnswerTagCutover } from '../request/3-cutover.js';
import { createCodeExecutor, createHostExecutor } from '../request/6-execute.js';
import { createResponder } from '../request/7-respond.js';
import { createRequestHandler } from '../request/handler.js';
import { createPolicies } from '../request/policies/index.js';
import { createSandbox, type Sandbox } from '../sandbox/index.js';
import { createSchemaValidator, validateToolDefinition, type SchemaValidator } from '../screen/index.js';
import { createStore, type Store } from '../store/index.js';
import type { AdminServer } from './admin-server.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createSecretResolver, loadSecretsFile, type SecretResolver } from '../tool-context/secrets.js';
import type { Lifecycle, ServiceExtension, ServiceOptions } from './service.js';

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
}

/** Builds and wires every part (store, client, sandbox, catalog, request path, RAP, console); nothing runs requests yet. */
export async function buildService(
  options: ServiceOptions,
  base: { replica: string; log: Logger; onStop: Parts['onStop']; intakeController: AbortController; hardStop: AbortController },
): Promise<Parts> {
  const { config, logger } = options;
  const { replica, log, onStop, intakeController, hardStop } = base;
  const out = options.out ?? (() => {});
  const state: Parts['state'] = { lifecycle: 'INITIALIZED', streamConnected: false, streamLate: false };

  // First: a runner that cannot derive its keys must not touch the store.
  const runnerKey = resolveRunnerKey({ runnerSecret: config.runnerSecret, dataDir: config.dataDir, logger: log, storeUrl: config.storeUrl, role: 'service' });
  log.info('runner keys derived', { source: runnerKey.source, ...(runnerKey.file ? { file: runnerKey.file } : {}) });
  const stamper = createStamper(runnerKey.key);
  const keys = createRequestKeys(deriveKey(runnerKey.master, REQUEST_KEYS_PURPOSE));

  let storeUrl = config.storeUrl;
  let store: Store | undefined;
  if (!storeUrl) {
    const embedded = await createStore({ ...config, logger: logger.child({ component: 'store' }) });
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
    droppedLogLines: () => logger.droppedLines(),
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
  const consoleApi = createConsoleApi({
    config, client, keys, catalog, sandbox, validator, logger: log.child({ component: 'console' }), health: () => health(),
    extensionStatus: (name) => options.extensions?.find((extension) => extension.name === name)?.status?.(),
  });
  // Nested calls (context.tools.call) write their requests and wait for the answers with one request client.
  const nestedRequests = createRequestClient({ client, keys, workspace: config.workspace, pollMaxMs: 500 });
  onStop('nested calls', async () => nestedRequests.close());
  // The request path (src/request): one handler, two executors.
  const executors = {
    code: createCodeExecutor({
      client, sandbox, secrets, config, replica, keys, logger: log.child({ component: 'progress' }),
      toolCalls: { requests: nestedRequests, keys, maxDepth: config.nestedCallMaxDepth, logger: log.child({ component: 'tool-calls' }) },
      onLiveProgress: (report) => state.admin?.broadcast({ type: 'execution:progress', ts: new Date().toISOString(), replica, ...report }),
    }),
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
          // the audit policy writes the call's one audit line (with these transport facts)
          audit: 'return',
          ...(ctx.approvalId !== undefined ? { approvalId: ctx.approvalId } : {}),
          // timed into the request's `secrets` stage (the host executor counts the rest as `sandbox_run`)
          resolveSecret: async (name) => {
            const from = performance.now();
            try {
              return await secrets.resolveOne(name, { tool: tool.name, rid: ctx.rid, operator: true });
            } finally {
              ctx.timings?.add('secrets', performance.now() - from);
            }
          },
          ...(rapRuntime ? { runRemote: (call) => rapRuntime.runRemote(call, { rid: ctx.rid, requestBreadcrumbId: ctx.breadcrumbId }) } : {}),
        }),
    }),
  };
  // The contract policies (src/request/policies/index.ts: idempotency, approval, rate limit, effects, audit).
  // Whether the store authenticates writers: then every per-agent feature keys on the verified writer.
  const storeAuth = createStoreAuthProbe(client);
  const policies = createPolicies({ client, keys, config, logger: log, replica, storeAuth, secretValues: () => Object.values(fileSecrets ?? {}) });
  const handler = createRequestHandler({
    client,
    storeAuth,
    policies,
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
    originOf: (context, rid) => verifiedOrigin(keys, context, rid),
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
    config, log, out, replica, storeUrl, client, keys, stamper, sandbox, secrets, validator, catalog, publisher, queue, intake, metrics, consoleApi, rap,
    extensions, operatorTools, intakeController, hardStop, onStop, state, health,
  };
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
      if (signal.aborted) {
        throw new RunnerError(ErrorCode.DependencyUnavailable, `interrupted while waiting for the store at ${client.baseUrl} (not reachable: ${coerceError(error).message})`, { cause: error });
      }
      if (Date.now() > deadline) {
        throw new RunnerError(ErrorCode.DependencyUnavailable, `store at ${client.baseUrl} is not reachable after ${waitMs} ms (--store-wait-ms): ${coerceError(error).message}`, { cause: error });
      }
      logger.warn('store not reachable yet', { url: client.baseUrl, error, waitMs });
      // A referenced timer: while nothing else is open, this wait is what keeps the process alive
      // (an unreferenced one let a `start` with an unreachable --store-url exit 0 at once).
      await sleep(Math.min(wait, Math.max(0, deadline - Date.now()) + 1), undefined, { signal }).catch(() => undefined);
      wait = Math.min(2_000, wait * 2);
    }
  }
}
