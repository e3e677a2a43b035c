// The store's lease routes (/x/leases/*): who may call them (the lease key on top of a writer's
// token; agents with every role but no key are refused), compare-and-set semantics (one holder per
// attempt, takeover only once free, token-only renew and release, done is final), validation that
// names the bad value, that a lease writes no breadcrumb and no event, and that leases of removed
// requests are swept — on SQLite and on PostgreSQL alike. On PostgreSQL, several store replicas on
// one database racing for the same leases: exactly one winner per attempt.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.js';
import { PG_UNAVAILABLE } from '../support/pg-cluster.js';
import { call, captureLogger, crumb, describeBackends, pgDatabase, startStore } from './helpers.js';

const KEY = 'lease-key-for-tests-0123';
const headers = { 'X-Lease-Key': KEY };
const lease = (url: string, op: string, body: Record<string, unknown>, extra: Record<string, string> = headers) =>
  call(url, 'POST', `/x/leases/${op}`, { body, headers: extra });
const base = { scope: 'ws', name: 'r1', holder: 'a', token: 'tok-a', ttl_ms: 60_000, label: 'rid-1' };

/** `base` with the lease named after a breadcrumb created for it in the store at `url`. */
async function namedBase(url: string): Promise<typeof base> {
  const name = (await call(url, 'POST', '/breadcrumbs', { body: crumb() })).body.id as string;
  return { ...base, name };
}

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describeBackends('lease routes: who may call', () => {
  it('are off (404) without a lease key, and /health does not advertise them', async () => {
    const store = await startStore();
    expect((await call(store.url, 'GET', '/health')).body.x_leases).toBeUndefined();
    const reply = await lease(store.url, 'acquire', base);
    expect(reply.status).toBe(404);
    expect(reply.body.error).toMatch(/leases are not enabled/);
  });

  it('need the lease key: missing or wrong is 403, even for a token with every role', async () => {
    const store = await startStore({
      leaseKey: KEY,
      authSecret: 'auth-secret-for-tests-0123456789',
      adminKey: 'admin-key-for-tests',
    });
    expect((await call(store.url, 'GET', '/health')).body.x_leases).toBe(true);
    const minted = await call(store.url, 'POST', '/auth/token', {
      body: { owner_id: 'o', agent_id: 'hostile' },
      headers: { 'X-Admin-Key': 'admin-key-for-tests' },
    });
    const auth = { Authorization: `Bearer ${minted.body.token as string}` };
    const none = await lease(store.url, 'acquire', base, auth);
    expect([none.status, none.body.error]).toEqual([403, 'lease routes require the X-Lease-Key header']);
    const wrong = await lease(store.url, 'acquire', base, { ...auth, 'X-Lease-Key': 'not-the-key-at-all' });
    expect([wrong.status, wrong.body.error]).toEqual([403, 'X-Lease-Key does not match the store lease key']);
    // The key alone is not enough either: the route needs a writer's token first.
    expect((await lease(store.url, 'acquire', base)).status).toBe(401);
    const ok = await lease(store.url, 'acquire', base, { ...auth, ...headers });
    expect(ok.body).toMatchObject({ acquired: true, attempt: 1 });
  });

  it.each([
    [
      'scope missing',
      { ...base, scope: undefined },
      'scope must be a non-empty string of at most 512 characters, got undefined',
    ],
    ['ttl_ms zero', { ...base, ttl_ms: 0 }, 'ttl_ms must be an integer from 1 to 86400000, got 0'],
    ['token a number', { ...base, token: 7 }, 'token must be a non-empty string of at most 512 characters, got 7'],
  ])('reject a bad body (%s) naming the value', async (_name, body, message) => {
    const store = await startStore({ leaseKey: KEY });
    const reply = await lease(store.url, 'acquire', body);
    expect([reply.status, reply.body.code, reply.body.error]).toEqual([400, 'invalid_body', message]);
  });

  it('names an unknown operation', async () => {
    const store = await startStore({ leaseKey: KEY });
    const reply = await lease(store.url, 'steal', base);
    expect([reply.status, reply.body.error]).toEqual([
      404,
      'no lease operation "steal" (known: acquire, renew, release, finish, expired, list)',
    ]);
  });
});

