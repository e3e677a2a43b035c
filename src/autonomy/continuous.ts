// Continuous tools (docs/autonomy.md): an operator tool whose `context.bootstrap.mode` is
// "continuous" runs as one live instance across all replicas, for as long as the service runs.
//
// States per tool: STANDBY (another replica holds the lease, or none could be had yet) -> LEADING
// (this replica holds the lease: a claim, src/request/claims.ts, on a name of its own — not a
// request — under a tag intake never scans) -> RUNNING (the tool runs in the sandbox) -> BACKOFF
// (it ended or crashed: restarted after 1 s, doubling to 60 s, reset after a run of a minute) ->
// RUNNING ... The holder renews the lease every third of `continuousLeaseMs`; a renewal that fails
// (the store says the lease is someone else's, or it cannot be renewed before it runs out) stops the
// run: it never keeps running beside a new holder. When the holder dies, its lease runs out and
// another replica takes over within one lease. A run is exempt from the call timeout but bound by
// the tool's memory and CPU limits and by `continuousMaxLifetimeMs` (then it is restarted); drain
// stops it and gives the lease back so another replica takes over at once. Only the operator's tools
// get here: the screen honours `bootstrap` for bootstrap-directory tools alone (src/screen/autonomy.ts).

import { setTimeout as sleep } from 'node:timers/promises';
import type { ExtensionContext } from '../extension.js';
import { createClaimManager, type HeldClaim } from '../request/claims.js';
import { sandboxToolOf } from '../sandbox/index.js';
import { createToolApi } from '../tool-context/tool-api.js';
import { backoffMs } from '../backoff.js';

type State = 'STANDBY' | 'RUNNING' | 'BACKOFF' | 'STOPPED';

/** What the console and /autonomy show of one continuous tool on this replica. */
export interface ContinuousStatus {
  tool: string;
  version: string;
  state: State;
  /** Holder of the lease as last seen (this replica when RUNNING/BACKOFF). */
  holder?: string;
  runs: number;
  last_started_at?: string;
  last_ended_at?: string;
  last_outcome?: string;
}

export interface ContinuousRuns {
  reconcile(): Promise<void>;
  status(): ContinuousStatus[];
  stop(): Promise<void>;
}

const MIN_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;

