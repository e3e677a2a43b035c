// The store's lease routes (/x/leases/*): who may call them (the lease key on top of a writer's
// token; agents with every role but no key are refused), compare-and-set semantics (one holder per
// attempt, takeover only once free, token-only renew and release, done is final), validation that
// names the bad value, and that a lease writes no breadcrumb and no event.
import { describe, expect, it } from 'vitest';
import { call, crumb, startStore } from './helpers.js';

const KEY = 'lease-key-for-tests-0123';
const headers = { 'X-Lease-Key': KEY };
const lease = (url: string, op: string, body: Record<string, unknown>, extra: Record<string, string> = headers) =>
  call(url, 'POST', `/x/leases/${op}`, { body, headers: extra });
const base = { scope: 'ws', name: 'r1', holder: 'a', token: 'tok-a', ttl_ms: 60_000, label: 'rid-1' };

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('lease routes: who may call', () => {
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

describe('lease routes: compare-and-set', () => {
  it('one holder per attempt; busy until free; a takeover is attempt 2 with a new token', async () => {
    const store = await startStore({ leaseKey: KEY });
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
    await lease(store.url, 'acquire', { ...base, ttl_ms: 1 });
    await waitUntil(
      async () => (await lease(store.url, 'expired', { scope: 'ws' })).body.leases.length === 1,
      'the lease to expire',
    );
    const [b, c] = await Promise.all([
      lease(store.url, 'acquire', { ...base, holder: 'b', token: 'tok-b' }),
      lease(store.url, 'acquire', { ...base, holder: 'c', token: 'tok-c' }),
    ]);
    expect([b.body.acquired, c.body.acquired].filter(Boolean)).toHaveLength(1);
    expect((await lease(store.url, 'expired', { scope: 'ws' })).body.leases).toEqual([]);
  });

  it('done is final, and finishing writes no breadcrumb and no event', async () => {
    const store = await startStore({ leaseKey: KEY });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    const before = (await call(store.url, 'GET', '/breadcrumbs')).body.length;
    await lease(store.url, 'acquire', base);
    await lease(store.url, 'renew', base);
    expect((await lease(store.url, 'finish', { scope: 'ws', name: 'r1' })).body).toEqual({ ok: true });
    expect((await lease(store.url, 'acquire', { ...base, token: 'tok-new' })).body).toMatchObject({
      acquired: false,
      state: 'done',
    });
    expect((await lease(store.url, 'list', { scope: 'ws' })).body.leases).toEqual([
      expect.objectContaining({ name: 'r1', state: 'done', label: 'rid-1' }),
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
