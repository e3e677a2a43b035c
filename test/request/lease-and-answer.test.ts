// The two owners of retries on the request path: the lease keeper (lease.ts) renews every held claim
// from one timer until its job lets go, and the responder (respond.ts) is the one loop that retries
// an answer write through store trouble — until it lands (exactly one answer) or the service must
// stop. Real store over HTTP; store trouble is injected at the client's typed boundary.

import { describe, expect, it } from 'vitest';
import {
  createRequestKeys,
  createStoreClient,
  SCHEMA,
  StoreError,
  TAG,
  type StoreClient,
} from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { createClaimManager } from '../../src/request/claims.js';
import { createLeaseKeeper } from '../../src/request/lease.js';
import { createResponder, type ToolAnswer } from '../../src/request/respond.js';
import { onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const keys = createRequestKeys(Buffer.alloc(32, 9));

async function rig() {
  const store = await startStore();
  const c: StoreClient = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  onCleanup(() => c.close());
  const request = await c.createBreadcrumb({
    title: 'r',
    schema_name: SCHEMA.ToolRequest,
    tags: [TAG.Request, WS],
    context: { tool: 't', input: {} },
  });
  return { c, request: { breadcrumbId: request.id, rid: request.id } };
}

const answerOf = (breadcrumbId: string): ToolAnswer => ({
  requestBreadcrumbId: breadcrumbId,
  rid: breadcrumbId,
  tool: 't',
  result: { ok: true, output: { n: 1 }, durationMs: 1, logs: [], logsTruncated: false },
});

/** A client whose next `failures` answer writes fail with a 503 (counted). */
function flaky(c: StoreClient, failures: number) {
  const state = { failures, writes: 0 };
  const client: StoreClient = {
    ...c,
    createBreadcrumb: (body, opts) => {
      state.writes++;
      if (state.failures-- > 0)
        return Promise.reject(
          new StoreError({ status: 503, storeCode: 'unavailable', message: 'store unavailable (injected)' }),
        );
      return c.createBreadcrumb(body, opts);
    },
  };
  return { client, state };
}

describe('lease keeper', () => {
  it('renews a held claim until its job lets go, then holds nothing', async () => {
    const { c, request } = await rig();
    const claims = createClaimManager({
      client: c,
      workspace: WS,
      holder: 'A',
      ttlMs: 900,
      keys,
      logger: silentLogger(),
    });
    const acquired = await claims.acquire(request);
    if (acquired.kind !== 'acquired') throw new Error(`not acquired: ${acquired.kind}`);
    const expiresAt = async () => {
      const [claim] = await c.listBreadcrumbs({
        schema_name: SCHEMA.ToolClaim,
        tag: keys.claimTag(request.breadcrumbId),
        include_context: true,
      });
      return String(claim?.context?.['expires_at']);
    };
    const first = await expiresAt();
    const leases = createLeaseKeeper({ ttlMs: 900 });
    const letGo = leases.keep(acquired.claim, silentLogger());
    expect(leases.size()).toBe(1);
    // a renewal moves the lease on (polled, generous timeout: a loaded machine delays timers)
    const deadline = Date.now() + 20_000;
    while ((await expiresAt()) === first && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(Date.parse(await expiresAt())).toBeGreaterThan(Date.parse(first));
    letGo();
    expect(leases.size()).toBe(0);
  });
});

describe('responder: the one retry loop of answer writes', () => {
  it('retries a write through store trouble and stores exactly one answer', async () => {
    const { c, request } = await rig();
    const { client, state } = flaky(c, 3);
    const responder = createResponder({
      client,
      workspace: WS,
      keys,
      logger: silentLogger(),
      retry: { initialMs: 10, maxMs: 50 },
    });
    expect(await responder.respond(answerOf(request.breadcrumbId), new AbortController().signal)).toBe('written');
    expect(state.writes).toBe(4);
    expect(await c.listBreadcrumbs({ tag: keys.answerTag(request.breadcrumbId) })).toHaveLength(1);
    // written again (another replica after a takeover): the same key, one answer
    expect(await responder.respond(answerOf(request.breadcrumbId))).toBe('duplicate');
    expect(await c.listBreadcrumbs({ tag: keys.answerTag(request.breadcrumbId) })).toHaveLength(1);
  });

  it('gives up only when the service must stop (the signal aborts), without an answer', async () => {
    const { c, request } = await rig();
    const { client, state } = flaky(c, Number.POSITIVE_INFINITY);
    const responder = createResponder({
      client,
      workspace: WS,
      keys,
      logger: silentLogger(),
      retry: { initialMs: 10, maxMs: 20 },
    });
    const stop = new AbortController();
    const written = responder.respond(answerOf(request.breadcrumbId), stop.signal);
    // far more tries than the old outer loop's 8: the loop keeps going until stopped
    while (state.writes < 12) await new Promise((r) => setTimeout(r, 10));
    stop.abort(new Error('service stopped'));
    await expect(written).rejects.toThrow();
    expect(await c.listBreadcrumbs({ tag: keys.answerTag(request.breadcrumbId) })).toHaveLength(0);
  });
});
