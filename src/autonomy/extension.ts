// Tools that act on their own (docs/autonomy.md), as one service extension: subscriptions
// (subscriptions.ts), `once` bootstrap runs (once.ts), continuous tools (continuous.ts) and the
// scheduler (scheduler.ts). Each
// writes ordinary sealed requests or holds a lease; nothing here runs a tool outside the one request
// path except a continuous tool's supervised run. Every scan interval it re-reads the catalog (new
// tools, versions), writes due once-runs and catches up on subscriptions; after a reconnect at once.
// `/autonomy` on the admin port shows the state (the console reads it).

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequestClient } from '../breadcrumbs/index.js';
import type { StoreEvent } from '../breadcrumbs/messages.js';
import type { AdminRoute, ExtensionContext, ServiceExtension } from '../extension.js';
import { createContinuousRuns, type ContinuousRuns } from './continuous.js';
import { registerAutonomyMetrics } from './metrics.js';
import { createOnceRuns } from './once.js';
import { createScheduler, type Scheduler } from './scheduler.js';
import { createSubscriptions, type Subscriptions } from './subscriptions.js';

/** The autonomy extension: subscriptions, once-runs and continuous tools. */
export function createAutonomyExtension(): ServiceExtension & { status(): unknown } {
  let subscriptions: Subscriptions | undefined;
  let once: ReturnType<typeof createOnceRuns> | undefined;
  let continuous: ContinuousRuns | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let ctx: ExtensionContext | undefined;
  let scheduler: Scheduler | undefined;

  const pass = (): Promise<void> =>
    (running ??= (async () => {
      try {
        await subscriptions?.refresh();
        await once?.reconcile();
        await continuous?.reconcile();
        await subscriptions?.catchUp();
      } catch (error) {
        // While the service stops, store trouble is expected: not worth a warning.
        if (ctx?.signal.aborted) ctx.logger.debug('autonomy pass ended by shutdown', { error });
        else ctx?.logger.warn('autonomy pass failed; retried at the next scan', { error });
      } finally {
        running = undefined;
      }
    })());

  const status = (): unknown => ({
    subscriptions: subscriptions?.status() ?? [],
    once: once?.status() ?? [],
    continuous: continuous?.status() ?? [],
    scheduler: scheduler?.status() ?? { schedules: [] },
  });

  const route: AdminRoute = async (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(status()));
  };

  return {
    name: 'autonomy',
    async start(context) {
      ctx = context;
      const { client, keys, catalog, config, logger, signal } = context;
      const requests = createRequestClient({ client, keys, workspace: config.workspace });
      subscriptions = createSubscriptions({
        client,
        requests,
        keys,
        catalog,
        logger,
        signal,
        maxDepth: config.nestedCallMaxDepth,
        ratePerMinute: config.subscriptionRatePerMinute,
        maxPerOwner: config.subscriptionMaxPerOwner,
      });
      once = createOnceRuns({ requests, keys, catalog, logger, signal });
      continuous = createContinuousRuns({ context });
      scheduler = createScheduler(context);
      const ticks = scheduler;
      if (context.metrics)
        registerAutonomyMetrics(context.metrics, {
          read: () => ({
            subscriptions: subscriptions?.status() ?? [],
            continuous: continuous?.status() ?? [],
            schedules: ticks.status().schedules,
          }),
          scheduler: ticks.figures,
        });
      timer = setInterval(() => void pass(), config.scanIntervalMs);
      timer.unref();
      // The catalog is loaded after the extensions start: the first pass waits for the first scan tick.
      signal.addEventListener('abort', () => clearInterval(timer), { once: true });
    },
    handleEvent(event: StoreEvent) {
      subscriptions?.handleEvent(event);
      scheduler?.handleEvent(event);
    },
    onReconnect() {
      scheduler?.onReconnect();
      void pass();
    },
    warnings: () => [
      ...(scheduler?.warnings() ?? []),
      ...(continuous?.status() ?? [])
        .filter((c) => c.failing)
        .map((c) => `continuous tool ${c.tool} keeps failing (${c.failures} runs in a row: ${c.last_outcome})`),
    ],
    async stop() {
      clearInterval(timer);
      await Promise.all([continuous?.stop(), scheduler?.stop()]);
      await running;
    },
    adminRoutes: () => new Map([['/autonomy', route]]),
    status,
  };
}
