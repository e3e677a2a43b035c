// Continuous tools (docs/autonomy.md): an operator tool whose `context.bootstrap.mode` is
// "continuous" runs as one live instance across all replicas, for as long as the service runs.
//
// States per tool: STANDBY (another replica holds the lease, lease.ts) -> RUNNING (the tool runs in
// the sandbox) -> BACKOFF (it ended or crashed: restarted after 1 s, doubling to 60 s, reset after a
// run of a minute) -> RUNNING ... -> STOPPED (drain). A run is exempt from the call timeout and its
// per-call budgets are a rate (they renew every BUDGET_WINDOW_MS); it is bound by the tool's memory
// and CPU limits and by `continuousMaxLifetimeMs` (then it is restarted). Three failed runs in a row
// make it `failing`: a warning in the log and on /health. Only the operator's tools get here: the
// screen honours `bootstrap` for bootstrap-directory tools alone (src/screen/autonomy.ts).

import { setTimeout as sleep } from 'node:timers/promises';
import type { ExtensionContext } from '../extension.js';
import { sandboxToolOf } from '../sandbox/index.js';
import { createToolApi } from '../tool-context/tool-api.js';
import { backoffMs } from '../backoff.js';
import { createLeaseClaims, whileLeased } from './lease.js';

type State = 'STANDBY' | 'RUNNING' | 'BACKOFF' | 'STOPPED';

/** What the console and /autonomy show of one continuous tool on this replica. */
export interface ContinuousStatus {
  tool: string;
  version: string;
  state: State;
  /** Holder of the lease as last seen (this replica when RUNNING/BACKOFF). */
  holder?: string;
  runs: number;
  /** Runs that ended in an error in a row (0 after a clean or long run). */
  failures: number;
  /** Three failed runs in a row. */
  failing: boolean;
  /** context.api calls refused for a budget (rate.exceeded) since start. */
  api_refusals: number;
  last_started_at?: string;
  last_ended_at?: string;
  /** `ended`, `stopped` (drain or lease lost), `lifetime`, or the error code. */
  last_outcome?: string;
}

export interface ContinuousRuns {
  reconcile(): Promise<void>;
  status(): ContinuousStatus[];
  stop(): Promise<void>;
}

const MIN_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 60_000;
/** A continuous run's per-call budgets (context.api, output, logs) start anew this often. */
export const BUDGET_WINDOW_MS = 10_000;
const FAILING_AFTER = 3;

/** Creates the supervisor of the catalog's continuous tools. */
export function createContinuousRuns(options: { context: ExtensionContext }): ContinuousRuns {
  const { client, catalog, config, logger, replica, sandbox, secrets } = options.context;
  const leaseMs = config.continuousLeaseMs;
  const claims = createLeaseClaims(options.context, leaseMs);
  const stopping = new AbortController();
  const supervisors = new Map<string, { status: ContinuousStatus; done: Promise<void>; stop: AbortController }>();

  /** Runs the tool while this replica holds the lease; returns when the lease is lost or `signal` aborts. */
  const lead = async (name: string, version: string, status: ContinuousStatus, signal: AbortSignal): Promise<void> => {
    const log = logger.child({ tool: name, component: 'continuous' });
    status.holder = replica;
    let restarts = 0;
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
      let refusalsLogged = 0;
      const result = await sandbox.run({
        // Exempt from the call timeout: bounded by the operator's maximum lifetime instead.
        tool: { ...sandboxToolOf(tool), timeoutMs: config.continuousMaxLifetimeMs + 60_000 },
        input: tool.bootstrap?.input ?? {},
        secrets: resolved.values,
        request: { id: rid, workspace: config.workspace },
        isolation: 'process',
        lasting: {
          windowMs: BUDGET_WINDOW_MS,
          onRefusal: (message) => {
            status.api_refusals++;
            // One warning per window at most: a tool in a retry loop does not flood the log.
            if (Date.now() - refusalsLogged >= BUDGET_WINDOW_MS) {
              refusalsLogged = Date.now();
              log.warn('continuous tool over its context.api budget', { message, refusals: status.api_refusals });
            }
          },
        },
        ...(tool.api
          ? {
              api: createToolApi({
                client,
                tool: name,
                rid,
                config,
                schemas: tool.apiSchemas,
                windowMs: BUDGET_WINDOW_MS,
              }),
            }
          : {}),
        signal: AbortSignal.any([signal, lifetime]),
      });
      const outcome = result.ok
        ? 'ended'
        : signal.aborted
          ? 'stopped'
          : lifetime.aborted
            ? 'lifetime'
            : result.error.code;
      const failed = !result.ok && !signal.aborted && !lifetime.aborted;
      const durationMs = Date.now() - startedAt;
      status.last_ended_at = new Date().toISOString();
      status.last_outcome = outcome;
      status.failures = failed ? status.failures + 1 : 0;
      status.failing = status.failures >= FAILING_AFTER;
      options.context.live?.({
        type: 'execution:finished',
        rid,
        tool: name,
        kind: 'continuous',
        status: result.ok ? 'success' : outcome === 'stopped' ? 'stopped' : 'error',
        ...(failed ? { code: outcome } : {}),
        durationMs,
      });
      for (const line of result.logs.slice(-20)) log.info('continuous tool log', { line });
      // Stopped on purpose (drain, lease lost, lifetime) or ended cleanly: info; a failure: warn.
      log[failed ? 'warn' : 'info']('continuous tool run ended', {
        outcome,
        durationMs,
        ...(failed ? { error: result.error.message, failures: status.failures } : {}),
      });
      if (status.failures === FAILING_AFTER) log.warn('continuous tool keeps failing', { failures: status.failures });
      if (signal.aborted) break;
      if (durationMs > MAX_BACKOFF_MS || lifetime.aborted) restarts = 0;
      status.state = 'BACKOFF';
      await sleep(backoffMs({ initialMs: MIN_BACKOFF_MS, maxMs: MAX_BACKOFF_MS }, restarts++), undefined, {
        signal,
      }).catch(() => undefined);
    }
  };

  const supervise = async (name: string, version: string, status: ContinuousStatus, stop: AbortSignal) => {
    await whileLeased(
      {
        claims,
        target: { breadcrumbId: `continuous-${name}`, rid: `continuous:${name}` },
        leaseMs,
        stop,
        log: logger.child({ tool: name, component: 'continuous' }),
        onStandby: (holder) => {
          status.state = 'STANDBY';
          if (holder !== undefined) status.holder = holder;
        },
      },
      (signal) => lead(name, version, status, signal),
    );
    status.state = 'STOPPED';
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
        const status: ContinuousStatus = {
          tool: name,
          version,
          state: 'STANDBY',
          runs: 0,
          failures: 0,
          failing: false,
          api_refusals: 0,
        };
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
