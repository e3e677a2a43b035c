// Intake and the event filter, driven step by step: the job body is a deferred promise the test
// settles, the store is the real embedded one, the queue and claims are the real ones. Covers
// duplicates (event + event + scan), answers seen before a request, withdrawal while queued and
// while running, the backlog holding requests until room frees, and the one event filter.

import { describe, expect, it, vi } from 'vitest';
import { createRequestKeys, createStoreClient, SCHEMA, TAG, type StoreClient } from '../../src/breadcrumbs/index.js';
import type { StoreEvent } from '../../src/breadcrumbs/messages.js';
import { createLogger, silentLogger, type Logger } from '../../src/logger.js';
import { StoreError } from '../../src/breadcrumbs/store-error.js';
import { createJobQueue } from '../../src/queue/job-queue.js';
import { classifyRequestEvent, type PendingRequest } from '../../src/request/events.js';
import { createIntake, RequestWithdrawn, type Intake, type RequestOutcome } from '../../src/request/intake.js';
import { createClaimManager } from '../../src/request/claims.js';
import { onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const keys = createRequestKeys(Buffer.alloc(32, 9));

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** One call of the job body: what it was asked to run, and the outcome the test gives it. */
interface Call {
  request: PendingRequest;
  signal: AbortSignal;
  finish(outcome: RequestOutcome): void;
  /** Ends the job body by throwing `error`. */
  fail(error: unknown): void;
}

interface Rig {
  c: StoreClient;
  intake: Intake;
  calls: Call[];
  /** Resolves with the n-th call (0-based) once the body has been called that often. */
  call(n: number): Promise<Call>;
  createRequest(tool?: string): Promise<{ id: string; event: StoreEvent }>;
}

async function rig(
  queue = { concurrency: 4, toolConcurrency: 4, backlog: 100 },
  logger: Logger = silentLogger(),
): Promise<Rig> {
  const store = await startStore();
  const c = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  onCleanup(() => c.close());
  const claims = createClaimManager({
    client: c,
    workspace: WS,
    holder: 'A',
    ttlMs: 10_000,
    keys,
    logger: silentLogger(),
  });
  const calls: Call[] = [];
  const waiters: Array<{ n: number; resolve(call: Call): void }> = [];
  const intake = createIntake({
    client: c,
    claims,
    queue: createJobQueue(queue),
    workspace: WS,
    keys,
    logger,
    scanIntervalMs: 60_000,
    run: (request, signal) => {
      const done = deferred<RequestOutcome>();
      const call = { request, signal, finish: done.resolve, fail: done.reject };
      calls.push(call);
      for (const waiter of waiters.filter((w) => w.n === calls.length - 1)) waiter.resolve(call);
      return done.promise;
    },
  });
  const stop = new AbortController();
  intake.start(stop.signal);
  onCleanup(() => stop.abort());
  return {
    c,
    intake,
    calls,
    call: (n) => (calls[n] ? Promise.resolve(calls[n]) : new Promise((resolve) => waiters.push({ n, resolve }))),
    async createRequest(tool = 't') {
      const created = await c.createBreadcrumb({
        title: 'r',
        schema_name: SCHEMA.ToolRequest,
        tags: [TAG.Request, WS],
        context: { tool, input: {} },
      });
      const event: StoreEvent = {
        type: 'breadcrumb.updated',
        breadcrumb_id: created.id,
        schema_name: SCHEMA.ToolRequest,
        tags: [TAG.Request, WS],
        context: { tool, input: {} },
        version: 1,
      };
      return { id: created.id, event };
    },
  };
}

/** Feeds an event through the one filter, the way the service routes it. */
function feed(intake: Intake, event: StoreEvent): void {
  const meaning = classifyRequestEvent(event, WS);
  if (meaning.kind === 'request') intake.offer(meaning.request);
  if (meaning.kind === 'withdrawn') intake.withdraw(meaning.breadcrumbId);
  if (meaning.kind === 'answered') intake.answered(meaning.answerTags);
  if (meaning.kind === 'wake') intake.wake(meaning.tokens);
}

describe('event filter', () => {
  it('a creation event of this workspace is a request carrying its snapshot', () => {
    const event: StoreEvent = {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'b1',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, WS],
      context: { tool: 'x', requestId: 'r1', input: {} },
      version: 1,
    };
    expect(classifyRequestEvent(event, WS)).toEqual({
      kind: 'request',
      request: {
        breadcrumbId: 'b1',
        rid: 'r1',
        tool: 'x',
        snapshot: { tags: [TAG.Request, WS], context: { tool: 'x', requestId: 'r1', input: {} } },
      },
    });
    expect(classifyRequestEvent({ ...event, version: 2 }, WS)).toEqual({
      kind: 'request',
      request: { breadcrumbId: 'b1', rid: 'r1', tool: 'x' },
    });
  });

  it('another workspace, a missing tool:request tag, pings and unknown types mean nothing', () => {
    const event: StoreEvent = {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'b1',
      schema_name: SCHEMA.ToolRequest,
      tags: [TAG.Request, 'workspace:other'],
      context: { tool: 'x' },
      version: 1,
    };
    expect(classifyRequestEvent(event, WS)).toEqual({ kind: 'none' });
    expect(classifyRequestEvent({ ...event, tags: [WS] }, WS)).toEqual({ kind: 'none' });
    expect(classifyRequestEvent({ type: 'ping' }, WS)).toEqual({ kind: 'none' });
    expect(classifyRequestEvent({ ...event, type: 'breadcrumb.created', tags: [TAG.Request, WS] }, WS)).toEqual({
      kind: 'none',
    });
  });

  it('only answer tags of a response count, never its request:<rid> tag', () => {
    const answer = keys.answerTag('b1');
    const event: StoreEvent = {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'x',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.request('r1'), answer],
    };
    expect(classifyRequestEvent(event, WS)).toEqual({ kind: 'answered', answerTags: [answer] });
  });

  it("an approval's response wakes by its approval: tags only", () => {
    const event: StoreEvent = {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'x',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [WS, 'approval:a1', 'request:r1'],
    };
    expect(classifyRequestEvent(event, WS)).toEqual({ kind: 'wake', tokens: ['approval:a1'] });
  });

  it('a deleted request is withdrawn; other deletions are not', () => {
    expect(
      classifyRequestEvent({ type: 'breadcrumb.deleted', breadcrumb_id: 'b1', schema_name: SCHEMA.ToolRequest }, WS),
    ).toEqual({ kind: 'withdrawn', breadcrumbId: 'b1' });
    expect(
      classifyRequestEvent({ type: 'breadcrumb.deleted', breadcrumb_id: 'b1', schema_name: SCHEMA.ToolCode }, WS),
    ).toEqual({ kind: 'none' });
  });
});

