// The request path, built once: intake, claims, the lease keeper, the contract policies, the
// executors (code, host, create) and the responder, around the one job (job.ts) every request of
// every kind runs through. src/service/build.ts calls createRequestPath once; tests call it with
// overrides (claims, policies, responder, executors, cutover). The public entry points for the rest
// of the service: `intake` (events and scans feed it: service.ts routes the store's events into
// events.ts, which offers requests here) and `job.handle` (what intake's jobs run). A part that
// wants a tool run writes a tool.request.v1 record (breadcrumbs/request-client.ts): the path finds
// it like any other request.

import { createStoreAuthProbe, type StoreAuthProbe, type StoreClient } from '../breadcrumbs/index.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import type { Catalog } from '../catalog/catalog.js';
import { hostEnvironment, type Config } from '../config/index.js';
import { createSchemaCache, executeHostTool, type RemoteCall } from '../host-tools/index.js';
import type { Logger } from '../logger.js';
import type { JobQueue } from '../queue/job-queue.js';
import type { ExecuteHostToolOptions } from '../host-tools/index.js';
import type { Sandbox } from '../sandbox/index.js';
import type { SchemaValidator } from '../screen/index.js';
import type { SecretResolver } from '../tool-context/secrets.js';
import type { ToolCallsOptions } from '../tool-context/tool-calls.js';
import { createClaimManager, type ClaimManager } from './claims.js';
import type { Cutover } from './cutover.js';
import { createCodeExecutor, createHostExecutor, type CreateExecutor, type Executors } from './execute.js';
import { createIntake, type Intake } from './intake.js';
import { createRequestJob, type RequestJob, type RequestJobOptions } from './job.js';
import { createLeaseKeeper, type LeaseKeeper } from './lease.js';
import type { LiveProgressReport } from './progress.js';
import { createPolicies } from './policies/index.js';
import type { Policy } from './policy.js';
import { createResponder, type Responder } from './respond.js';

export interface RequestPathOptions {
  client: StoreClient;
  keys: RequestKeys;
  config: Config;
  logger: Logger;
  /** This replica's name (claims' holder, answers' `metadata.replica`). */
  replica: string;
  catalog: Catalog;
  validator: SchemaValidator;
  queue: JobQueue;
  sandbox: Sandbox;
  secrets: SecretResolver;
  /** Aborted when the service must stop NOW (the answer write gives up then). */
  hardStop: AbortSignal;
  /** The answer-tag cutover (cutover.ts, loaded at startup); absent = no request predates it. */
  cutover?: Cutover;
  /** Calls to tools of RAP servers (host tools with a `rap` transport). */
  runRemote?(
    call: RemoteCall,
    request: { rid: string; requestBreadcrumbId: string },
  ): ReturnType<NonNullable<ExecuteHostToolOptions['runRemote']>>;
  /** The executor of create requests (src/authoring/create-flow.ts); absent = create requests are answered `rejected`. */
  create?: CreateExecutor;
  /** Secret values an approval's input preview must never show (the secrets file's values). */
  secretValues?(): string[];
  /** Each code-tool call's progress reports for the live feed. */
  onLiveProgress?(report: LiveProgressReport): void;
  /** `context.tools.call` for code tools with a `permissions.tools` grant (src/tool-context/tool-calls.ts). */
  toolCalls?: ToolCallsOptions;
  /** The verified origin of a request the runner wrote itself (nested call, trigger, bootstrap run). */
  originOf?: RequestJobOptions['originOf'];
  onStarted?: RequestJobOptions['onStarted'];
  onFinished?: RequestJobOptions['onFinished'];
  onEnded?: RequestJobOptions['onEnded'];
  // Overrides (tests): each replaces the part the path would build.
  storeAuth?: StoreAuthProbe;
  claims?: ClaimManager;
  policies?: readonly Policy[];
  responder?: Responder;
  executors?: Partial<Executors>;
}

