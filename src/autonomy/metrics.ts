// The autonomy figures on `/metrics`, read from the extension's state at scrape time.

import { Gauge, type Registry } from 'prom-client';
import type { ContinuousStatus } from './continuous.js';
import type { SubscriptionStatus } from './subscriptions.js';

/** Registers the gauges of subscriptions and continuous tools in `registry`. */
export function registerAutonomyMetrics(
  registry: Registry,
  read: () => { subscriptions: SubscriptionStatus[]; continuous: ContinuousStatus[] },
): void {
  new Gauge({
    name: 'tools_runner_subscription_triggers',
    help: 'Subscription triggers on this replica since start, by subscription and outcome (written, refused_depth, deferred_rate).',
    labelNames: ['subscription', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of read().subscriptions) {
        this.set({ subscription: s.id, outcome: 'written' }, s.triggered);
        this.set({ subscription: s.id, outcome: 'refused_depth' }, s.refused_depth);
        this.set({ subscription: s.id, outcome: 'deferred_rate' }, s.deferred_rate);
      }
    },
  });
  new Gauge({
    name: 'tools_runner_continuous_running',
    help: 'Whether this replica runs the continuous tool now (1) or stands by (0).',
    labelNames: ['tool'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const c of read().continuous) this.set({ tool: c.tool }, c.state === 'RUNNING' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'tools_runner_continuous_runs',
    help: 'Runs of the continuous tool started by this replica since start (restarts included).',
    labelNames: ['tool'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const c of read().continuous) this.set({ tool: c.tool }, c.runs);
    },
  });
}
