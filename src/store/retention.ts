// Retention: the store removes the runner's finished records once they are older than the
// operator's retention, applies upstream's automatic TTL rules (rcrt-server's hygiene) to records
// without a TTL, and gives the freed pages back to the file system (incremental vacuum).
//
// What goes, and when (R = retentionMs, A = auditRetentionMs, both counted from a record's last write):
//   answer (tool.response.v1) older than R   → deleted with its request — unless the request's lease
//     is not `done` (the runner has not finished it) or the two belong to different owners (then
//     only the answer goes: a forged answer never removes another owner's request);
//   claim (tool.claim.v1) older than R and past its expires_at; progress (tool.progress.v1) older than R;
//   idempotency records (tool.idempotency.v1) older than A;
//   approval requests older than A once decided or expired (a pending one stays), and decisions
//     older than A whose approval request is gone;
//   upstream's rules: health-check requests (tag `health:check`) 5 min, system.ping.v1 10 min,
//     agent.thinking/analysis 6 h, agent.memory/temp_state 24 h, agent.metrics/tool.performance
//     7 days, execution logs (tool.response/tool.error tagged `log:execution`) 30 days;
//   leases past their expiry whose request is gone; Idempotency-Keys older than 2 R whose
//     breadcrumb is gone.
// Never deleted: a request without an answer, a pending approval, a live lease or claim.
// Each table is walked oldest write first and the walk stops at the first record younger than its
// cutoff (write order is updated_at order, db.ts), so a sweep reads little more than it deletes.

import { statSync } from 'node:fs';
import type { BreadcrumbWrites } from './breadcrumb-writes.js';
import type { Db } from './db.js';
import type { Leases } from './leases.js';

/** Retention settings (0: keep forever). */
export interface RetentionOptions {
  retentionMs: number;
  auditRetentionMs: number;
}

/** What one sweep removed. */
export interface SweepResult {
  removed: number;
  leases: number;
  keys: number;
  freedPages: number;
}

/** The retention sweeper and the database's size. */
export interface Retention {
  sweep(now?: number): SweepResult;
  /** Bytes of the database file (pages in use and free), and of its WAL. */
  sizes(): { dbBytes: number; freeBytes: number; walBytes: number };
  /** Records removed by retention since the store started. */
  removedTotal(): number;
}

interface Row {
  write_seq: number;
  id: string;
  owner_id: string;
  updated_ms: number;
  context: string;
  tags: string;
  ttl: string | null;
}

const PAGE = 200;
const BATCH = 500;
/** Most records one sweep removes (the rest wait for the next sweep; the event loop is not held long). */
const MAX_PER_SWEEP = 5000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Upstream rcrt-server's hygiene rules for records without a TTL: schema, required tag, age. */
const UPSTREAM_RULES: Array<{ schema: string; tag?: string; ageMs: number }> = [
  { schema: 'tool.request.v1', tag: 'health:check', ageMs: 5 * MINUTE },
  { schema: 'system.ping.v1', ageMs: 10 * MINUTE },
  { schema: 'agent.thinking.v1', ageMs: 6 * HOUR },
  { schema: 'agent.analysis.v1', ageMs: 6 * HOUR },
  { schema: 'agent.memory.v1', ageMs: DAY },
  { schema: 'agent.temp_state.v1', ageMs: DAY },
  { schema: 'agent.metrics.v1', ageMs: 7 * DAY },
  { schema: 'tool.performance.v1', ageMs: 7 * DAY },
  { schema: 'tool.response.v1', tag: 'log:execution', ageMs: 30 * DAY },
  { schema: 'tool.error.v1', tag: 'log:execution', ageMs: 30 * DAY },
];

