// Step "queue" of a request's life: intake turns requests (from events, via events.ts) and catch-up
// scans into queued jobs, losing nothing. The job itself (job.ts) runs the rest of the life.
//
// Sources: (1) `tool.request.v1` and `tool.create.request.v1` events from the stream; (2) catch-up
// scans of both kinds — a full scan at start
// and whenever something may have been missed (backlog overflow, a failed job), a windowed scan
// (recent requests only) after every reconnect and on a timer; (3) expired claims of other
// replicas, which are taken over: found on the timer, and tried again at the expiry of a claim this
// replica found held by another (so a dead holder's request waits one lease, not one scan).
//
// The queue's backlog is bounded. When it is full, candidates wait in a bounded `pending` list
// (ids only, oldest first) and are fed in as room frees; if even that list overflows, the next scan
// is a full one. The store is the real queue: nothing here is the only copy of a request.
// Duplicates (an event and a scan seeing the same request, two events for one request) are
// harmless: jobs are keyed by request id and the claim decides who runs it.

import type { StoreClient } from '../breadcrumbs/index.js';
import { listRecent } from './scan-listing.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import type { Logger } from '../logger.js';
import type { JobQueue } from '../queue/job-queue.js';
import { pendingRequestOf, type PendingRequest } from './events.js';
import type { ClaimManager } from './claims.js';
import type { Cutover } from './cutover.js';
import { backoffMs } from '../backoff.js';
import { ErrorCode, RunnerError } from '../errors.js';

/** How a request's job ended, from intake's point of view (`withdrawn`: the request was deleted; no answer). */
export type RequestOutcome = 'answered' | 'withdrawn' | 'released' | 'failed' | Busy | Parked;

/** A windowed catch-up scan's look-back before the previous scan started (see createIntake). */
export const DEFAULT_WINDOW_MARGIN_MS = 60_000;
/**
 * The same with the embedded store in this process: one clock stamps and scans (its stamps never go
 * back, breadcrumb-writes.ts `tick`), and a write is stamped inside its own commit; the margin only
 * covers a step of the system clock.
 */
export const LOCAL_WINDOW_MARGIN_MS = 5_000;

/** How far a windowed scan of `client`'s store looks back before the previous scan started. */
export const windowMarginFor = (client: Pick<StoreClient, 'local'>): number =>
  client.local ? LOCAL_WINDOW_MARGIN_MS : DEFAULT_WINDOW_MARGIN_MS;

/** A job a policy parked (policy.ts): run the request again when a wake token is seen, or at `until`. */
export interface Parked {
  kind: 'parked';
  until: number;
  wakeOn: readonly string[];
}

/** Another replica holds the request's claim until `until` (the store's clock): looked at again then. */
export interface Busy {
  kind: 'busy';
  until: number;
}

/** Past a busy claim's expiry before it is tried: the store's expiry check is strict. */
const BUSY_MARGIN_MS = 50;
/** Least wait before a busy claim is tried again (our clock may run ahead of the store's). */
const BUSY_MIN_WAIT_MS = 500;

/** The abort reason of a job whose request breadcrumb was deleted (by its requester, or anyone). */
export class RequestWithdrawn extends Error {
  constructor(readonly breadcrumbId: string) {
    super(`request breadcrumb ${breadcrumbId} was deleted`);
    this.name = 'RequestWithdrawn';
  }
}

export interface IntakeOptions {
  client: StoreClient;
  claims: ClaimManager;
  queue: JobQueue;
  workspace: string;
  keys: RequestKeys;
  logger: Logger;
  scanIntervalMs: number;
  /** The job: runs one request's life (job.ts `handle`, wired in path.ts). */
  run(request: PendingRequest, signal: AbortSignal): Promise<RequestOutcome>;
  /** Requests that predate it also count as answered by a legacy `request:<rid>` response (cutover.ts). */
  cutover?: Cutover;
  /** Most candidate ids held while the backlog is full. */
  maxPending?: number;
  /** How far back a windowed scan looks before the previous scan started. */
  windowMarginMs?: number;
  pageSize?: number;
}

export interface Intake {
  /** Offers a request seen in an event (events.ts); duplicates and answered ones are ignored. */
  offer(request: PendingRequest): void;
  /** The request breadcrumb was deleted: drop it if waiting, abort its job if running (no answer). */
  withdraw(breadcrumbId: string): void;
  /** Answer tags seen on a response: those requests need no run (and requests parked on them wake). */
  answered(answerTags: readonly string[]): void;
  /** Wake tokens seen (e.g. `approval:<id>` of an approval's response): parked requests waiting on them run again. */
  wake(tokens: readonly string[]): void;
  /** Runs a catch-up scan now; `full` ignores the window. Concurrent calls coalesce. */
  scan(full: boolean): Promise<void>;
  /** Starts the periodic scans; stops them when `signal` aborts. */
  start(signal: AbortSignal): void;
  stats(): { pending: number; parked: number; done: number; lastScanAt?: string; needFullScan: boolean };
}

