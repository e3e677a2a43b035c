// Claims with a fake clock against the real embedded store: acquisition, takeover only after a
// lease expired, adoption of one's own unstarted claim (and never of a started one), release on
// drain, an answer that appears while claiming, and hostile writers (forged, edited, deleted claims).

import { describe, expect, it } from 'vitest';
import { createRequestKeys, createStoreClient, SCHEMA, TAG, type StoreClient } from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { createClaimManager, type ClaimManager } from '../../src/request/claims.js';
import { onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const TTL = 10_000;
const keys = createRequestKeys(Buffer.alloc(32, 7));

interface Clock {
  now: () => number;
  advance(ms: number): void;
}

function fakeClock(): Clock {
  let t = Date.now();
  return { now: () => t, advance: (ms) => void (t += ms) };
}

async function setup(): Promise<{
  c: StoreClient;
  clock: Clock;
  replica(holder: string): ClaimManager;
  requestId(): Promise<string>;
}> {
  const store = await startStore();
  const c = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  onCleanup(() => c.close());
  const clock = fakeClock();
  return {
    c,
    clock,
    replica: (holder) =>
      createClaimManager({
        client: c,
        workspace: WS,
        holder,
        ttlMs: TTL,
        keys,
        logger: silentLogger(),
        now: clock.now,
      }),
    requestId: async () =>
      (
        await c.createBreadcrumb({
          title: 'r',
          schema_name: SCHEMA.ToolRequest,
          tags: [TAG.Request, WS],
          context: { tool: 't', input: {} },
        })
      ).id,
  };
}

async function writeAnswer(c: StoreClient, id: string): Promise<void> {
  await c.createBreadcrumb(
    {
      title: 'Response: t',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, keys.answerTag(id)],
      context: {},
    },
    { idempotencyKey: keys.responseKey(id) },
  );
}