/** Builds the sweeper over `db`, deleting through `writes` (so each removal emits its event). */
export function createRetention(
  db: Db,
  writes: BreadcrumbWrites,
  leases: Leases,
  options: RetentionOptions,
): Retention {
  const page = db.prepare(
    'SELECT write_seq, id, owner_id, updated_ms, context, tags, ttl FROM breadcrumbs WHERE schema_name = ? AND write_seq > ? ORDER BY write_seq LIMIT ?',
  );
  const byId = db.prepare('SELECT write_seq, owner_id FROM breadcrumbs WHERE id = ?');
  const leaseState = db.prepare('SELECT state FROM leases WHERE name = ?').pluck();
  const hasTag = db.prepare('SELECT 1 FROM breadcrumb_tags WHERE tag = ? LIMIT 1').pluck();
  const pruneKeys =
    db.prepare(`DELETE FROM idempotency_keys WHERE key IN (SELECT k.key FROM idempotency_keys k WHERE k.created_at < ?
    AND NOT EXISTS (SELECT 1 FROM breadcrumbs b WHERE b.id = k.breadcrumb_id) LIMIT ?)`);
  const pageCount = db.prepare('PRAGMA page_count').pluck();
  const freeCount = db.prepare('PRAGMA freelist_count').pluck();
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  let total = 0;

  // Walks `schema` oldest write first until a record is younger than `cutoff`; `judge` picks what goes.
  const walk = (schema: string, cutoff: number, judge: (row: Row) => number[] | undefined, out: Set<number>): void => {
    let after = 0;
    for (;;) {
      const rows = page.all(schema, after, PAGE) as Row[];
      for (const row of rows) {
        if (row.updated_ms >= cutoff || out.size >= MAX_PER_SWEEP) return;
        after = row.write_seq;
        for (const seq of judge(row) ?? []) out.add(seq);
      }
      if (rows.length < PAGE) return;
    }
  };
  const json = (text: string): Record<string, unknown> => {
    try {
      const value = JSON.parse(text) as unknown;
      return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };

  const sweep = (now = Date.now()): SweepResult => {
    const doomed = new Set<number>();
    const R = options.retentionMs;
    const A = options.auditRetentionMs;
    const nowIso = new Date(now).toISOString();
    if (R > 0) {
      walk(
        'tool.response.v1',
        now - R,
        (answer) => {
          const metadata = json(answer.context).metadata as Record<string, unknown> | undefined;
          const requestId =
            typeof metadata?.request_breadcrumb_id === 'string' ? metadata.request_breadcrumb_id : undefined;
          const request =
            requestId === undefined
              ? undefined
              : (byId.get(requestId) as { write_seq: number; owner_id: string } | undefined);
          if (!request) return [answer.write_seq];
          const state = leaseState.get(requestId) as string | undefined;
          if (state !== undefined && state !== 'done') return undefined; // the runner has not finished it
          if (request.owner_id !== answer.owner_id) return [answer.write_seq];
          return [answer.write_seq, request.write_seq];
        },
        doomed,
      );
      walk(
        'tool.claim.v1',
        now - R,
        (claim) => {
          const expires = json(claim.context).expires_at;
          return typeof expires === 'string' && expires < nowIso ? [claim.write_seq] : undefined;
        },
        doomed,
      );
      walk('tool.progress.v1', now - R, (row) => [row.write_seq], doomed);
    }
    if (A > 0) {
      walk('tool.idempotency.v1', now - A, (row) => [row.write_seq], doomed);
      walk(
        'tool.approval.request.v1',
        now - A,
        (approval) => {
          const expires = json(approval.context).expires_at;
          const decided = hasTag.get(`approval:${approval.id}`) !== undefined;
          return decided || (typeof expires === 'string' && expires < nowIso) ? [approval.write_seq] : undefined;
        },
        doomed,
      );
      walk(
        'tool.approval.response.v1',
        now - A,
        (decision) => {
          const tags = (() => {
            try {
              return JSON.parse(decision.tags) as string[];
            } catch {
              return [];
            }
          })();
          const target = tags.find((tag) => tag.startsWith('approval:'))?.slice('approval:'.length);
          return target === undefined || byId.get(target) === undefined ? [decision.write_seq] : undefined;
        },
        doomed,
      );
    }
    for (const rule of UPSTREAM_RULES) {
      walk(
        rule.schema,
        now - rule.ageMs,
        (row) => {
          if (row.ttl !== null) return undefined; // an explicit TTL decides
          if (rule.tag !== undefined && !(JSON.parse(row.tags) as string[]).includes(rule.tag)) return undefined;
          const state = leaseState.get(row.id) as string | undefined;
          return state === 'held' ? undefined : [row.write_seq];
        },
        doomed,
      );
    }
    let removed = 0;
    const seqs = [...doomed];
    for (let i = 0; i < seqs.length; i += BATCH) removed += writes.removeRows(seqs.slice(i, i + BATCH), 'retention');
    total += removed;
    const leaseRows = leases.pruneOrphans(MAX_PER_SWEEP, now);
    const keys = R > 0 ? pruneKeys.run(new Date(now - 2 * R).toISOString(), MAX_PER_SWEEP).changes : 0;
    // Give freed pages back (auto_vacuum = INCREMENTAL, db.ts); a bounded number per sweep.
    const free = freeCount.get() as number;
    if (free > 0 && !db.memory) db.pragma(`incremental_vacuum(${Math.min(free, 4096)})`);
    return { removed, leases: leaseRows, keys, freedPages: free > 0 ? Math.min(free, 4096) : 0 };
  };

  return {
    sweep,
    sizes() {
      let walBytes = 0;
      if (!db.memory) {
        try {
          walBytes = statSync(`${db.name}-wal`).size;
        } catch {
          walBytes = 0;
        }
      }
      return {
        dbBytes: (pageCount.get() as number) * pageSize,
        freeBytes: (freeCount.get() as number) * pageSize,
        walBytes,
      };
    },
    removedTotal: () => total,
  };
}