const DONE_CACHE = 100_000;
/** Most requests waiting for a retry after a failed job; beyond it, the next scan is a full one. */
const MAX_RETRIES_HELD = 10_000;
/** Longest wait before a failed job's request is tried again. */
const MAX_RETRY_DELAY_MS = 60_000;
/** Most parked requests held; beyond it the oldest is let go (the next full scan finds it again). */
const MAX_PARKED = 10_000;
/** Longest a parked request waits without a look, so a wake token that was missed costs at most this. */
const MAX_PARK_MS = 5 * 60_000;

/** A request as held while it waits: ids only (bounded memory; the job reads the record itself). */
const slimOf = (request: PendingRequest): PendingRequest => ({
  ...(request.kind ? { kind: request.kind } : {}),
  breadcrumbId: request.breadcrumbId,
  rid: request.rid,
  tool: request.tool,
});

/**
 * Parked requests (a policy is waiting for something) and wake token -> the requests it wakes. A parked
 * request goes to `wakeUp` when its time comes or a token it waits on is woken; `unpark` drops it.
 */
function createParking(wakeUp: (request: PendingRequest) => void) {
  const parked = new Map<string, { request: PendingRequest; tokens: readonly string[]; timer: NodeJS.Timeout }>();
  const sleepers = new Map<string, Set<string>>();

  const unpark = (breadcrumbId: string): PendingRequest | undefined => {
    const entry = parked.get(breadcrumbId);
    if (!entry) return undefined;
    parked.delete(breadcrumbId);
    clearTimeout(entry.timer);
    for (const token of entry.tokens) {
      const ids = sleepers.get(token);
      ids?.delete(breadcrumbId);
      if (ids?.size === 0) sleepers.delete(token);
    }
    return entry.request;
  };

  /** Parks a slim request; true when the oldest parked request was dropped to make room. */
  const park = (slim: PendingRequest, outcome: Parked): boolean => {
    unpark(slim.breadcrumbId);
    let dropped = false;
    if (parked.size >= MAX_PARKED) {
      const oldest = parked.keys().next().value;
      if (oldest !== undefined) unpark(oldest);
      dropped = true;
    }
    const delayMs = Math.max(0, Math.min(MAX_PARK_MS, outcome.until - Date.now()));
    const timer = setTimeout(() => {
      const again = unpark(slim.breadcrumbId);
      if (again) wakeUp(again);
    }, delayMs);
    timer.unref();
    const tokens = [...new Set(outcome.wakeOn)];
    parked.set(slim.breadcrumbId, { request: slim, tokens, timer });
    for (const token of tokens) {
      const ids = sleepers.get(token) ?? new Set<string>();
      ids.add(slim.breadcrumbId);
      sleepers.set(token, ids);
    }
    return dropped;
  };

  const wake = (tokens: readonly string[]): void => {
    for (const token of tokens) {
      for (const id of [...(sleepers.get(token) ?? [])]) {
        const request = unpark(id);
        if (request) wakeUp(request);
      }
    }
  };

  return { parked, sleepers, unpark, park, wake };
}

