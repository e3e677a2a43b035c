// The autonomy figures on `/metrics`, read from the extension's state at scrape time.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ContinuousStatus } from './continuous.js';
import type { ScheduleStatus, SchedulerFigures } from './scheduler.js';
import type { SubscriptionStatus } from './subscriptions.js';

/** Registers the gauges of subscriptions, continuous tools and schedules in `registry`. */
export function registerAutonomyMetrics(
  registry: Registry,
  source: {
    read: () => { subscriptions: SubscriptionStatus[]; continuous: ContinuousStatus[]; schedules: ScheduleStatus[] };
    scheduler: SchedulerFigures;
  },
): void {
  const { read, scheduler } = source;
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
  new Gauge({
    name: 'tools_runner_continuous_api_refusals',
    help: 'context.api calls of the continuous tool refused for a budget (rate.exceeded) on this replica since start.',
    labelNames: ['tool'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const c of read().continuous) this.set({ tool: c.tool }, c.api_refusals);
    },
  });
  new Gauge({
    name: 'tools_runner_schedules',
    help: 'Schedule definitions by state (active, disabled, refused over a writer’s cap, invalid).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const state of ['active', 'disabled', 'refused', 'invalid']) this.set({ state }, 0);
      for (const s of read().schedules) this.inc({ state: s.state });
    },
  });
  const ticks = new Counter({
    name: 'tools_runner_schedule_ticks_total',
    help: 'Schedule ticks this replica published (on_time, late after downtime) or counted as missed.',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      for (const outcome of ['on_time', 'late', 'missed'] as const) {
        const now = scheduler.ticks[outcome];
        const known = seen[outcome];
        if (now > known) ticks.inc({ outcome }, now - known);
        seen[outcome] = now;
      }
    },
  });
  const seen = { on_time: 0, late: 0, missed: 0 };
  new Histogram({
    name: 'tools_runner_schedule_lag_seconds',
    help: 'How long after its due time each schedule tick was written, in seconds.',
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60],
    registers: [registry],
    collect() {
      for (const lag of scheduler.drainLags()) this.observe(lag);
    },
  });
}