describe('claims', () => {
  it('gives attempt 1 to one replica and reports the other busy until the lease expires', async () => {
    const { replica, requestId, clock } = await setup();
    const [a, b] = [replica('A'), replica('B')];
    const id = await requestId();
    const first = await a.acquire({ breadcrumbId: id, rid: 'r1' });
    expect(first.kind).toBe('acquired');
    expect(first.kind === 'acquired' && first.claim.attempt).toBe(1);
    const second = await b.acquire({ breadcrumbId: id, rid: 'r1' });
    expect(second).toMatchObject({ kind: 'busy', holder: 'A' });
    clock.advance(TTL + 1);
    const takeover = await b.acquire({ breadcrumbId: id, rid: 'r1' });
    expect(takeover.kind === 'acquired' && takeover.claim.attempt).toBe(2);
  });

  it('a renewed lease is not taken over', async () => {
    const { replica, requestId, clock } = await setup();
    const [a, b] = [replica('A'), replica('B')];
    const id = await requestId();
    const held = await a.acquire({ breadcrumbId: id, rid: 'r' });
    if (held.kind !== 'acquired') throw new Error('not acquired');
    clock.advance(TTL - 1000);
    expect(await held.claim.renew()).toBe(true);
    clock.advance(TTL - 1000);
    expect((await b.acquire({ breadcrumbId: id, rid: 'r' })).kind).toBe('busy');
  });

  it('adopts its own live claim only when it never started it', async () => {
    const { replica, requestId } = await setup();
    const id = await requestId();
    const a = replica('A');
    expect((await a.acquire({ breadcrumbId: id, rid: 'r' })).kind).toBe('acquired');
    // The same manager (it started the run): busy, never a second execution.
    expect((await a.acquire({ breadcrumbId: id, rid: 'r' })).kind).toBe('busy');
    // A manager of the same holder that never started it (its create reply was lost): adopts.
    const adopted = await replica('A').acquire({ breadcrumbId: id, rid: 'r' });
    expect(adopted.kind === 'acquired' && adopted.claim.attempt).toBe(1);
  });

  it('a released claim is taken at once as the next attempt', async () => {
    const { replica, requestId } = await setup();
    const id = await requestId();
    const held = await replica('A').acquire({ breadcrumbId: id, rid: 'r' });
    if (held.kind !== 'acquired') throw new Error('not acquired');
    await held.claim.release();
    const next = await replica('B').acquire({ breadcrumbId: id, rid: 'r' });
    expect(next.kind === 'acquired' && next.claim.attempt).toBe(2);
  });

  it('an answer that appears while claiming wins: answered, and the claim is dropped', async () => {
    const { c, replica, requestId, clock } = await setup();
    const id = await requestId();
    const held = await replica('A').acquire({ breadcrumbId: id, rid: 'r' });
    if (held.kind !== 'acquired') throw new Error('not acquired');
    await writeAnswer(c, id);
    clock.advance(TTL + 1);
    const b = replica('B');
    expect(await b.acquire({ breadcrumbId: id, rid: 'r' })).toEqual({ kind: 'answered' });
    expect(await b.hasResponse(id)).toBe(true);
    await b.cleanup(id);
    expect(await c.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim, tag: keys.claimTag(id), limit: 10 })).toEqual([]);
  });

  it('a tag-only forged answer is not an answer', async () => {
    const { c, replica, requestId } = await setup();
    const id = await requestId();
    await c.createBreadcrumb({
      title: 'Response: t',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, TAG.request(id), `request:${id}`],
      context: {},
    });
    const a = replica('A');
    expect(await a.hasResponse(id)).toBe(false);
    expect((await a.acquire({ breadcrumbId: id, rid: id })).kind).toBe('acquired');
  });

  it('ignores forged claims: a far-future lease without a valid MAC blocks nothing', async () => {
    const { c, replica, requestId, clock } = await setup();
    const id = await requestId();
    const held = await replica('A').acquire({ breadcrumbId: id, rid: 'r' });
    if (held.kind !== 'acquired') throw new Error('not acquired');
    const far = new Date(clock.now() + 1e9).toISOString();
    for (const mac of [
      undefined,
      'forged',
      keys.claimMac({
        requestBreadcrumbId: id,
        attempt: 1,
        holder: 'A',
        expiresAt: new Date(0).toISOString(),
        released: false,
      }),
    ]) {
      await c.createBreadcrumb({
        title: 'Claim',
        schema_name: SCHEMA.ToolClaim,
        tags: [WS, TAG.Claim, keys.claimTag(id)],
        context: {
          request_id: 'r',
          request_breadcrumb_id: id,
          attempt: 7,
          holder: 'mallory',
          expires_at: far,
          ...(mac ? { mac } : {}),
        },
      });
    }
    expect(await replica('B').acquire({ breadcrumbId: id, rid: 'r' })).toMatchObject({ kind: 'busy', holder: 'A' });
    clock.advance(TTL + 1);
    const next = await replica('B').acquire({ breadcrumbId: id, rid: 'r' });
    expect(next.kind === 'acquired' && next.claim.attempt).toBe(2);
    expect((await replica('C').listExpired()).map((e) => e.requestBreadcrumbId)).not.toContain(id);
  });

  it('an edited or deleted claim delays a takeover by one lease from when it was seen, never more', async () => {
    const { c, replica, requestId, clock } = await setup();
    const id = await requestId();
    const held = await replica('A').acquire({ breadcrumbId: id, rid: 'r' });
    if (held.kind !== 'acquired') throw new Error('not acquired');
    const [record] = await c.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim, tag: keys.claimTag(id), limit: 10 });
    await c.updateBreadcrumb(record!.id, {
      context: {
        request_id: 'r',
        request_breadcrumb_id: id,
        attempt: 1,
        holder: 'mallory',
        expires_at: new Date(0).toISOString(),
      },
    });
    const b = replica('B');
    expect(await b.acquire({ breadcrumbId: id, rid: 'r' })).toMatchObject({
      kind: 'busy',
      holder: expect.stringMatching(/unknown/),
    });
    clock.advance(TTL / 2);
    expect((await b.acquire({ breadcrumbId: id, rid: 'r' })).kind).toBe('busy');
    // The holder renews: its lease record is valid again.
    expect(await held.claim.renew()).toBe(true);
    expect(await b.acquire({ breadcrumbId: id, rid: 'r' })).toMatchObject({ kind: 'busy', holder: 'A' });
    // Deleted: the holder re-creates it on renewal.
    await c.deleteBreadcrumb(record!.id);
    expect(await held.claim.renew()).toBe(true);
    expect(await b.acquire({ breadcrumbId: id, rid: 'r' })).toMatchObject({ kind: 'busy', holder: 'A' });
    // Deleted and the holder is gone: one lease after it was first seen missing, attempt 2.
    for (const item of await c.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim, tag: keys.claimTag(id), limit: 10 }))
      await c.deleteBreadcrumb(item.id);
    clock.advance(TTL + 1);
    expect((await b.acquire({ breadcrumbId: id, rid: 'r' })).kind).toBe('busy');
    clock.advance(TTL + 1);
    const next = await b.acquire({ breadcrumbId: id, rid: 'r' });
    expect(next.kind === 'acquired' && next.claim.attempt).toBe(2);
  });

  it('lists expired and released leases as takeover candidates, live ones not', async () => {
    const { replica, requestId, clock } = await setup();
    const [live, expired, released] = [await requestId(), await requestId(), await requestId()];
    const a = replica('A');
    const e = await a.acquire({ breadcrumbId: expired, rid: 'e' });
    const r = await a.acquire({ breadcrumbId: released, rid: 'r' });
    if (r.kind !== 'acquired' || e.kind !== 'acquired') throw new Error('not acquired');
    await r.claim.release();
    clock.advance(TTL + 1);
    await a.acquire({ breadcrumbId: live, rid: 'l' });
    const candidates = (await a.listExpired()).map((x) => x.requestBreadcrumbId).sort();
    expect(candidates).toEqual([expired, released].sort());
  });
});
