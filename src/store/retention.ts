// Retention: the store removes the runner's finished records once they are older than the
// operator's retention, applies upstream's automatic TTL rules (rcrt-server's hygiene) to records
// without a TTL, and gives freed space back (SQLite: incremental vacuum; PostgreSQL: autovacuum,
// docs/store.md). The rules live here, once for both backends; each backend answers the few
// queries of `RetentionStorage` (retention-sqlite.ts, pg/retention.ts).
//
// What goes, and when (R = retentionMs, A = auditRetentionMs, both counted from a record's last write):
//   answer (tool.response.v1) older than R   → deleted with its request — unless the request's lease
//     is not `done` (the runner has not finished it) or the two belong to different owners (then
//     only the answer goes: a forged answer never removes another owner's request);
//   claim (tool.claim.v1) older than R and past its expires_at; progress (tool.progress.v1) older than R;
//   idempotency records (tool.idempotency.v1) older than A; a creation answer (tool.create.response.v1)
//     older than A, with its creation request on the same terms as a tool answer (one written before
//     answers named their request stays);
//   approval requests older than A once decided or expired (a pending one stays), and decisions
//     older than A whose approval request is gone;
//   upstream's rules: health-check requests (tag `health:check`) 5 min, system.ping.v1 10 min,
//     agent.thinking/analysis 6 h, agent.memory/temp_state 24 h, agent.metrics/tool.performance
//     7 days, execution logs (tool.response/tool.error tagged `log:execution`) 30 days;
//   leases past their expiry whose request is gone; Idempotency-Keys older than 2 R whose
//     breadcrumb is gone;
//   agents' own records (G = agentRetentionMs): a record of a writer (`created_by`) that is not
//     exempt (the runner's own identity), of a schema outside `tool.*` and without a `ttl`, older
//     than G — each writer's records walked oldest first (an index on writer and write_seq).
// Never deleted: a request without an answer, a pending approval, a live lease or claim.
// Each table is walked oldest write first and the walk stops at the first record younger than its
// cutoff (write order is updated_at order on both backends), so a sweep reads little more than it
// deletes. Removal is by write_seq, the id of a record's latest version: a record written again
// after it was judged keeps its new seq and is not removed, and a seq removed by another replica's
// sweep meanwhile is simply gone (no error, not counted twice).
// Removing a record removes its tags, history, search rows and vector with it and appends its
// `breadcrumb.deleted` event (reason `retention`). Events themselves are kept by count
// (--event-retention), not by age, on both backends: a stream resuming from a pruned event id gets
// a `stream.gap` frame and rescans (sse.ts).

import type { MaybePromise } from './backend.js';

/** Retention settings (0: keep forever). */
export interface RetentionOptions {
  retentionMs: number;
  auditRetentionMs: number;
  /** Agents' own records (0: kept forever); `exempt` writers' records never go by this rule. */
  agentRetentionMs?: number;
  exempt?: readonly string[];
}

/** What one sweep removed (`skipped`: another replica was sweeping, this one did nothing). */
export interface SweepResult {
  removed: number;
  leases: number;
  keys: number;
  freedPages: number;
  skipped?: boolean;
}

/** The database's size: bytes in use and free (not yet given back), and the write-ahead log. */
export interface DbSizes {
  dbBytes: number;
  freeBytes: number;
  walBytes: number;
}

/** The retention sweeper and the database's size. */
export interface Retention {
  sweep(now?: number): Promise<SweepResult>;
  /** The latest measured size (SQLite: now; PostgreSQL: at the last sweep or `measure()`). */
  sizes(): DbSizes;
  /** Measures the size now. */
  measure(): Promise<DbSizes>;
  /** Records removed by retention since the store started. */
  removedTotal(): number;
}

/** A record as the rules judge it. */
export interface RetentionRow {
  write_seq: number;
  id: string;
  owner_id: string;
  updated_ms: number;
  context: string;
  tags: string;
  ttl: string | null;
  schema_name?: string | null;
}