/** Creates the intake. */
export function createIntake(options: IntakeOptions): Intake {
  const { client, claims, queue, workspace, keys, logger } = options;
  const maxPending = options.maxPending ?? 100_000;
  // How far a windowed scan looks back before the previous scan started: the store stamps updated_at
  // with its clock, the watermark is ours; the margin covers their skew and a write committed late. It
  // is also what a windowed scan lists (and holds in memory) every scanIntervalMs: 5 minutes at a few
  // hundred calls/s was ~300,000 listed items per scan (the soak's RSS grew with it); full scans (at
  // start, after an overflow or a failed scan) list everything whatever the clocks say. The embedded
  // store in this process shares our clock: its margin is 5 s, not 60 (windowMarginFor).
  const marginMs = options.windowMarginMs ?? windowMarginFor(client);
  const pageSize = options.pageSize ?? 200;

  /** Answer tags (`answer:<mac>`) of requests known to be answered. */
  const done = new Set<string>();
  /** Request breadcrumb id -> failed jobs in a row (for the retry backoff). */
  const failures = new Map<string, number>();
  const pending: PendingRequest[] = [];
  const { parked, sleepers, unpark, wake, park: parkSlim } = createParking((request) => enqueue(request));
  const pendingIds = new Set<string>();
  let feeding = false;
  let stopped = false;
  let needFullScan = true;
  let watermark: number | undefined;
  let lastScanAt: string | undefined;
  let scanning: Promise<void> | undefined;
  let rescan: boolean | undefined;

  const isDone = (breadcrumbId: string): boolean => done.has(keys.answerTag(breadcrumbId));
  const markDone = (answerTag: string): void => {
    done.add(answerTag);
    if (done.size > DONE_CACHE) {
      const oldest = done.values().next().value;
      if (oldest !== undefined) done.delete(oldest);
    }
  };

  const job = (request: PendingRequest) => async (signal: AbortSignal) => {
    let outcome: RequestOutcome;
    try {
      outcome = await options.run(request, signal);
    } catch (error) {
      // Every failed job is retried (retryLater). The store being unreachable (a restart, a
      // failover) is expected trouble and logged as a warning; anything else is a fault of ours.
      const unavailable = error instanceof RunnerError && error.code === ErrorCode.DependencyUnavailable;
      const fields = { rid: request.rid, tool: request.tool, error };
      if (unavailable) logger.warn('job failed: the store is unavailable; the request is retried', fields);
      else logger.error('job failed; the request is retried', fields);
      outcome = 'failed';
    }
    if (outcome === 'answered' || outcome === 'withdrawn') {
      markDone(keys.answerTag(request.breadcrumbId));
      failures.delete(request.breadcrumbId);
    }
    if (outcome === 'failed') retryLater(request);
    if (typeof outcome === 'object') park(request, outcome.kind === 'busy' ? heldElsewhere(request, outcome) : outcome);
  };

  // A claim held by another replica: try again when its lease would run out, so a dead holder's
  // request is taken over within one lease, not at the next scan; the answer's event ends the wait.
  const heldElsewhere = (request: PendingRequest, busy: Busy): Parked => ({
    kind: 'parked',
    until: Math.max(busy.until + BUSY_MARGIN_MS, Date.now() + BUSY_MIN_WAIT_MS),
    wakeOn: [keys.answerTag(request.breadcrumbId)],
  });

  const park = (request: PendingRequest, outcome: Parked): void => {
    if (stopped) return;
    if (parkSlim(slimOf(request), outcome)) needFullScan = true;
  };

  // A failed job (store trouble) is retried for that request alone, with backoff: one bad request
  // never triggers rescans of everything, and never a tight loop.
  const retryLater = (request: PendingRequest): void => {
    const count = (failures.get(request.breadcrumbId) ?? 0) + 1;
    failures.delete(request.breadcrumbId);
    if (failures.size >= MAX_RETRIES_HELD) {
      needFullScan = true;
      return;
    }
    failures.set(request.breadcrumbId, count);
    const delayMs = backoffMs({ initialMs: 500, maxMs: MAX_RETRY_DELAY_MS }, count);
    setTimeout(() => {
      if (!stopped && failures.has(request.breadcrumbId)) enqueue(slimOf(request));
    }, delayMs).unref();
  };

  const feed = async (): Promise<void> => {
    if (feeding) return;
    feeding = true;
    try {
      while (!stopped && pending.length > 0) {
        const next = pending[0] as PendingRequest;
        if (isDone(next.breadcrumbId)) {
          pending.shift();
          pendingIds.delete(next.breadcrumbId);
          continue;
        }
        const result = queue.offer(next.breadcrumbId, next.tool, job(next));
        if (result === 'full') {
          await queue.waitForRoom();
          continue;
        }
        pending.shift();
        pendingIds.delete(next.breadcrumbId);
        if (result === 'closed') break;
      }
    } finally {
      feeding = false;
    }
  };

  const enqueue = (offered: PendingRequest, front = false): void => {
    if (
      stopped ||
      isDone(offered.breadcrumbId) ||
      queue.has(offered.breadcrumbId) ||
      pendingIds.has(offered.breadcrumbId) ||
      parked.has(offered.breadcrumbId)
    )
      return;
    const request: PendingRequest = offered.seenAt === undefined ? { ...offered, seenAt: performance.now() } : offered;
    if (pending.length === 0 && !feeding) {
      const result = queue.offer(request.breadcrumbId, request.tool, job(request));
      if (result !== 'full') return;
    }
    if (pending.length >= maxPending) {
      needFullScan = true;
      return;
    }
    // Waiting requests are held as ids only (bounded memory); the job reads the request itself.
    const slim: PendingRequest = {
      ...slimOf(request),
      ...(request.seenAt !== undefined ? { seenAt: request.seenAt } : {}),
    };
    if (front) pending.unshift(slim);
    else pending.push(slim);
    pendingIds.add(request.breadcrumbId);
    void feed();
  };

  // A deleted request is withdrawn: dropped if queued or waiting, aborted if running (no answer).
  const withdraw = (breadcrumbId: string): void => {
    const at = pending.findIndex((p) => p.breadcrumbId === breadcrumbId);
    if (at !== -1) pending.splice(at, 1);
    pendingIds.delete(breadcrumbId);
    failures.delete(breadcrumbId);
    unpark(breadcrumbId);
    const result = queue.cancel(breadcrumbId, new RequestWithdrawn(breadcrumbId));
    if (result !== 'unknown') logger.info('request withdrawn', { requestBreadcrumbId: breadcrumbId, job: result });
  };

  const scanOnce = async (full: boolean): Promise<void> => {
    const startedAt = Date.now();
    const since = full || needFullScan ? undefined : watermark;
    const wasFull = since === undefined;
    needFullScan = false;
    const { requests, answered, legacyAnswered, contextsOf } = await listRecent(client, workspace, pageSize, since);
    // Only requests not known answered need their context (their rid and tool; a legacy answer is
    // looked for by rid).
    const needed = new Map<string, Set<string>>();
    for (const { item, schema } of requests) {
      const answerTag = keys.answerTag(item.id);
      if (answered.has(answerTag)) {
        markDone(answerTag);
        continue;
      }
      if (done.has(answerTag) || !item.tags.includes(workspace)) continue;
      (needed.get(schema) ?? needed.set(schema, new Set()).get(schema))?.add(item.id);
    }
    const contexts = new Map<string, Record<string, unknown>>();
    for (const [schema, ids] of needed)
      for (const [id, context] of await contextsOf(schema, ids)) contexts.set(id, context);
    let found = 0;
    // oldest first (each listing is newest first)
    for (const { item: listed, schema } of requests.reverse()) {
      const context = contexts.get(listed.id);
      if (context === undefined) continue;
      const item = { ...listed, context };
      const request = pendingRequestOf(item, workspace, schema);
      if (!request) continue;
      const answerTag = keys.answerTag(request.breadcrumbId);
      const legacy =
        request.kind !== 'create' && options.cutover?.predates(item) === true && legacyAnswered.has(request.rid);
      if (answered.has(answerTag) || legacy) {
        markDone(answerTag);
        continue;
      }
      if (done.has(answerTag)) continue;
      found++;
      enqueue(request);
    }
    // Claims whose holder stopped renewing: take the request over (or tidy up if it was answered).
    let takeovers = 0;
    for (const expired of await claims.listExpired()) {
      const id = expired.requestBreadcrumbId;
      if (isDone(id) || queue.has(id) || pendingIds.has(id) || parked.has(id)) continue;
      if (await claims.hasResponse(id)) {
        markDone(keys.answerTag(id));
        await claims.cleanup(id);
        continue;
      }
      try {
        const full = await client.getBreadcrumbFull(expired.requestBreadcrumbId);
        const request = pendingRequestOf(full, workspace);
        if (request) {
          takeovers++;
          enqueue(request, true);
        }
      } catch (error) {
        logger.warn('expired claim points at an unreadable request', { rid: expired.rid, error });
      }
    }
    lastScanAt = new Date(startedAt).toISOString();
    if (!needFullScan) watermark = startedAt - marginMs;
    logger.debug('scan finished', {
      full: wasFull,
      listed: requests.length,
      found,
      takeovers,
      pending: pending.length,
    });
  };

  const scan = (full: boolean): Promise<void> => {
    if (scanning) {
      rescan = (rescan ?? false) || full;
      return scanning;
    }
    scanning = (async () => {
      try {
        let nextFull = full;
        for (;;) {
          try {
            await scanOnce(nextFull);
          } catch (error) {
            needFullScan = true;
            logger.warn('catch-up scan failed', { error });
          }
          if (rescan === undefined || stopped) break;
          nextFull = rescan;
          rescan = undefined;
        }
      } finally {
        scanning = undefined;
      }
    })();
    return scanning;
  };

  const start = (signal: AbortSignal): void => {
    const timer = setInterval(() => void scan(false), options.scanIntervalMs);
    timer.unref();
    signal.addEventListener(
      'abort',
      () => {
        stopped = true;
        clearInterval(timer);
        for (const id of [...parked.keys()]) unpark(id);
      },
      { once: true },
    );
  };

  return {
    offer: (request) => enqueue(request),
    withdraw,
    answered: (answerTags) => {
      for (const tag of answerTags) markDone(tag);
      if (sleepers.size > 0) wake(answerTags);
    },
    wake,
    scan,
    start,
    stats: () => ({
      pending: pending.length,
      parked: parked.size,
      done: done.size,
      ...(lastScanAt ? { lastScanAt } : {}),
      needFullScan,
    }),
  };
}
