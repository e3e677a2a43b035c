// RAP in the running service: the listener, the tool server (the catalog offered to RAP runtimes)
// and the runtime (remote toolsets published as host tools), wired to the service's parts.
//
// Lifecycle: created (config checked) -> start(): listener up, toolsets fetched, RAP tools published
// as tool.v1 -> refreshed every `rapRefreshMs` -> stop(): timer cleared, calls dropped, listener
// closed. Nothing runs when `--rap-port` is -1 (then `--rap-servers` is a config error: results
// arrive by callback, so the runtime needs the listener).

import type { RequestKeys, StoreClient, StoreEvent } from '../breadcrumbs/index.js';
import type { CatalogEntry } from '../breadcrumbs/messages.js';
import type { Config } from '../config/index.js';
import { contractOrUnknown } from '../contract/contract.js';
import { ErrorCode, RunnerError } from '../errors.js';
import {
  publishHostTools,
  unpublishHostTools,
  type CallOutcome,
  type HostTool,
  type RemoteCall,
} from '../host-tools/index.js';
import type { Logger } from '../logger.js';
import type { SchemaValidator } from '../screen/index.js';
import { createRapAuth, parseRapTokens } from './auth.js';
import { createRapCaller, type RapCaller } from './caller.js';
import { isLoopbackHost } from '../http.js';
import { startRapListener, type RapListener } from './listener.js';
import { createRapRuntime, parseServerTokens, serverKey, type RapRuntime, type RapRuntimeStatus } from './runtime.js';
import { createRapToolServer, type RapToolServer } from './tool-server.js';

/** What RAP needs from the service. */
/** The tool server's invocation URL under a RAP listener's base URL (the served toolset's `endpoint`). */
export function rapInvokeUrl(base: string): string {
  return `${base.replace(/\/+$/, '')}/invoke`;
}

/**
 * Where others reach the RAP listener of a service with this configuration, known without starting
 * it: `--rap-public-url`, else the bind address with a fixed `--rap-port`; undefined when the port
 * is picked at start (0) or the listener is off (-1).
 */
export function configuredRapBase(config: Pick<Config, 'rapPublicUrl' | 'rapHost' | 'rapPort'>): string | undefined {
  if (config.rapPublicUrl !== undefined) return config.rapPublicUrl.replace(/\/+$/, '');
  if (config.rapPort <= 0) return undefined;
  const host = config.rapHost.includes(':') ? `[${config.rapHost}]` : config.rapHost;
  return `http://${host}:${config.rapPort}`;
}

export interface RapOptions {
  config: Config;
  logger: Logger;
  client: StoreClient;
  keys: RequestKeys;
  validator: SchemaValidator;
  /** Host tools of the local manifests. */
  localHostTools(): readonly HostTool[];
  /** The runnable catalog (code and host tools). */
  catalogEntries(): CatalogEntry[];
  /** Called when the set of RAP tools changed (republish the catalog). */
  onChange(): void;
  out?(line: string): void;
}

/** RAP in the service. */
export interface Rap {
  /** Host tools to route: local ones (minus names that clash: those are exposed by neither) plus the exposed RAP tools. */
  hostTools(local: readonly HostTool[]): HostTool[];
  /** The executor of `rap` transport calls. */
  runRemote(call: RemoteCall, request: { rid: string; requestBreadcrumbId: string }): Promise<CallOutcome>;
  start(): Promise<void>;
  handleEvent(event: StoreEvent): void;
  status(): { url?: string; toolServer: boolean; pending: number; runtime?: RapRuntimeStatus };
  readonly url: string | undefined;
  stop(): Promise<void>;
}