describe('intake', () => {
  it('runs a request once however often it is offered and scanned, and never again once answered', async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    const first = await r.call(0);
    expect(first.request).toMatchObject({ breadcrumbId: id, rid: id, tool: 't' });
    feed(r.intake, event);
    await r.intake.scan(true);
    expect(r.calls).toHaveLength(1);
    first.finish('answered');
    await vi.waitFor(() => expect(r.intake.stats().done).toBe(1));
    feed(r.intake, event);
    expect(r.calls).toHaveLength(1);
    expect(r.intake.stats()).toMatchObject({ pending: 0, done: 1 });
  });

  it('a request whose answer tag was seen first is never run', async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'resp',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, keys.answerTag(id)],
    });
    feed(r.intake, event);
    const other = await r.createRequest();
    feed(r.intake, other.event);
    // The later request runs; the answered one was skipped before it.
    expect((await r.call(0)).request.breadcrumbId).toBe(other.id);
    expect(r.calls).toHaveLength(1);
  });

  it('a request deleted while it runs has its job aborted with RequestWithdrawn', async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    const call = await r.call(0);
    expect(call.signal.aborted).toBe(false);
    feed(r.intake, { type: 'breadcrumb.deleted', breadcrumb_id: id, schema_name: SCHEMA.ToolRequest });
    expect(call.signal.aborted).toBe(true);
    expect(call.signal.reason).toBeInstanceOf(RequestWithdrawn);
    expect((call.signal.reason as RequestWithdrawn).breadcrumbId).toBe(id);
    call.finish('withdrawn');
  });

  it('holds requests while the backlog is full and feeds them in order as room frees; a withdrawn waiting one never runs', async () => {
    const r = await rig({ concurrency: 1, toolConcurrency: 1, backlog: 1 });
    const a = await r.createRequest();
    const b = await r.createRequest();
    const gone = await r.createRequest();
    const c = await r.createRequest();
    for (const item of [a, b, gone, c]) feed(r.intake, item.event);
    const first = await r.call(0);
    expect(first.request.breadcrumbId).toBe(a.id);
    expect(r.intake.stats().pending).toBe(3);
    feed(r.intake, { type: 'breadcrumb.deleted', breadcrumb_id: gone.id, schema_name: SCHEMA.ToolRequest });
    expect(r.intake.stats().pending).toBe(2);
    first.finish('answered');
    const second = await r.call(1);
    expect(second.request.breadcrumbId).toBe(b.id);
    second.finish('answered');
    const third = await r.call(2);
    expect(third.request.breadcrumbId).toBe(c.id);
    third.finish('answered');
    expect(r.calls.map((call) => call.request.breadcrumbId)).toEqual([a.id, b.id, c.id]);
  });

  it('a catch-up scan finds a request no event announced, and skips one answered in the store', async () => {
    const r = await rig();
    const answered = await r.createRequest();
    await r.c.createBreadcrumb({
      title: 'Response: t',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, keys.answerTag(answered.id)],
      context: {},
    });
    const missed = await r.createRequest();
    await r.intake.scan(true);
    const call = await r.call(0);
    expect(call.request).toEqual({ breadcrumbId: missed.id, rid: missed.id, tool: 't', seenAt: expect.any(Number) });
    call.finish('answered');
    expect(r.calls).toHaveLength(1);
  });

  it('a windowed scan reads the contexts of unanswered requests only: one by one when few, by a second listing when many', async () => {
    // 70 unanswered (more than the scan reads one by one) and 5 answered; the queue holds them all
    const r = await rig({ concurrency: 100, toolConcurrency: 100, backlog: 200 });
    await r.intake.scan(true); // a full scan of nothing: the next scans are windowed
    const answeredIds = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const { id } = await r.createRequest('answered-tool');
      answeredIds.add(id);
      await r.c.createBreadcrumb({
        title: 'Response: t',
        schema_name: SCHEMA.ToolResponse,
        tags: [WS, TAG.Response, keys.answerTag(id)],
        context: {},
      });
    }
    const missed = new Map<string, string>();
    for (let i = 0; i < 70; i++) {
      const tool = `tool-${i}`;
      missed.set((await r.createRequest(tool)).id, tool);
    }
    await r.intake.scan(false);
    await r.call(69);
    expect(r.calls).toHaveLength(70);
    for (const call of r.calls) {
      expect(answeredIds.has(call.request.breadcrumbId)).toBe(false);
      expect(call.request.tool).toBe(missed.get(call.request.breadcrumbId));
    }
    expect(new Set(r.calls.map((call) => call.request.breadcrumbId)).size).toBe(70);
    for (const call of r.calls) call.finish('answered');
    // few unanswered: each read by itself
    const late = await r.createRequest('late-tool');
    await r.intake.scan(false);
    const call = await r.call(70);
    expect(call.request).toEqual({
      breadcrumbId: late.id,
      rid: late.id,
      tool: 'late-tool',
      seenAt: expect.any(Number),
    });
    call.finish('answered');
    await r.intake.scan(false);
    expect(r.calls).toHaveLength(71);
  });

  it('a parked request is not run again by scans or offers, and runs again when its wake token is seen', async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    (await r.call(0)).finish({ kind: 'parked', until: Date.now() + 60_000, wakeOn: ['approval:a1'] });
    await vi.waitFor(() => expect(r.intake.stats().parked).toBe(1));
    feed(r.intake, event);
    await r.intake.scan(true);
    feed(r.intake, {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'x',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [WS, 'approval:other'],
    });
    expect(r.calls).toHaveLength(1);
    feed(r.intake, {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'y',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [WS, 'approval:a1'],
    });
    const again = await r.call(1);
    expect(again.request.breadcrumbId).toBe(id);
    expect(r.intake.stats().parked).toBe(0);
    again.finish('answered');
  });

  it("a request parked on another request's answer wakes when that answer is seen", async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    (await r.call(0)).finish({ kind: 'parked', until: Date.now() + 60_000, wakeOn: [keys.answerTag('first')] });
    await vi.waitFor(() => expect(r.intake.stats().parked).toBe(1));
    feed(r.intake, {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'resp',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, keys.answerTag('first')],
    });
    expect((await r.call(1)).request.breadcrumbId).toBe(id);
  });

  it('a parked request runs again at its time even if no wake token is ever seen', async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    (await r.call(0)).finish({ kind: 'parked', until: Date.now() + 200, wakeOn: ['approval:never'] });
    const again = await r.call(1);
    expect(again.request.breadcrumbId).toBe(id);
    again.finish('answered');
  });

  it("a request whose claim another replica holds is tried again at that claim's expiry", async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    (await r.call(0)).finish({ kind: 'busy', until: Date.now() + 300 });
    await vi.waitFor(() => expect(r.intake.stats().parked).toBe(1));
    const again = await r.call(1);
    expect(again.request.breadcrumbId).toBe(id);
    again.finish('answered');
  });

  it('a request whose claim another replica holds waits no longer once its answer is seen', async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    (await r.call(0)).finish({ kind: 'busy', until: Date.now() + 60_000 });
    await vi.waitFor(() => expect(r.intake.stats().parked).toBe(1));
    feed(r.intake, {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'resp',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, keys.answerTag(id)],
    });
    expect(r.intake.stats().parked).toBe(0);
    feed(r.intake, event);
    await r.intake.scan(true);
    expect(r.calls).toHaveLength(1);
  });

  it('a job that throws is retried; the store being unavailable is a warning, any other fault an error', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ level: 'debug', write: (line) => void lines.push(JSON.parse(line)) });
    const r = await rig(undefined, logger);
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    const unavailable = new StoreError({ status: 503, storeCode: 'unavailable', message: 'store POST answered 503' });
    (await r.call(0)).fail(unavailable);
    const second = await r.call(1);
    expect(second.request.breadcrumbId).toBe(id);
    second.fail(new TypeError('a bug of ours'));
    const third = await r.call(2);
    third.finish('answered');
    const failures = lines.filter((l) => String(l.msg).startsWith('job failed'));
    expect(failures.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'job failed: the store is unavailable; the request is retried'],
      ['error', 'job failed; the request is retried'],
    ]);
  });

  it('a parked request that is deleted is forgotten', async () => {
    const r = await rig();
    const { id, event } = await r.createRequest();
    feed(r.intake, event);
    (await r.call(0)).finish({ kind: 'parked', until: Date.now() + 60_000, wakeOn: ['approval:a2'] });
    await vi.waitFor(() => expect(r.intake.stats().parked).toBe(1));
    feed(r.intake, { type: 'breadcrumb.deleted', breadcrumb_id: id, schema_name: SCHEMA.ToolRequest });
    expect(r.intake.stats().parked).toBe(0);
    feed(r.intake, {
      type: 'breadcrumb.updated',
      breadcrumb_id: 'y',
      schema_name: SCHEMA.ToolApprovalResponse,
      tags: [WS, 'approval:a2'],
    });
    expect(r.calls).toHaveLength(1);
  });
});