describeBackends('lease routes: compare-and-set', () => {
  it('one holder per attempt; busy until free; a takeover is attempt 2 with a new token', async () => {
    const store = await startStore({ leaseKey: KEY });
    // Named after an existing breadcrumb (as the runner names its leases): a released lease is then
    // no orphan for the retention sweep to remove between the release and the takeover.
    const base = await namedBase(store.url);
    expect((await lease(store.url, 'acquire', base)).body).toMatchObject({
      acquired: true,
      attempt: 1,
      takeover: false,
    });
    // The same token again (a retried call): the same lease.
    expect((await lease(store.url, 'acquire', base)).body).toMatchObject({ acquired: true, attempt: 1 });
    const other = { ...base, holder: 'b', token: 'tok-b' };
    expect((await lease(store.url, 'acquire', other)).body).toMatchObject({
      acquired: false,
      state: 'held',
      holder: 'a',
      attempt: 1,
    });
    // Only the holder's token renews or releases.
    expect((await lease(store.url, 'renew', { ...other, ttl_ms: 60_000 })).body).toEqual({ ok: false, state: 'taken' });
    expect((await lease(store.url, 'release', other)).body).toEqual({ ok: false });
    expect((await lease(store.url, 'release', base)).body).toEqual({ ok: true });
    expect((await lease(store.url, 'acquire', other)).body).toMatchObject({
      acquired: true,
      attempt: 2,
      takeover: true,
    });
    // The old holder can no longer touch it.
    expect((await lease(store.url, 'renew', base)).body).toEqual({ ok: false, state: 'taken' });
  });

  it('a lease past its expiry is free: listed as expired, taken over once', async () => {
    const store = await startStore({ leaseKey: KEY });
    // Named after an existing breadcrumb (as the runner names its leases): the orphan sweep leaves it alone.
    const name = (await call(store.url, 'POST', '/breadcrumbs', { body: crumb() })).body.id as string;
    await lease(store.url, 'acquire', { ...base, name, ttl_ms: 1 });
    await waitUntil(
      async () => (await lease(store.url, 'expired', { scope: 'ws' })).body.leases.length === 1,
      'the lease to expire',
    );
    const [b, c] = await Promise.all([
      lease(store.url, 'acquire', { ...base, name, holder: 'b', token: 'tok-b' }),
      lease(store.url, 'acquire', { ...base, name, holder: 'c', token: 'tok-c' }),
    ]);
    expect([b.body.acquired, c.body.acquired].filter(Boolean)).toHaveLength(1);
    expect((await lease(store.url, 'expired', { scope: 'ws' })).body.leases).toEqual([]);
  });

  it('done is final, and finishing writes no breadcrumb and no event', async () => {
    const store = await startStore({ leaseKey: KEY });
    // Named after an existing breadcrumb (as the runner names its leases): a done lease is then no
    // orphan for the retention sweep to remove before the second acquire.
    const base = await namedBase(store.url);
    const before = (await call(store.url, 'GET', '/breadcrumbs')).body.length;
    await lease(store.url, 'acquire', base);
    await lease(store.url, 'renew', base);
    expect((await lease(store.url, 'finish', { scope: 'ws', name: base.name })).body).toEqual({ ok: true });
    expect((await lease(store.url, 'acquire', { ...base, token: 'tok-new' })).body).toMatchObject({
      acquired: false,
      state: 'done',
    });
    expect((await lease(store.url, 'list', { scope: 'ws' })).body.leases).toEqual([
      expect.objectContaining({ name: base.name, state: 'done', label: 'rid-1' }),
    ]);
    expect((await call(store.url, 'GET', '/breadcrumbs')).body.length).toBe(before);
    // No event either: replayed from the start, the stream holds the two creates and nothing between.
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { marker: 'after the leases' } }) });
    const frames: string[] = [];
    let seen: () => void = () => {};
    const last = new Promise<void>((resolve) => (seen = resolve));
    const sub = await store.local.stream(new URLSearchParams('x_ext=ids,deleted'), undefined, '0', {
      frame: (data) => {
        frames.push(data);
        if (data.includes('after the leases')) seen();
      },
      end: () => {},
    });
    await last;
    sub.close();
    expect(frames).toHaveLength(2);
  });
});

