// Per-tool execution figures for the console since this process started: calls, errors by code,
// the last calls, and one-minute buckets with latency samples (p50/p99 over time).
//
// Fed by the request handler's start/finish reports. Memory is bounded: a fixed number of tools
// (names come from requests, which any agent writes; unknown names are folded into one entry by
// the caller), recent calls per tool, buckets per tool and samples per bucket.

import { BoundedMap } from '../bounded.js';

/** One finished (or running) call as the console shows it. */
export interface CallRecord {
  rid: string;
  tool: string;
  agentId?: string;
  /** `withdrawn`: the request was deleted while it ran (e.g. an MCP client cancelled); `released`: a drain
   * gave the call back (another attempt answers it); `parked`: it waits (an approval, another answer). */
  status: 'running' | 'success' | 'error' | 'withdrawn' | 'released' | 'parked';
  code?: string;
  durationMs?: number;
  startedAt: string;
  finishedAt?: string;
}

/** One minute of one tool. */
export interface TimeBucket {
  /** Start of the minute (epoch ms). */
  t: number;
  calls: number;
  errors: number;
  codes: Record<string, number>;
  p50: number | null;
  p99: number | null;
}

export interface ToolStats {
  calls: number;
  errors: number;
  codes: Record<string, number>;
  recent: CallRecord[];
  buckets: TimeBucket[];
}

export interface ConsoleStats {
  started(report: { rid: string; tool: string; agentId?: string }): void;
  finished(report: {
    rid: string;
    tool: string;
    agentId?: string;
    status: 'success' | 'error';
    code?: string;
    durationMs: number;
  }): void;
  /** A started call ended without an answer (not counted as a call). */
  ended(report: { rid: string; tool: string; outcome: 'withdrawn' | 'released' | 'parked' }): void;
  /** Figures of one tool (zeros when it never ran). */
  tool(name: string): ToolStats;
  /** Calls and errors of every tool that ran. */
  totals(): Map<string, { calls: number; errors: number }>;
  /** A call seen recently, by rid. */
  call(rid: string): CallRecord | undefined;
}

const MAX_TOOLS = 5_000;
const RECENT = 50;
const BUCKETS = 60;
const SAMPLES = 512;
const MINUTE = 60_000;
const MAX_CALLS_BY_RID = 10_000;

interface ToolFigures {
  calls: number;
  errors: number;
  codes: Map<string, number>;
  recent: CallRecord[];
  buckets: Array<{
    t: number;
    calls: number;
    errors: number;
    codes: Map<string, number>;
    samples: number[];
    seen: number;
  }>;
}

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return Math.round((sorted[index] as number) * 100) / 100;
}

/** Creates the recorder; `now` is injectable for tests of the bucketing. */
export function createConsoleStats(options: { now?: () => number } = {}): ConsoleStats {
  const now = options.now ?? Date.now;
  const tools = new Map<string, ToolFigures>();
  const byRid = new BoundedMap<string, CallRecord>(MAX_CALLS_BY_RID);

  const entry = (name: string): ToolFigures | undefined => {
    let found = tools.get(name);
    if (!found) {
      if (tools.size >= MAX_TOOLS) return undefined;
      found = { calls: 0, errors: 0, codes: new Map(), recent: [], buckets: [] };
      tools.set(name, found);
    }
    return found;
  };

  const remember = (record: CallRecord): void => {
    byRid.set(record.rid, record);
  };

  return {
    started(report) {
      const e = entry(report.tool);
      if (!e) return;
      const record: CallRecord = {
        rid: report.rid,
        tool: report.tool,
        ...(report.agentId ? { agentId: report.agentId } : {}),
        status: 'running',
        startedAt: new Date(now()).toISOString(),
      };
      e.recent.unshift(record);
      if (e.recent.length > RECENT) e.recent.pop();
      remember(record);
    },
    ended(report) {
      const record = tools.get(report.tool)?.recent.find((r) => r.rid === report.rid && r.status === 'running');
      if (!record) return;
      record.status = report.outcome;
      record.finishedAt = new Date(now()).toISOString();
      remember(record);
    },
    finished(report) {
      const e = entry(report.tool);
      if (!e) return;
      const at = now();
      let record = e.recent.find((r) => r.rid === report.rid && r.status === 'running');
      if (!record) {
        record = {
          rid: report.rid,
          tool: report.tool,
          status: 'running',
          startedAt: new Date(at - report.durationMs).toISOString(),
        };
        e.recent.unshift(record);
        if (e.recent.length > RECENT) e.recent.pop();
      }
      record.status = report.status;
      record.durationMs = Math.round(report.durationMs * 100) / 100;
      record.finishedAt = new Date(at).toISOString();
      if (report.agentId) record.agentId = report.agentId;
      if (report.code) record.code = report.code;
      remember(record);

      e.calls += 1;
      const code = report.status === 'error' ? (report.code ?? 'error') : 'ok';
      if (report.status === 'error') {
        e.errors += 1;
        e.codes.set(code, (e.codes.get(code) ?? 0) + 1);
      }
      const t = Math.floor(at / MINUTE) * MINUTE;
      let bucket = e.buckets[e.buckets.length - 1];
      if (!bucket || bucket.t !== t) {
        bucket = { t, calls: 0, errors: 0, codes: new Map(), samples: [], seen: 0 };
        e.buckets.push(bucket);
        if (e.buckets.length > BUCKETS) e.buckets.shift();
      }
      bucket.calls += 1;
      if (report.status === 'error') {
        bucket.errors += 1;
        bucket.codes.set(code, (bucket.codes.get(code) ?? 0) + 1);
      }
      // Reservoir sampling keeps the quantiles honest with a fixed number of samples.
      bucket.seen += 1;
      if (bucket.samples.length < SAMPLES) bucket.samples.push(report.durationMs);
      else {
        const slot = Math.floor(Math.random() * bucket.seen);
        if (slot < SAMPLES) bucket.samples[slot] = report.durationMs;
      }
    },
    tool(name) {
      const e = tools.get(name);
      if (!e) return { calls: 0, errors: 0, codes: {}, recent: [], buckets: [] };
      return {
        calls: e.calls,
        errors: e.errors,
        codes: Object.fromEntries(e.codes),
        recent: e.recent.map((r) => ({ ...r })),
        buckets: e.buckets.map((b) => {
          const sorted = [...b.samples].sort((x, y) => x - y);
          return {
            t: b.t,
            calls: b.calls,
            errors: b.errors,
            codes: Object.fromEntries(b.codes),
            p50: quantile(sorted, 0.5),
            p99: quantile(sorted, 0.99),
          };
        }),
      };
    },
    totals() {
      const out = new Map<string, { calls: number; errors: number }>();
      for (const [name, e] of tools) out.set(name, { calls: e.calls, errors: e.errors });
      return out;
    },
    call(rid) {
      const record = byRid.get(rid);
      return record ? { ...record } : undefined;
    },
  };
}
