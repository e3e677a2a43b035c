import { SignJWT, decodeJwt } from 'jose';
import { expect, it } from 'vitest';
import { createStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/logger.js';
import { call, crumb, openSse, startStore, describeBackends } from './helpers.js';

const SECRET = 'test-auth-secret-0123456789';
const ADMIN = 'test-admin-key-0123456789';

async function mint(url: string, body: Record<string, unknown>, adminKey: string | undefined = ADMIN): Promise<string> {
  const reply = await call(url, 'POST', '/auth/token', {
    body,
    headers: adminKey === undefined ? {} : { 'X-Admin-Key': adminKey },
  });
  expect(reply.status).toBe(200);
  return reply.body.token as string;
}

const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

describeBackends('store: auth on (authSecret set)', () => {
  it('mints HS256 tokens with the admin key only', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const reply = await call(store.url, 'POST', '/auth/token', {
      body: { owner_id: 'o1', agent_id: 'agent-1', ttl_sec: 60 },
      headers: { 'X-Admin-Key': ADMIN },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      token: expect.any(String),
      owner_id: 'o1',
      agent_id: 'agent-1',
      roles: ['curator', 'emitter', 'subscriber'],
      exp: expect.any(Number),
    });
    const claims = decodeJwt(reply.body.token);
    expect(claims).toMatchObject({
      sub: 'agent-1',
      owner_id: 'o1',
      roles: ['curator', 'emitter', 'subscriber'],
      exp: reply.body.exp,
    });
    expect((claims.exp as number) - (claims.iat as number)).toBe(60);

    const missing = await call(store.url, 'POST', '/auth/token', { body: { owner_id: 'o1', agent_id: 'a' } });
    expect(missing).toMatchObject({
      status: 403,
      body: { code: 'forbidden', error: 'token minting requires the X-Admin-Key header' },
    });
    const wrong = await call(store.url, 'POST', '/auth/token', {
      body: { owner_id: 'o1', agent_id: 'a' },
      headers: { 'X-Admin-Key': 'nope' },
    });
    expect(wrong).toMatchObject({
      status: 403,
      body: { code: 'forbidden', error: 'X-Admin-Key does not match the store admin key' },
    });
  });

  it('refuses minting with a clear 403 when no admin key is configured', async () => {
    const store = await startStore({ authSecret: SECRET });
    const reply = await call(store.url, 'POST', '/auth/token', {
      body: { owner_id: 'o', agent_id: 'a' },
      headers: { 'X-Admin-Key': 'x' },
    });
    expect(reply).toMatchObject({
      status: 403,
      body: { code: 'forbidden', error: 'token minting is disabled: the store has no admin key configured' },
    });
  });

  it('answers 401 without a token, with a bad, foreign-signed or expired token', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const none = await call(store.url, 'GET', '/breadcrumbs');
    expect(none).toMatchObject({
      status: 401,
      body: {
        code: 'unauthorized',
        error: 'missing Authorization: send a bearer token (Authorization: Bearer <token>)',
      },
    });
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const garbage = await call(store.url, 'GET', '/breadcrumbs', { headers: bearer('not.a.jwt') });
    expect(garbage).toMatchObject({
      status: 401,
      body: { code: 'unauthorized', error: expect.stringMatching(/^invalid token: /) },
    });
    const foreign = await new SignJWT({ owner_id: 'o', roles: ['curator'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('a')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('another-secret'));
    expect((await call(store.url, 'GET', '/breadcrumbs', { headers: bearer(foreign) })).body.error).toBe(
      'invalid token: signature verification failed',
    );
    const expired = await new SignJWT({ owner_id: 'o', roles: ['curator'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('a')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 120)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(new TextEncoder().encode(SECRET));
    expect((await call(store.url, 'GET', '/breadcrumbs', { headers: bearer(expired) })).status).toBe(401);
    expect((await call(store.url, 'GET', '/breadcrumbs', { headers: { Authorization: 'Basic abc' } })).body.error).toBe(
      'invalid Authorization header; expected "Bearer <token>"',
    );
    expect((await openSse(store.url)).status).toBe(401);
  });

  it('checks roles: writes need emitter/curator, reads any role, secrets curator', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const subscriber = await mint(store.url, { owner_id: 'o', agent_id: 'reader', roles: ['subscriber'] });
    const emitter = await mint(store.url, { owner_id: 'o', agent_id: 'writer', roles: ['emitter'] });
    const nobody = await mint(store.url, { owner_id: 'o', agent_id: 'nobody', roles: [] });
    const write = await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: bearer(subscriber) });
    expect(write).toMatchObject({
      status: 403,
      body: {
        code: 'forbidden',
        error:
          'emitter role required: token of agent "reader" lacks a role (emitter or curator) required for this route',
      },
    });
    const created = await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: bearer(emitter) });
    expect(created.status).toBe(201);
    expect(
      (await call(store.url, 'GET', `/breadcrumbs/${created.body.id}`, { headers: bearer(subscriber) })).status,
    ).toBe(200);
    expect((await call(store.url, 'GET', '/breadcrumbs', { headers: bearer(nobody) })).status).toBe(403);
    const secret = await call(store.url, 'POST', '/secrets', {
      body: { name: 'K', scope_type: 'global', value: 'v' },
      headers: bearer(emitter),
    });
    expect(secret).toMatchObject({
      status: 403,
      body: { error: 'curator role required: token of agent "writer" lacks a role (curator) required for this route' },
    });
    expect((await call(store.url, 'GET', '/secrets', { headers: bearer(subscriber) })).status).toBe(403);
    expect((await call(store.url, 'GET', '/health')).status).toBe(200);
  });

  it('scopes records, listings, search, history, events and secrets to the token owner; created_by is the sub', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const alice = await mint(store.url, { owner_id: 'owner-a', agent_id: 'alice' });
    const bob = await mint(store.url, { owner_id: 'owner-b', agent_id: 'bob' });
    const bobStream = await openSse(store.url, { query: `?access_token=${bob}` });
    const aliceStream = await openSse(store.url, { query: `?token=${alice}` });
    expect(bobStream.status).toBe(200);
    const a = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ title: 'findme' }),
      headers: bearer(alice),
    });
    const b = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'findme' }), headers: bearer(bob) });
    expect((await call(store.url, 'GET', `/breadcrumbs/${a.body.id}`, { headers: bearer(bob) })).status).toBe(404);
    expect(
      (await call(store.url, 'PATCH', `/breadcrumbs/${a.body.id}`, { body: { title: 'x' }, headers: bearer(bob) }))
        .status,
    ).toBe(404);
    expect((await call(store.url, 'DELETE', `/breadcrumbs/${a.body.id}`, { headers: bearer(bob) })).status).toBe(404);
    expect(await call(store.url, 'GET', `/breadcrumbs/${a.body.id}/history`, { headers: bearer(bob) })).toMatchObject({
      status: 200,
      body: [],
    });
    expect(
      (await call(store.url, 'GET', '/breadcrumbs?tag=t:a', { headers: bearer(bob) })).body.map(
        (x: { id: string }) => x.id,
      ),
    ).toEqual([b.body.id]);
    expect(
      (await call(store.url, 'GET', '/breadcrumbs/search?q=findme', { headers: bearer(alice) })).body.map(
        (x: { id: string }) => x.id,
      ),
    ).toEqual([a.body.id]);
    const full = (await call(store.url, 'GET', `/breadcrumbs/${a.body.id}/full`, { headers: bearer(alice) })).body;
    expect(full).toMatchObject({ owner_id: 'owner-a', created_by: 'alice', updated_by: 'alice' });
    expect((await aliceStream.waitForEvents(1)).map((e) => e.data.breadcrumb_id)).toEqual([a.body.id]);
    expect((await bobStream.waitForEvents(1)).map((e) => e.data.breadcrumb_id)).toEqual([b.body.id]);
    // An Idempotency-Key used by another owner still conflicts, but the winner's id is not revealed.
    await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb(),
      headers: { ...bearer(alice), 'Idempotency-Key': 'k1' },
    });
    const clash = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb(),
      headers: { ...bearer(bob), 'Idempotency-Key': 'k1' },
    });
    expect(clash.status).toBe(409);
    expect(clash.body.id).toBeUndefined();
    const secret = await call(store.url, 'POST', '/secrets', {
      body: { name: 'K', scope_type: 'global', value: 'alice-value' },
      headers: bearer(alice),
    });
    expect((await call(store.url, 'GET', '/secrets', { headers: bearer(bob) })).body).toEqual([]);
    expect(
      (await call(store.url, 'POST', `/secrets/${secret.body.id}/decrypt`, { body: {}, headers: bearer(bob) })).status,
    ).toBe(404);
    expect(
      (
        await call(store.url, 'POST', '/secrets', {
          body: { name: 'K', scope_type: 'global', value: 'bob-value' },
          headers: bearer(bob),
        })
      ).status,
    ).toBe(200);
  });
});