/** Creates the supervisor of the catalog's continuous tools. */
export function createContinuousRuns(options: { context: ExtensionContext }): ContinuousRuns {
  const { client, keys, catalog, config, logger, replica, sandbox, secrets } = options.context;
  const leaseMs = config.continuousLeaseMs;
  // Leases live under a tag of their own: intake's takeover scan (which lists claims by workspace) never sees them.
  const claims = createClaimManager({
    client,
    workspace: `lease:${config.workspace}`,
    holder: replica,
    ttlMs: leaseMs,
    keys,
    logger: logger.child({ component: 'continuous-lease' }),
  });
  const stopping = new AbortController();
  const supervisors = new Map<string, { status: ContinuousStatus; done: Promise<void>; stop: AbortController }>();

  const supervise = async (
    name: string,
    version: string,
    status: ContinuousStatus,
    stop: AbortSignal,
  ): Promise<void> => {
    const target = { breadcrumbId: `continuous-${name}`, rid: `continuous:${name}` };
    const log = logger.child({ tool: name, component: 'continuous' });
    while (!stop.aborted) {
      const got = await claims.acquire(target).catch((error: unknown) => {
        if (!stop.aborted) log.warn('lease acquire failed', { error });
        return undefined;
      });
      if (got?.kind !== 'acquired') {
        status.state = 'STANDBY';
        if (got?.kind === 'busy') status.holder = got.holder;
        await sleep(Math.max(250, Math.floor(leaseMs / 3)), undefined, { signal: stop }).catch(() => undefined);
        continue;
      }
      status.holder = replica;
      log.info('continuous tool lease acquired', { attempt: got.claim.attempt });
      await lead(name, version, got.claim, status, stop, log);
    }
    status.state = 'STOPPED';
  };

  /** Runs the tool while this replica holds the lease; returns when the lease is lost or `stop` aborts. */
  const lead = async (
    name: string,
    version: string,
    claim: HeldClaim,
    status: ContinuousStatus,
    stop: AbortSignal,
    log: typeof logger,
  ): Promise<void> => {
    const lost = new AbortController();
    let lastRenewed = Date.now();
    const renewal = setInterval(
      () => {
        claim
          .renew()
          .then((ok) => {
            if (ok) lastRenewed = Date.now();
            else lost.abort(new Error('lease answered elsewhere'));
          })
          .catch((error: unknown) => {
            log.warn('lease renewal failed', { error });
            // Stop before the lease can run out under us: never two live instances.
            if (Date.now() - lastRenewed > (leaseMs * 2) / 3) lost.abort(new Error('lease could not be renewed'));
          });
      },
      Math.max(250, Math.floor(leaseMs / 3)),
    );
    let restarts = 0;
    const signal = AbortSignal.any([stop, lost.signal]);
    try {
      while (!signal.aborted) {
        const route = catalog.resolve(name);
        if (route?.kind !== 'code' || route.tool.bootstrap?.mode !== 'continuous' || route.tool.version !== version)
          return;
        const tool = route.tool;
        status.state = 'RUNNING';
        status.runs++;
        status.last_started_at = new Date().toISOString();
        const startedAt = Date.now();
        const rid = `continuous:${name}:${replica}:${status.runs}`;
        options.context.live?.({ type: 'execution:started', rid, tool: name, kind: 'continuous' });
        const resolved = await secrets.resolve(tool.requiredSecrets, {
          tool: name,
          rid,
          definitionId: route.breadcrumbId,
          operator: true,
        });
        const lifetime = AbortSignal.timeout(config.continuousMaxLifetimeMs);
        const result = await sandbox.run({
          // Exempt from the call timeout: bounded by the operator's maximum lifetime instead.
          tool: { ...sandboxToolOf(tool), timeoutMs: config.continuousMaxLifetimeMs + 60_000 },
          input: tool.bootstrap?.input ?? {},
          secrets: resolved.values,
          request: { id: rid, workspace: config.workspace },
          isolation: 'process',
          ...(tool.api ? { api: createToolApi({ client, tool: name, rid, config, schemas: tool.apiSchemas }) } : {}),
          signal: AbortSignal.any([signal, lifetime]),
        });
        const outcome = result.ok ? 'ended' : lifetime.aborted ? 'lifetime' : result.error.code;
        status.last_ended_at = new Date().toISOString();
        status.last_outcome = outcome;
        options.context.live?.({
          type: 'execution:finished',
          rid,
          tool: name,
          kind: 'continuous',
          status: result.ok ? 'success' : 'error',
          ...(result.ok ? {} : { code: lifetime.aborted ? 'lifetime' : result.error.code }),
          durationMs: Date.now() - startedAt,
        });
        for (const line of result.logs.slice(-20)) log.info('continuous tool log', { line });
        // Stopped on purpose (drain, lease lost, lifetime) or ended cleanly: info; a crash or error: warn.
        log[result.ok || lifetime.aborted || signal.aborted ? 'info' : 'warn']('continuous tool run ended', {
          outcome,
          durationMs: Date.now() - startedAt,
          ...(result.ok ? {} : { error: result.error.message }),
        });
        if (signal.aborted) break;
        if (Date.now() - startedAt > MAX_BACKOFF_MS || lifetime.aborted) restarts = 0;
        status.state = 'BACKOFF';
        await sleep(backoffMs({ initialMs: MIN_BACKOFF_MS, maxMs: MAX_BACKOFF_MS }, restarts++), undefined, {
          signal,
        }).catch(() => undefined);
      }
    } finally {
      clearInterval(renewal);
      if (lost.signal.aborted) log.warn('continuous tool lease lost; stopped', { reason: String(lost.signal.reason) });
      // A lease that cannot be given back (store gone at shutdown) runs out by itself within one lease.
      await claim
        .release()
        .catch((error: unknown) => log[stop.aborted ? 'info' : 'warn']('lease release failed', { error }));
      status.state = 'STANDBY';
    }
  };

  return {
    async reconcile() {
      if (stopping.signal.aborted) return;
      const wanted = new Map<string, string>();
      for (const entry of catalog.entries()) {
        const route = catalog.resolve(entry.name);
        if (route?.kind === 'code' && route.tool.bootstrap?.mode === 'continuous')
          wanted.set(route.tool.name, route.tool.version);
      }
      for (const [name, sup] of supervisors) {
        if (wanted.get(name) === sup.status.version) continue;
        sup.stop.abort();
        await sup.done;
        supervisors.delete(name);
      }
      for (const [name, version] of wanted) {
        if (supervisors.has(name)) continue;
        const stop = new AbortController();
        const status: ContinuousStatus = { tool: name, version, state: 'STANDBY', runs: 0 };
        // Drain (the intake signal) stops it as well as the extension's own stop.
        const done = supervise(
          name,
          version,
          status,
          AbortSignal.any([stop.signal, stopping.signal, options.context.signal]),
        ).catch((error: unknown) => logger.warn('continuous supervisor failed', { tool: name, error }));
        supervisors.set(name, { status, done, stop });
      }
    },
    status: () => [...supervisors.values()].map((s) => ({ ...s.status })),
    async stop() {
      stopping.abort();
      await Promise.all([...supervisors.values()].map((s) => s.done));
    },
  };
}