/** The built path. */
export interface RequestPath {
  intake: Intake;
  job: RequestJob;
  claims: ClaimManager;
  leases: LeaseKeeper;
  responder: Responder;
  executors: Executors;
  policies: readonly Policy[];
}

/** Builds the request path (see the module comment). */
export function createRequestPath(options: RequestPathOptions): RequestPath {
  const { client, keys, config, logger: log, replica, catalog, validator, queue, sandbox, secrets } = options;
  const workspace = config.workspace;
  const storeAuth = options.storeAuth ?? createStoreAuthProbe(client);
  const claims =
    options.claims ??
    createClaimManager({
      client,
      workspace,
      holder: replica,
      ttlMs: config.claimTtlMs,
      keys,
      logger: log.child({ component: 'claims' }),
    });
  const leases = createLeaseKeeper({ ttlMs: config.claimTtlMs });
  const responder =
    options.responder ?? createResponder({ client, workspace, keys, logger: log.child({ component: 'responder' }) });
  // The contract policies (policies/index.ts: idempotency, approval, rate limit, effects, audit).
  const policies =
    options.policies ??
    createPolicies({
      client,
      keys,
      config,
      logger: log,
      replica,
      storeAuth,
      ...(options.secretValues ? { secretValues: options.secretValues } : {}),
    });
  const hostEnv = hostEnvironment();
  const hostSchemas = createSchemaCache(validator);
  const executors: Executors = {
    code:
      options.executors?.code ??
      createCodeExecutor({
        client,
        sandbox,
        secrets,
        config,
        keys,
        logger: log.child({ component: 'progress' }),
        ...(options.onLiveProgress ? { onLiveProgress: options.onLiveProgress } : {}),
        ...(options.toolCalls ? { toolCalls: options.toolCalls } : {}),
      }),
    host:
      options.executors?.host ??
      createHostExecutor({
        run: (tool, input, ctx) =>
          executeHostTool(tool, input, {
            signal: ctx.signal,
            logger: log.child({ component: 'host-tools', rid: ctx.rid }),
            config,
            env: hostEnv,
            schemas: hostSchemas,
            // timed into the request's `secrets` stage (the host executor counts the rest as `sandbox_run`)
            resolveSecret: async (name) => {
              const from = performance.now();
              try {
                return await secrets.resolveOne(name, { tool: tool.name, rid: ctx.rid, operator: true });
              } finally {
                ctx.timings?.add('secrets', performance.now() - from);
              }
            },
            ...(options.runRemote
              ? {
                  runRemote: (call: RemoteCall) =>
                    options.runRemote!(call, { rid: ctx.rid, requestBreadcrumbId: ctx.breadcrumbId }),
                }
              : {}),
          }),
      }),
    ...((options.executors?.create ?? options.create)
      ? { create: (options.executors?.create ?? options.create) as CreateExecutor }
      : {}),
  };
  const job = createRequestJob({
    client,
    claims,
    leases,
    catalog,
    validator,
    executors,
    policies,
    responder,
    logger: log,
    replica,
    storeAuth,
    hardStop: options.hardStop,
    ...(options.originOf ? { originOf: options.originOf } : {}),
    ...(options.cutover ? { cutover: options.cutover } : {}),
    ...(options.onStarted ? { onStarted: options.onStarted } : {}),
    ...(options.onFinished ? { onFinished: options.onFinished } : {}),
    ...(options.onEnded ? { onEnded: options.onEnded } : {}),
  });
  const intake = createIntake({
    client,
    claims,
    queue,
    workspace,
    keys,
    logger: log.child({ component: 'intake' }),
    scanIntervalMs: config.scanIntervalMs,
    run: (request, signal) => job.handle(request, signal),
    ...(options.cutover ? { cutover: options.cutover } : {}),
  });
  return { intake, job, claims, leases, responder, executors, policies };
}