/** Creates RAP for the service, or undefined when the listener is off and no servers are configured. */
export function createRap(options: RapOptions): Rap | undefined {
  const { config, logger, client } = options;
  if (config.rapPort < 0) {
    if (config.rapServers.length > 0) {
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `--rap-servers (${config.rapServers.join(', ')}) needs the RAP listener for result callbacks: set --rap-port (0 picks a free port)`,
      );
    }
    return undefined;
  }
  const tokens = parseRapTokens(config.rapTokens);
  for (const token of tokens.values()) logger.redact(token);
  const serverTokens = parseServerTokens(config.rapServerTokens, config.rapServers);
  for (const token of serverTokens.values()) logger.redact(token);
  const tokenFor = (server: string): string | undefined => serverTokens.get(serverKey(server));
  if (config.rapToolServer && tokens.size === 0 && !isLoopbackHost(config.rapHost)) {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `refusing to serve the RAP tool server on non-loopback host "${config.rapHost}" without --rap-tokens (anyone who can reach it could run tools): set --rap-tokens caller=token, bind --rap-host 127.0.0.1, or --no-rap-tool-server`,
    );
  }
  const auth = createRapAuth({
    tokens,
    ...(config.rapPublicUrl ? { publicHost: new URL(config.rapPublicUrl).host } : {}),
  });
  let listener: RapListener | undefined;
  const base = (): string => (config.rapPublicUrl ?? listener?.url ?? '').replace(/\/+$/, '');
  let published = new Set<string>();
  let blockedBefore = new Set<string>();
  let sync = Promise.resolve();

  const runtime: RapRuntime | undefined =
    config.rapServers.length > 0
      ? createRapRuntime({
          servers: config.rapServers,
          validator: options.validator,
          logger: logger.child({ part: 'runtime' }),
          resultTimeoutMs: config.rapResultTimeoutMs,
          tokenFor,
          localHostTools: options.localHostTools,
          codeToolNames: () =>
            options
              .catalogEntries()
              .filter((e) => e.kind === 'code')
              .map((e) => e.name),
          onChange: () => {
            sync = sync.then(syncPublication, () => syncPublication());
            options.onChange();
          },
        })
      : undefined;

  /** tool.v1 descriptions follow the exposed set: RAP tools published, dropped names and blocked local tools removed. */
  const syncPublication = async (): Promise<void> => {
    if (!runtime) return;
    const tools = runtime.tools();
    const names = new Set(tools.map((t) => t.name));
    const blocked = new Set(runtime.blockedLocal());
    const gone = [...published].filter((name) => !names.has(name));
    await unpublishHostTools(client, [...gone, ...blocked], config.workspace, logger);
    const unblocked = options.localHostTools().filter((t) => blockedBefore.has(t.name) && !blocked.has(t.name));
    await publishHostTools(client, [...tools, ...unblocked], config.workspace, logger);
    published = names;
    blockedBefore = blocked;
  };

  const caller: RapCaller | undefined = runtime
    ? createRapCaller({
        workspace: config.workspace,
        logger: logger.child({ part: 'caller' }),
        callbackBase: base,
        maxResultBytes: config.maxBodyBytes,
        tokenFor,
      })
    : undefined;

  const toolServer: RapToolServer | undefined = config.rapToolServer
    ? createRapToolServer({
        client,
        keys: options.keys,
        workspace: config.workspace,
        logger: logger.child({ part: 'tool-server' }),
        endpoint: () => rapInvokeUrl(base()),
        allowedCallbackHosts: config.rapCallbackHosts,
        resultTimeoutMs: config.rapResultTimeoutMs,
        pollIntervalMs: Math.min(config.scanIntervalMs, 5_000),
        tools: () => {
          // Tools imported from RAP servers are not offered again (no loops between runners).
          const imported = new Set(runtime?.tools().map((t) => t.name) ?? []);
          const local = new Map(options.localHostTools().map((t) => [t.name, t]));
          return options
            .catalogEntries()
            .filter((e) => !(e.kind === 'host' && imported.has(e.name)))
            .map((e) => ({
              name: e.name,
              description: e.description,
              inputSchema: e.inputSchema,
              // The entry's contract (validated: a malformed one is unknown); a host entry without one: its manifest's.
              contract:
                e['contract'] !== undefined
                  ? contractOrUnknown(e['contract'])
                  : e.kind === 'host'
                    ? (local.get(e.name)?.contract ?? {})
                    : {},
            }));
        },
      })
    : undefined;

  let timer: NodeJS.Timeout | undefined;
  const refresh = (): void => {
    runtime?.refresh().catch((error: unknown) => logger.warn('rap toolset refresh failed', { error }));
  };

  return {
    hostTools: (local) => (runtime ? runtime.hostTools(local) : [...local]),
    runRemote: (call, request) => {
      if (!caller) return Promise.reject(new RunnerError(ErrorCode.Internal, 'RAP runtime is not configured'));
      return caller.call({ ...call, ...request });
    },
    async start() {
      listener = await startRapListener({
        host: config.rapHost,
        port: config.rapPort,
        logger,
        maxBodyBytes: config.maxBodyBytes,
        toolServer: () => toolServer,
        auth,
        caller: () => caller,
      });
      logger.info('rap listening', {
        url: listener.url,
        publicUrl: base(),
        toolServer: toolServer !== undefined,
        callers: [...tokens.keys()],
        servers: config.rapServers,
      });
      options.out?.(`rap listening on ${listener.url}`);
      if (runtime) {
        await runtime.refresh();
        await sync;
        timer = setInterval(refresh, config.rapRefreshMs);
        timer.unref();
      }
    },
    handleEvent: (event) => toolServer?.handleEvent(event),
    status: () => ({
      ...(listener ? { url: base() } : {}),
      toolServer: toolServer !== undefined,
      pending: (toolServer?.pending() ?? 0) + (caller?.pending() ?? 0),
      ...(runtime ? { runtime: runtime.status() } : {}),
    }),
    get url() {
      return listener ? base() : undefined;
    },
    async stop() {
      if (timer) clearInterval(timer);
      await toolServer?.close();
      await sync.catch(() => undefined);
      await listener?.close();
    },
  };
}