/** What a backend answers for the rules (each call may answer now or through a promise). */
export interface RetentionStorage {
  /** Up to `limit` records of `schema` with write_seq > `afterSeq`, oldest write first. */
  page(schema: string, afterSeq: number, limit: number): MaybePromise<RetentionRow[]>;
  /** The writers (`created_by`, not null) of the records, up to `limit` of them. */
  writers(limit: number): MaybePromise<string[]>;
  /** Up to `limit` records of `writer` with write_seq > `afterSeq`, oldest write first (with schema_name). */
  pageOf(writer: string, afterSeq: number, limit: number): MaybePromise<RetentionRow[]>;
  /** The current version's seq and owner of the record `id`. */
  record(id: string): MaybePromise<{ write_seq: number; owner_id: string } | undefined>;
  /** The state of the lease named `name` (`held`, `done`, …), undefined without one. */
  leaseState(name: string): MaybePromise<string | undefined>;
  /** Whether any record carries `tag`. */
  tagged(tag: string): MaybePromise<boolean>;
  /** Removes the records at these seqs with everything hanging off them and their events; returns how many went. */
  remove(seqs: number[], reason: string): MaybePromise<number>;
  /** Removes up to `limit` leases past their expiry whose request is gone. */
  pruneLeases(limit: number, now: number): MaybePromise<number>;
  /** Removes up to `limit` Idempotency-Keys created before `beforeIso` whose breadcrumb is gone (and as many request tombstones older than that). */
  pruneKeys(beforeIso: string, limit: number): MaybePromise<number>;
  /** Gives freed space back; returns the pages given back. */
  reclaim(): MaybePromise<number>;
  sizes(): MaybePromise<DbSizes>;
  /** Runs `sweep` unless another replica is sweeping the same database (then resolves undefined). */
  exclusive?<T>(sweep: () => Promise<T>): Promise<T | undefined>;
}

const PAGE = 200;
const BATCH = 250;
/** Most records one pass removes; a sweep runs passes until one finds fewer. */
const MAX_PER_SWEEP = 2000;
/** Passes of one sweep at most (a backlog beyond 100,000 records waits for the next sweep). */
const MAX_PASSES = 50;
/** Most writers one pass walks for the agents' rule. */
const MAX_WRITERS = 10_000;
/**
 * A turn of the event loop: taken after every page read and every batch removed, so a sweep on the
 * synchronous SQLite side never holds the loop for more than one page or batch (requests keep flowing).
 */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
/**
 * After each removal batch the sweep rests twice as long as the batch took (at most 1 s), so it uses
 * at most a third of the store's thread while it catches up with a backlog: a turn alone let a sweep
 * of 75,000 records take nearly all of it, and calls stalled for a minute (bench/retention-soak.mjs).
 * At a third it still removes several times faster than a runner writes (a removal costs about what
 * its write did).
 */
const REST_FACTOR = 2;
const MAX_REST_MS = 1000;
const rest = (spentMs: number): Promise<void> =>
  spentMs <= 0 ? turn() : new Promise((resolve) => setTimeout(resolve, Math.min(spentMs * REST_FACTOR, MAX_REST_MS)));
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

function json(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function tagList(text: string): string[] {
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) ? value.filter((tag): tag is string => typeof tag === 'string') : [];
  } catch {
    return [];
  }
}

/** The answer to a `tool.create.request.v1`. */
const CREATE_ANSWER = 'tool.create.response.v1';

type Judge = (row: RetentionRow) => MaybePromise<number[] | undefined>;

