// Tools that act on their own (docs/autonomy.md), as one service extension: subscriptions
// (subscriptions.ts), `once` bootstrap runs (once.ts) and continuous tools (continuous.ts). Each
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
import { readSchedules, type ScheduleStatus } from './schedules.js';
import { createSubscriptions, type Subscriptions } from './subscriptions.js';

/** The autonomy extension: subscriptions, once-runs and continuous tools. */
export function createAutonomyExtension(): ServiceExtension & { status(): unknown } {
  let subscriptions: Subscriptions | undefined;
  let once: ReturnType<typeof createOnceRuns> | undefined;
  let continuous: ContinuousRuns | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let ctx: ExtensionContext | undefined;
  let schedules: ScheduleStatus[] = [];

  const pass = (): Promise<void> =>
    (running ??= (async () => {
      try {
        await subscriptions?.refresh();
        await once?.reconcile();
        await continuous?.reconcile();
        await subscriptions?.catchUp();
        if (ctx) schedules = await readSchedules(ctx.client);
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
    schedules,
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
      });
      once = createOnceRuns({ requests, keys, catalog, logger, signal });
      continuous = createContinuousRuns({ context });
      if (context.metrics)
        registerAutonomyMetrics(context.metrics, () => ({
          subscriptions: subscriptions?.status() ?? [],
          continuous: continuous?.status() ?? [],
        }));
      timer = setInterval(() => void pass(), config.scanIntervalMs);
      timer.unref();
      // The catalog is loaded after the extensions start: the first pass waits for the first scan tick.
      signal.addEventListener('abort', () => clearInterval(timer), { once: true });
    },
    handleEvent(event: StoreEvent) {
      subscriptions?.handleEvent(event);
    },
    onReconnect() {
      void pass();
    },
    async stop() {
      clearInterval(timer);
      await continuous?.stop();
      await running;
    },
    adminRoutes: () => new Map([['/autonomy', route]]),
    status,
  };
}