describeBackends('lease routes: orphans', () => {
  it('the store sweeps a lease once it is not live and its request is gone; live leases and those of existing requests stay', async () => {
    const store = await startStore({ leaseKey: KEY, pruneIntervalMs: 50 });
    const kept = (await call(store.url, 'POST', '/breadcrumbs', { body: crumb() })).body.id as string;
    const gone = (await call(store.url, 'POST', '/breadcrumbs', { body: crumb() })).body.id as string;
    const doneGone = (await call(store.url, 'POST', '/breadcrumbs', { body: crumb() })).body.id as string;
    await lease(store.url, 'acquire', { ...base, name: kept });
    await lease(store.url, 'finish', { scope: 'ws', name: kept });
    await lease(store.url, 'acquire', { ...base, name: gone });
    await lease(store.url, 'release', { ...base, name: gone });
    await lease(store.url, 'acquire', { ...base, name: doneGone });
    await lease(store.url, 'finish', { scope: 'ws', name: doneGone });
    // Held and live, with no request at all: not touched until it expires.
    await lease(store.url, 'acquire', { ...base, name: 'no-such-request' });
    for (const id of [gone, doneGone]) expect((await call(store.url, 'DELETE', `/breadcrumbs/${id}`)).status).toBe(200);
    const names = async (): Promise<string[]> =>
      ((await lease(store.url, 'list', { scope: 'ws' })).body.leases as Array<{ name: string }>).map((l) => l.name);
    await waitUntil(async () => (await names()).length === 2, 'the two orphaned leases to be swept');
    expect((await names()).sort()).toEqual([kept, 'no-such-request'].sort());
  });
});

// Acquires `name` through every store at once, `perStore` contenders each (distinct holders and tokens).
async function race(stores: Store[], perStore: number, name: string, tag: string) {
  const contenders = stores.flatMap((store, s) =>
    Array.from({ length: perStore }, (_, k) => ({ store, holder: `${tag}-s${s}-c${k}` })),
  );
  const replies = await Promise.all(
    contenders.map(async ({ store, holder }) => ({
      holder,
      body: (await lease(store.url, 'acquire', { ...base, name, holder, token: `tok-${holder}` })).body,
    })),
  );
  return replies.filter((reply) => reply.body.acquired === true);
}