/** Builds the sweeper over a backend's `storage`. */
export function createRetention(storage: RetentionStorage, options: RetentionOptions): Retention {
  let total = 0;
  let last: DbSizes = { dbBytes: 0, freeBytes: 0, walBytes: 0 };

  // Walks `schema` (or the records of a writer) oldest write first until a record is younger than
  // `cutoff`; `judge` picks what goes.
  const walk = async (
    schema: string | { writer: string },
    cutoff: number,
    judge: Judge,
    out: Set<number>,
  ): Promise<void> => {
    let after = 0;
    for (;;) {
      const rows =
        typeof schema === 'string'
          ? await storage.page(schema, after, PAGE)
          : await storage.pageOf(schema.writer, after, PAGE);
      for (const row of rows) {
        if (row.updated_ms >= cutoff || out.size >= MAX_PER_SWEEP) return;
        after = row.write_seq;
        for (const seq of (await judge(row)) ?? []) out.add(seq);
      }
      if (rows.length < PAGE) return;
      await turn();
    }
  };

  // An answer goes with its request, once the runner finished it (lease `done`, or no lease) and
  // both belong to one owner; a forged answer naming another owner's request goes alone.
  const answerJudge =
    (create: boolean): Judge =>
    async (answer) => {
      const context = json(answer.context);
      const metadata = context.metadata as Record<string, unknown> | undefined;
      // A tool answer names its request in metadata, a creation answer in its context.
      const named = create ? context.request_breadcrumb_id : metadata?.request_breadcrumb_id;
      const requestId = typeof named === 'string' ? named : undefined;
      // A creation answer written before it named its request: removing it alone would make its request
      // look unanswered (and run again), so it stays.
      if (requestId === undefined && create) return undefined;
      const request = requestId === undefined ? undefined : await storage.record(requestId);
      if (!request || requestId === undefined) return [answer.write_seq];
      const state = await storage.leaseState(requestId);
      if (state !== undefined && state !== 'done') return undefined; // the runner has not finished it
      if (request.owner_id !== answer.owner_id) return [answer.write_seq];
      return [answer.write_seq, request.write_seq];
    };

  const pass = async (now: number): Promise<SweepResult & { full: boolean }> => {
    const doomed = new Set<number>();
    const R = options.retentionMs;
    const A = options.auditRetentionMs;
    const nowIso = new Date(now).toISOString();
    const expired = (row: RetentionRow): boolean => {
      const expires = json(row.context).expires_at;
      return typeof expires === 'string' && expires < nowIso;
    };
    if (R > 0) {
      await walk('tool.response.v1', now - R, answerJudge(false), doomed);
      await walk('tool.claim.v1', now - R, (claim) => (expired(claim) ? [claim.write_seq] : undefined), doomed);
      await walk('tool.progress.v1', now - R, (row) => [row.write_seq], doomed);
    }
    if (A > 0) {
      await walk('tool.idempotency.v1', now - A, (row) => [row.write_seq], doomed);
      // Tool creations (their request carries the tool's source) are audit-bearing: kept as long as audit.
      await walk(CREATE_ANSWER, now - A, answerJudge(true), doomed);
      await walk(
        'tool.approval.request.v1',
        now - A,
        async (approval) =>
          (await storage.tagged(`approval:${approval.id}`)) || expired(approval) ? [approval.write_seq] : undefined,
        doomed,
      );
      await walk(
        'tool.approval.response.v1',
        now - A,
        async (decision) => {
          const target = tagList(decision.tags)
            .find((tag) => tag.startsWith('approval:'))
            ?.slice('approval:'.length);
          return target === undefined || (await storage.record(target)) === undefined
            ? [decision.write_seq]
            : undefined;
        },
        doomed,
      );
    }
    for (const rule of UPSTREAM_RULES) {
      await walk(
        rule.schema,
        now - rule.ageMs,
        async (row) => {
          if (row.ttl !== null) return undefined; // an explicit TTL decides
          if (rule.tag !== undefined && !tagList(row.tags).includes(rule.tag)) return undefined;
          return (await storage.leaseState(row.id)) === 'held' ? undefined : [row.write_seq];
        },
        doomed,
      );
    }
    const G = options.agentRetentionMs ?? 0;
    if (G > 0)
      for (const writer of await storage.writers(MAX_WRITERS)) {
        if (options.exempt?.includes(writer)) continue;
        const own = (row: RetentionRow): number[] | undefined =>
          row.ttl !== null || (row.schema_name ?? '').toLowerCase().startsWith('tool.') ? undefined : [row.write_seq];
        await walk({ writer }, now - G, own, doomed);
      }
    let removed = 0;
    const seqs = [...doomed];
    for (let i = 0; i < seqs.length; i += BATCH) {
      const started = performance.now();
      const gone = await storage.remove(seqs.slice(i, i + BATCH), 'retention');
      // Counted with each batch: a reader who sees the records gone sees them counted.
      removed += gone;
      total += gone;
      await rest(performance.now() - started);
    }
    const leases = await storage.pruneLeases(MAX_PER_SWEEP, now);
    const keys = R > 0 ? await storage.pruneKeys(new Date(now - 2 * R).toISOString(), MAX_PER_SWEEP) : 0;
    const freedPages = await storage.reclaim();
    return { removed, leases, keys, freedPages, full: doomed.size >= MAX_PER_SWEEP };
  };

  // Passes until one finds less than a full batch: a sweep keeps up with any rate its interval sees.
  const passes = async (now: number): Promise<SweepResult> => {
    const sum: SweepResult = { removed: 0, leases: 0, keys: 0, freedPages: 0 };
    for (let i = 0; i < MAX_PASSES; i++) {
      const one = await pass(now);
      sum.removed += one.removed;
      sum.leases += one.leases;
      sum.keys += one.keys;
      sum.freedPages += one.freedPages;
      if (!one.full) break;
      await turn();
    }
    last = await storage.sizes();
    return sum;
  };

  const measure = async (): Promise<DbSizes> => (last = await storage.sizes());

  // This store's sweeps run one after another (a sweep asked for while one runs waits for it);
  // across replicas, `exclusive` lets one sweep at a time and the others skip.
  let queue: Promise<unknown> = Promise.resolve();
  const once = async (now: number): Promise<SweepResult> => {
    if (!storage.exclusive) return passes(now);
    return (
      (await storage.exclusive(() => passes(now))) ?? { removed: 0, leases: 0, keys: 0, freedPages: 0, skipped: true }
    );
  };

  return {
    sweep(now = Date.now()) {
      const next = queue.then(() => once(now));
      queue = next.catch(() => {});
      return next;
    },
    sizes() {
      const now = storage.sizes();
      if (now instanceof Promise) {
        now.then((value) => (last = value)).catch(() => {});
        return last;
      }
      return (last = now);
    },
    measure,
    removedTotal: () => total,
  };
}