describeBackends('store: auth off (no authSecret)', () => {
  it('leaves every route open; minting works without an admin key; a presented token sets owner and created_by', async () => {
    const store = await startStore({ adminKey: ADMIN });
    const open = await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    expect(open.status).toBe(201);
    expect((await call(store.url, 'GET', `/breadcrumbs/${open.body.id}/full`)).body).toMatchObject({
      owner_id: '00000000-0000-0000-0000-000000000001',
      created_by: null,
    });
    const token = await mint(store.url, { owner_id: 'o-x', agent_id: 'agent-x', roles: ['subscriber'] }, undefined);
    const withToken = await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: bearer(token) });
    expect(withToken.status).toBe(201);
    expect((await call(store.url, 'GET', `/breadcrumbs/${withToken.body.id}/full`)).body).toMatchObject({
      owner_id: 'o-x',
      created_by: 'agent-x',
    });
    expect((await call(store.url, 'GET', '/breadcrumbs', { headers: bearer('garbage') })).body).toHaveLength(2);
    expect((await call(store.url, 'GET', '/secrets')).status).toBe(200);
  });

  it('refuses to start on a non-loopback host without authSecret', async () => {
    const options = {
      host: '0.0.0.0',
      port: 0,
      dataDir: ':memory:',
      maxBodyBytes: 1024 * 1024,
      authSecret: undefined,
      adminKey: undefined,
      secretsKey: undefined,
      pingIntervalMs: 5000,
      eventRetention: 1000,
      logger: silentLogger(),
    };
    await expect(createStore(options)).rejects.toMatchObject({
      code: 'config.invalid',
      message:
        'refusing to serve the store on non-loopback host "0.0.0.0" without authSecret (set --auth-secret, or bind to 127.0.0.1)',
    });
    const store = await createStore({ ...options, authSecret: SECRET });
    await store.close();
  });
});