describe.skipIf(PG_UNAVAILABLE !== undefined)('lease routes on PostgreSQL: three store replicas, one database', () => {
  it('replicas racing for the same lease: exactly one winner per round, for a new lease, a released one and an expired one', async () => {
    const db = await pgDatabase();
    const stores = await Promise.all([0, 1, 2].map(() => startStore({ db, leaseKey: KEY })));
    const ROUNDS = 30;
    for (let round = 0; round < ROUNDS; round++) {
      // Named after a breadcrumb, as the runner's leases are: a released lease of no breadcrumb is an
      // orphan, and a retention sweep between the release and the race may rightly remove it.
      const name = (await call((stores[round % 3] as Store).url, 'POST', '/breadcrumbs', { body: crumb() })).body
        .id as string;
      const first = await race(stores, 2, name, `r${round}a`);
      expect(first, `round ${round}: new lease`).toHaveLength(1);
      expect(first[0]?.body).toMatchObject({ acquired: true, attempt: 1, takeover: false });
      const winner = first[0]?.holder as string;
      const store = stores[round % 3] as Store;
      const released = await lease(store.url, 'release', { ...base, name, token: `tok-${winner}` });
      expect(released.body).toEqual({ ok: true });
      const second = await race(stores, 2, name, `r${round}b`);
      expect(second, `round ${round}: released lease`).toHaveLength(1);
      expect(second[0]?.body).toMatchObject({ acquired: true, attempt: 2, takeover: true });
    }
    // Expired (not released) leases: one short lease per name, then every replica races for each. Each
    // is named after a breadcrumb, as the runner's are, so the orphan sweep never removes one early.
    const names: string[] = [];
    for (let round = 0; round < ROUNDS; round++)
      names.push((await call((stores[round % 3] as Store).url, 'POST', '/breadcrumbs', { body: crumb() })).body.id);
    for (const name of names) await lease((stores[0] as Store).url, 'acquire', { ...base, name, ttl_ms: 1 });
    await waitUntil(
      async () => (await lease((stores[1] as Store).url, 'expired', { scope: 'ws' })).body.leases.length === ROUNDS,
      'the short leases to expire',
    );
    for (const name of names) {
      const winners = await race(stores, 2, name, name);
      expect(winners, `${name}: expired lease`).toHaveLength(1);
      expect(winners[0]?.body).toMatchObject({ acquired: true, attempt: 2, takeover: true });
    }
    // Every replica reads the same table: the winners are the holders of record.
    const listed = (await lease((stores[2] as Store).url, 'list', { scope: 'ws' })).body.leases as Array<{
      name: string;
      attempt: number;
      state: string;
    }>;
    expect(listed).toHaveLength(2 * ROUNDS);
    expect(listed.every((l) => l.attempt === 2 && l.state === 'held')).toBe(true);
  }, 120_000);

  it('replicas sweeping orphaned leases at once remove each, never one a replica has just taken over, and log no failure', async () => {
    const db = await pgDatabase();
    const logs = [captureLogger(), captureLogger(), captureLogger()];
    // Every replica sweeps every 20 ms: their sweeps overlap each other and the acquires below.
    const stores = await Promise.all(
      logs.map(({ logger }) => startStore({ db, leaseKey: KEY, pruneIntervalMs: 20, logger })),
    );
    const COUNT = 150;
    const names = Array.from({ length: COUNT }, (_, n) => `orphan-${n}`);
    // Released leases of requests that do not exist, all at once (one INSERT, so the sweeps find
    // them together with the acquires below): orphans from the start.
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    await client.query(
      `INSERT INTO leases (scope, name, attempt, holder, token, state, label, expires_ms, updated_ms)
       SELECT 'ws', n, 1, 'old', 'old-' || n, 'released', '', 0, 0 FROM unnest($1::text[]) AS n`,
      [names],
    );
    await client.end();
    // Half of them are taken again while the sweeps run: whoever wins (a takeover, or a fresh insert
    // after a sweep removed the row) holds a live lease that no sweep may remove.
    const taken = await Promise.all(
      names
        .filter((_, n) => n % 2 === 0)
        .map(async (name, n) => {
          const token = `new-${name}`;
          const reply = await lease((stores[n % 3] as Store).url, 'acquire', { ...base, name, token });
          expect(reply.body).toMatchObject({ acquired: true });
          return { name, token };
        }),
    );
    await waitUntil(
      async () => (await lease((stores[0] as Store).url, 'list', { scope: 'ws' })).body.leases.length === taken.length,
      'the untaken orphans to be swept',
    );
    // Each taken lease is still its taker's: no sweep removed or changed it.
    for (const [n, { name, token }] of taken.entries()) {
      const renewed = await lease((stores[n % 3] as Store).url, 'renew', { ...base, name, token });
      expect(renewed.body, name).toEqual({ ok: true, state: 'held' });
    }
    const failures = logs.flatMap(({ lines }) => lines.filter((line) => line.level === 'error'));
    expect(failures).toEqual([]);
  }, 120_000);
});
