// Lease claims (src/request/lease-claims.ts) against the real embedded store's lease routes: one
// replica per attempt, takeover of a released or expired lease as the next attempt (re-checking for
// an answer first), finished leases never taken again, and no claim breadcrumbs at all.

import { describe, expect, it } from 'vitest';
import { createRequestKeys, createStoreClient, SCHEMA, TAG, type StoreClient } from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import type { ClaimManager } from '../../src/request/claims.js';
import {
  checkLeaseKey,
  createLeaseClaimManager,
  leaseToken,
  storeOffersLeases,
} from '../../src/request/lease-claims.js';
import { onCleanup, startStore } from '../store/helpers.js';

const WS = 'workspace:tools';
const KEY = 'lease-key-for-tests-0123';
const keys = createRequestKeys(Buffer.alloc(32, 7));

async function setup(): Promise<{
  c: StoreClient;
  replica(holder: string, ttlMs?: number, client?: StoreClient): ClaimManager;
  requestId(): Promise<string>;
}> {
  const store = await startStore({ leaseKey: KEY });
  const c = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
  onCleanup(() => c.close());
  return {
    c,
    replica: (holder, ttlMs = 60_000, client = c) =>
      createLeaseClaimManager({ client, workspace: WS, holder, ttlMs, keys, leaseKey: KEY, logger: silentLogger() }),
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

describe('lease claims', () => {
  it('draws lease tokens from a pooled CSPRNG buffer: 24 base64url characters, never the same twice across refills', () => {
    const tokens = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const token = leaseToken();
      expect(token).toMatch(/^[A-Za-z0-9_-]{24}$/);
      tokens.add(token);
    }
    expect(tokens.size).toBe(1000);
  });

  it('the store advertises leases, and a wrong key fails the start naming the fix', async () => {
    const { c } = await setup();
    expect(await storeOffersLeases(c)).toBe(true);
    await expect(checkLeaseKey(c, WS, 'another-key-entirely')).rejects.toThrow(
      /refused this runner's lease key .* --lease-key/,
    );
    await checkLeaseKey(c, WS, KEY);
  });

  it('gives attempt 1 to one replica; the other is busy; no claim breadcrumb is written', async () => {
    const { c, replica, requestId } = await setup();
    const id = await requestId();
    const [a, b] = await Promise.all([
      replica('a').acquire({ breadcrumbId: id, rid: 'r1' }),
      replica('b').acquire({ breadcrumbId: id, rid: 'r1' }),
    ]);
    const kinds = [a.kind, b.kind].sort();
    expect(kinds).toEqual(['acquired', 'busy']);
    expect(await c.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim })).toEqual([]);
  });

  it('a released lease is taken at once as the next attempt; the old holder can no longer renew', async () => {
    const { replica, requestId } = await setup();
    const id = await requestId();
    const first = await replica('a').acquire({ breadcrumbId: id, rid: 'r1' });
    if (first.kind !== 'acquired') throw new Error(first.kind);
    await first.claim.release();
    expect(await replica('a').listExpired()).toEqual([{ requestBreadcrumbId: id, rid: 'r1' }]);
    const second = await replica('b').acquire({ breadcrumbId: id, rid: 'r1' });
    expect(second.kind === 'acquired' && second.claim.attempt).toBe(2);
    expect(await first.claim.renew()).toBe(false);
  });

  it('an expired lease whose request was answered is not run again: answered, and finished', async () => {
    const { c, replica, requestId } = await setup();
    const id = await requestId();
    const first = await replica('a', 1).acquire({ breadcrumbId: id, rid: 'r1' });
    expect(first.kind).toBe('acquired');
    await writeAnswer(c, id);
    for (let i = 0; (await replica('b').listExpired()).length === 0; i++) {
      if (i > 3000) throw new Error('lease never expired');
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await replica('b').acquire({ breadcrumbId: id, rid: 'r1' })).kind).toBe('answered');
    expect((await replica('c').acquire({ breadcrumbId: id, rid: 'r1' })).kind).toBe('answered');
    expect(await replica('c').listExpired()).toEqual([]);
  });

  it('a dropped lease (answer written) is never acquired again', async () => {
    const { replica, requestId } = await setup();
    const id = await requestId();
    const held = await replica('a').acquire({ breadcrumbId: id, rid: 'r1' });
    if (held.kind !== 'acquired') throw new Error(held.kind);
    await held.claim.drop();
    expect((await replica('b').acquire({ breadcrumbId: id, rid: 'r1' })).kind).toBe('answered');
  });

  it("a drop that rides (the runner's after its answer) asks the store to ride, and alone it still commits", async () => {
    const { c, replica, requestId } = await setup();
    const finishes: Array<Record<string, unknown>> = [];
    const watched: StoreClient = {
      ...c,
      lease: (op, body, leaseKey, opts) => {
        if (op === 'finish') finishes.push(body);
        return c.lease(op, body, leaseKey, opts);
      },
    };
    const id = await requestId();
    const held = await replica('a', 60_000, watched).acquire({ breadcrumbId: id, rid: 'r1' });
    if (held.kind !== 'acquired') throw new Error(held.kind);
    await writeAnswer(c, id);
    await held.claim.drop({ ride: true });
    // the finish rides (the store holds it for the next write's commit, or RIDE_MAX_MS alone:
    // test/store/group-commit.test.ts); nothing else wrote, and it committed all the same
    expect(finishes).toEqual([expect.objectContaining({ ride: true })]);
    expect((await replica('b').acquire({ breadcrumbId: id, rid: 'r1' })).kind).toBe('answered');
  });
});
