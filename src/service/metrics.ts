// Prometheus metrics of one runner (its own registry, so tests and several services never clash).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ExecutionReport } from '../request/job.js';
import { STAGES } from '../request/timings.js';

export interface MetricsSources {
  queue(): { queued: number; running: number; backlog: number; capacity: number };
  pool(): {
    warm: number;
    busy: number;
    spawned?: number;
    evicted?: number;
    retired?: number;
    waitedForBusy?: number;
    lent?: number;
  };
  catalog(): { active: number; rejected: number };
  /** Whether a tool name is known (unknown names are folded into one label value). */
  isKnownTool(name: string): boolean;
  /** Log lines lost because the log sink failed (a reader that went away). */
  droppedLogLines?(): number;
  /** The embedded store's database size (absent with an external store: it serves its own /metrics). */
  storeSizes?(): { dbBytes: number; walBytes: number };
}

export interface Metrics {
  registry: Registry;
  recordExecution(report: ExecutionReport): void;
  recordReconnect(): void;
  /** A request-like record the runner will never answer (src/request/ignored-requests.ts), by reason. */
  recordIgnored(reason: string): void;
  /** An error no handler caught (logged; the service keeps serving). */
  recordUncaught(): void;
}

/** How often the event-loop lag metrics sample (ms). */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** Creates the metrics registry with gauges that read live values at scrape time. */
export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new Registry();
  // The event-loop lag metrics sample with a timer of their own. At prom-client's default (every 10 ms)
  // it woke the process 100 times a second, idle or not: ~6 ms of CPU per second of an otherwise
  // idle Node process, against ~0.9 at 100 ms (bench/journal/2026-11-rounds.md, "An idle runner"). At 100 ms a
  // timer late by any stall that spans a tick is still recorded; a stall between two ticks is not.
  collectDefaultMetrics({
    register: registry,
    prefix: 'tools_runner_process_',
    eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
  });
  const requests = new Counter({
    name: 'tools_runner_requests_total',
    help: 'Requests answered, by tool, status and error code.',
    labelNames: ['tool', 'status', 'code'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'tools_runner_request_duration_seconds',
    help: 'Time from job start to answer, by tool and status.',
    labelNames: ['tool', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const stages = new Histogram({
    name: 'tools_runner_stage_duration_seconds',
    help: 'Time of each stage of a request (queued, claim, route, validate, secrets, sandbox_wait, sandbox_run, respond).',
    labelNames: ['stage'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const uncaught = new Counter({
    name: 'tools_runner_uncaught_errors_total',
    help: 'Errors that escaped every handler; each is logged and the service keeps serving (should stay 0).',
    registers: [registry],
  });
  const ignored = new Counter({
    name: 'tools_runner_ignored_requests_total',
    help: 'Records meant as requests that this runner will never answer (schema typo, no or another workspace, no tool:request tag), by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  let droppedSeen = 0;
  new Counter({
    name: 'tools_runner_log_lines_dropped_total',
    help: 'Log lines lost because the log sink failed (e.g. EPIPE: the reader of stderr went away).',
    registers: [registry],
    collect() {
      const now = sources.droppedLogLines?.() ?? 0;
      if (now > droppedSeen) this.inc(now - droppedSeen);
      droppedSeen = Math.max(droppedSeen, now);
    },
  });
  const reconnects = new Counter({
    name: 'tools_runner_stream_reconnects_total',
    help: 'Event stream reconnections.',
    registers: [registry],
  });
  if (sources.storeSizes) {
    const sizes = sources.storeSizes;
    new Gauge({
      name: 'tools_runner_store_db_bytes',
      help: "Size of the embedded store's database (SQLite: the file and its write-ahead log; PostgreSQL: pg_database_size, as of the last sweep or store /metrics).",
      labelNames: ['file'] as const,
      registers: [registry],
      collect() {
        const now = sizes();
        this.set({ file: 'db' }, now.dbBytes);
        this.set({ file: 'wal' }, now.walBytes);
      },
    });
  }
  new Gauge({
    name: 'tools_runner_queue_depth',
    help: 'Requests waiting in the in-memory backlog (not yet running).',
    registers: [registry],
    collect() {
      this.set(sources.queue().queued);
    },
  });
  new Gauge({
    name: 'tools_runner_jobs_running',
    help: 'Requests executing now.',
    registers: [registry],
    collect() {
      this.set(sources.queue().running);
    },
  });
  new Gauge({
    name: 'tools_runner_pool_size',
    help: 'Deno processes in the pool, by state.',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const pool = sources.pool();
      this.set({ state: 'warm' }, pool.warm);
      this.set({ state: 'busy' }, pool.busy);
    },
  });
  // the pool's own counters, read at scrape time (a counter that only grows)
  const poolCounter = (
    name: string,
    help: string,
    read: (pool: ReturnType<MetricsSources['pool']>) => number | undefined,
  ): void => {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read(sources.pool()) ?? 0);
      },
    });
  };
  poolCounter('tools_runner_pool_spawns_total', 'Deno processes spawned.', (pool) => pool.spawned);
  poolCounter(
    'tools_runner_pool_evictions_total',
    'Deno processes killed to make room for another permission set or tool version.',
    (pool) => pool.evicted,
  );
  poolCounter(
    'tools_runner_pool_retirements_total',
    'Deno processes retired: unused too long, busy while parked, at --warm-max-calls, or no room to park.',
    (pool) => pool.retired,
  );
  poolCounter(
    'tools_runner_pool_waits_for_busy_total',
    'Calls that waited for a busy warm process of their tool version instead of a fresh one.',
    (pool) => pool.waitedForBusy,
  );
  new Gauge({
    name: 'tools_runner_jobs_waiting',
    help: 'Running calls whose sandbox process sleeps (a timer, the network, a nested call): their CPU slot is lent.',
    registers: [registry],
    collect() {
      this.set(sources.pool().lent ?? 0);
    },
  });
  new Gauge({
    name: 'tools_runner_catalog_tools',
    help: 'Tools in the catalog, by state.',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const catalog = sources.catalog();
      this.set({ state: 'active' }, catalog.active);
      this.set({ state: 'rejected' }, catalog.rejected);
    },
  });

  return {
    registry,
    recordExecution(report) {
      const tool = sources.isKnownTool(report.tool) ? report.tool : '(unknown)';
      requests.inc({ tool, status: report.status, code: report.code ?? 'ok' });
      duration.observe({ tool, status: report.status }, report.durationMs / 1000);
      for (const stage of STAGES) if (report.timings) stages.observe({ stage }, report.timings[stage] / 1000);
    },
    recordUncaught() {
      uncaught.inc();
    },
    recordReconnect() {
      reconnects.inc();
    },
    recordIgnored(reason) {
      ignored.inc({ reason });
    },
  };
}
