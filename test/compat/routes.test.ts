// Contract tests of docs/compat.md: auth/token, error phrases, the registry routes, secrets and
// the rows where we keep (documented) strictness. Each test names the upstream handler it pins.
import { describe, expect, it } from 'vitest';
import { call, crumb, startStore } from '../store/helpers.js';

const SECRET = 'compat-auth-secret-0123456789abcdef';
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('compat: POST /auth/token (upstream generate_jwt_token)', () => {
  it("auth on, --auth-mint open: upstream components mint without an admin key (ids default like upstream's SDK expects), the token works, the agent is registered", async () => {
    const store = await startStore({ authSecret: SECRET, authMint: 'open' });
    const minted = await call(store.url, 'POST', '/auth/token', {
      body: { owner_id: 'o1', agent_id: 'agent-1', roles: ['curator', 'emitter', 'subscriber'] },
    });
    expect(minted).toMatchObject({
      status: 200,
      body: {
        token: expect.any(String),
        owner_id: 'o1',
        agent_id: 'agent-1',
        roles: ['curator', 'emitter', 'subscriber'],
        exp: expect.any(Number),
      },
    });
    expect(
      (await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: bearer(minted.body.token) })).status,
    ).toBe(201);
    expect((await call(store.url, 'GET', '/agents', { headers: bearer(minted.body.token) })).body).toEqual([
      { id: 'agent-1', roles: ['curator', 'emitter', 'subscriber'], created_at: expect.any(String) },
    ]);
    // The SDK's token refresh posts {}.
    const empty = await call(store.url, 'POST', '/auth/token', { body: {} });
    expect(empty.body).toMatchObject({
      owner_id: '00000000-0000-0000-0000-000000000001',
      agent_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
  });

  it('auth on, default mint mode stays secure: no admin key, no token (403, documented)', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: 'admin-key-1' });
    expect(await call(store.url, 'POST', '/auth/token', { body: { owner_id: 'o', agent_id: 'a' } })).toMatchObject({
      status: 403,
      body: { code: 'forbidden', error: 'token minting requires the X-Admin-Key header' },
    });
    expect(
      (
        await call(store.url, 'POST', '/auth/token', {
          body: { owner_id: 'o', agent_id: 'a' },
          headers: { 'X-Admin-Key': 'admin-key-1' },
        })
      ).status,
    ).toBe(200);
  });
});

describe('compat: phrases upstream clients match on', () => {
  it('409 "duplicate idempotency key", 412 "version_mismatch", 404 "not found", 403 "curator role required", 401 "missing Authorization" / "invalid token"', async () => {
    const open = await startStore();
    await call(open.url, 'POST', '/breadcrumbs', { body: crumb(), headers: { 'Idempotency-Key': 'k' } });
    const dup = await call(open.url, 'POST', '/breadcrumbs', { body: crumb(), headers: { 'Idempotency-Key': 'k' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toContain('duplicate idempotency key');
    const {
      body: { id },
    } = await call(open.url, 'POST', '/breadcrumbs', { body: crumb() });
    const stale = await call(open.url, 'PATCH', `/breadcrumbs/${id}`, {
      body: { title: 'x' },
      headers: { 'If-Match': '7' },
    });
    expect(stale.status).toBe(412);
    expect(stale.body.error).toMatch(/^version_mismatch/);
    expect((await call(open.url, 'GET', '/breadcrumbs/00000000-0000-4000-8000-000000000000')).body.error).toContain(
      'not found',
    );

    const secured = await startStore({ authSecret: SECRET, authMint: 'open' });
    const reader = (
      await call(secured.url, 'POST', '/auth/token', { body: { owner_id: 'o', agent_id: 'r', roles: ['subscriber'] } })
    ).body.token as string;
    expect((await call(secured.url, 'GET', '/tenants', { headers: bearer(reader) })).body.error).toMatch(
      /^curator role required/,
    );
    expect(
      (await call(secured.url, 'POST', '/breadcrumbs', { body: crumb(), headers: bearer(reader) })).body.error,
    ).toMatch(/^emitter role required/);
    expect((await call(secured.url, 'GET', '/breadcrumbs')).body.error).toMatch(/^missing Authorization/);
    expect((await call(secured.url, 'GET', '/breadcrumbs', { headers: bearer('x.y.z') })).body.error).toMatch(
      /^invalid token/,
    );
  });
});

describe('compat: registry routes the SDK calls', () => {
  it('agents (list_agents, get_agent, register_agent, delete_agent): upsert, read, 404 "agent not found", delete', async () => {
    const store = await startStore();
    expect(await call(store.url, 'POST', '/agents/a-1', { body: { roles: ['emitter'] } })).toMatchObject({
      status: 200,
      body: { ok: true },
    });
    expect((await call(store.url, 'GET', '/agents/a-1')).body).toEqual({
      id: 'a-1',
      roles: ['emitter'],
      created_at: expect.any(String),
    });
    expect((await call(store.url, 'GET', '/agents')).body.map((a: { id: string }) => a.id)).toEqual(['a-1']);
    expect(await call(store.url, 'DELETE', '/agents/a-1')).toMatchObject({ status: 200, body: { ok: true } });
    expect(await call(store.url, 'GET', '/agents/a-1')).toMatchObject({
      status: 404,
      body: { code: 'not_found', error: 'agent not found: no agent "a-1"' },
    });
    expect(await call(store.url, 'POST', '/agents/a-1', { body: { roles: 'x' } })).toMatchObject({
      status: 400,
      body: { code: 'invalid_body', error: 'roles must be an array of strings, got "x"' },
    });
  });

  it('an agent may register itself, another agent needs curator (upstream "forbidden")', async () => {
    const store = await startStore({ authSecret: SECRET, authMint: 'open' });
    const emitter = (
      await call(store.url, 'POST', '/auth/token', { body: { owner_id: 'o', agent_id: 'me', roles: ['emitter'] } })
    ).body.token as string;
    expect(
      (await call(store.url, 'POST', '/agents/me', { body: { roles: ['emitter'] }, headers: bearer(emitter) })).status,
    ).toBe(200);
    expect(
      await call(store.url, 'POST', '/agents/other', { body: { roles: ['curator'] }, headers: bearer(emitter) }),
    ).toMatchObject({ status: 403, body: { error: 'forbidden: only "other" itself or a curator may change it' } });
  });

  it('tenants (list_tenants, get_tenant, ensure_tenant/update_tenant, delete_tenant): the default tenant exists, 404 "tenant not found"', async () => {
    const store = await startStore();
    expect((await call(store.url, 'GET', '/tenants')).body).toEqual([
      { id: '00000000-0000-0000-0000-000000000001', name: 'Default Tenant', created_at: expect.any(String) },
    ]);
    expect((await call(store.url, 'PUT', '/tenants/t-2', { body: { name: 'Two' } })).body).toEqual({ ok: true });
    expect((await call(store.url, 'POST', '/tenants/t-2', { body: { name: 'Deux' } })).body).toEqual({ ok: true });
    expect((await call(store.url, 'GET', '/tenants/t-2')).body).toMatchObject({ id: 't-2', name: 'Deux' });
    expect((await call(store.url, 'DELETE', '/tenants/t-2')).body).toEqual({ ok: true });
    expect(await call(store.url, 'GET', '/tenants/t-2')).toMatchObject({
      status: 404,
      body: { error: 'tenant not found: no tenant "t-2"' },
    });
    expect(await call(store.url, 'PUT', '/tenants/t-3', { body: {} })).toMatchObject({
      status: 400,
      body: { error: 'name must be a non-empty string, got undefined' },
    });
  });

  it('ACL (list_acls, grant_acl {id}, revoke_acl {rows}) and selectors (create/list/update/delete_selector) keep upstream shapes', async () => {
    const store = await startStore();
    const grant = { breadcrumb_id: 'b-1', grantee_agent_id: 'g-1', action: 'read_full' };
    const granted = await call(store.url, 'POST', '/acl/grant', { body: grant });
    expect(granted.body).toEqual({ id: expect.any(String) });
    expect((await call(store.url, 'POST', '/acl/grant', { body: { ...grant, action: 'update' } })).body).toEqual(
      granted.body,
    );
    expect((await call(store.url, 'GET', '/acl')).body).toEqual([
      {
        id: granted.body.id,
        breadcrumb_id: 'b-1',
        grantee_agent_id: 'g-1',
        actions: ['read_full', 'update'],
        created_at: expect.any(String),
      },
    ]);
    expect((await call(store.url, 'POST', '/acl/revoke', { body: grant })).body).toEqual({ rows: 1 });
    expect((await call(store.url, 'POST', '/acl/revoke', { body: grant })).body).toEqual({ rows: 0 });

    const created = await call(store.url, 'POST', '/subscriptions/selectors', {
      body: { any_tags: ['a'], schema_name: 's.v1' },
    });
    expect(created.body).toEqual({
      id: expect.any(String),
      owner_id: '00000000-0000-0000-0000-000000000001',
      agent_id: expect.any(String),
      selector: { any_tags: ['a'], all_tags: null, schema_name: 's.v1', context_match: null },
    });
    expect(
      (await call(store.url, 'PUT', `/subscriptions/selectors/${created.body.id}`, { body: { all_tags: ['b'] } })).body,
    ).toEqual({ ok: true });
    expect(
      (await call(store.url, 'GET', '/subscriptions/selectors')).body.map((s: { selector: unknown }) => s.selector),
    ).toEqual([{ any_tags: null, all_tags: ['b'], schema_name: null, context_match: null }]);
    expect((await call(store.url, 'DELETE', `/subscriptions/selectors/${created.body.id}`)).body).toEqual({ ok: true });
    expect(await call(store.url, 'PUT', `/subscriptions/selectors/${created.body.id}`, { body: {} })).toMatchObject({
      status: 404,
    });
    expect(await call(store.url, 'POST', '/subscriptions/selectors', { body: { any_tags: 'a' } })).toMatchObject({
      status: 400,
      body: { error: 'any_tags must be an array of strings or null, got string' },
    });
  });

  it('DLQ (list_dlq, delete_dlq, retry_dlq) answers as upstream does with an empty queue; webhooks are 501', async () => {
    const store = await startStore();
    expect((await call(store.url, 'GET', '/dlq')).body).toEqual([]);
    expect((await call(store.url, 'DELETE', '/dlq/x')).body).toEqual({ ok: true });
    expect(await call(store.url, 'POST', '/dlq/x/retry')).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await call(store.url, 'GET', '/agents/a/webhooks')).toMatchObject({
      status: 501,
      body: { code: 'not_implemented' },
    });
  });
});

describe('compat: secrets, history, visibility (upstream update_secret, get_breadcrumb_history, create_breadcrumb)', () => {
  it('PUT /secrets/:id replaces the value ({ok:true}); a duplicate name stays a 409 (kept strict: names must resolve to one value)', async () => {
    const store = await startStore();
    const {
      body: { id },
    } = await call(store.url, 'POST', '/secrets', { body: { name: 'K', scope_type: 'global', value: 'one' } });
    expect((await call(store.url, 'PUT', `/secrets/${id}`, { body: { value: 'two' } })).body).toEqual({ ok: true });
    expect((await call(store.url, 'POST', `/secrets/${id}/decrypt`, { body: {} })).body).toEqual({ value: 'two' });
    expect(
      (await call(store.url, 'POST', '/secrets', { body: { name: 'K', scope_type: 'global', value: 'three' } })).status,
    ).toBe(409);
  });

  it('history of an unknown id is 200 []; an unknown visibility is ignored (default Team); an unknown sensitivity stays a 400 (kept strict)', async () => {
    const store = await startStore();
    expect(await call(store.url, 'GET', '/breadcrumbs/nope/history')).toMatchObject({ status: 200, body: [] });
    const world = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ visibility: 'world' }) });
    expect(world.status).toBe(201);
    expect((await call(store.url, 'GET', `/breadcrumbs/${world.body.id}/full`)).body.visibility).toBe('Team');
    const pub = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ visibility: 'public' }) });
    expect((await call(store.url, 'GET', `/breadcrumbs/${pub.body.id}/full`)).body.visibility).toBe('Public');
    await call(store.url, 'PATCH', `/breadcrumbs/${pub.body.id}`, { body: { visibility: 'everyone' } });
    expect((await call(store.url, 'GET', `/breadcrumbs/${pub.body.id}/full`)).body.visibility).toBe('Public');
    expect(await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ sensitivity: 'topsecret' }) })).toMatchObject({
      status: 400,
      body: { error: 'sensitivity must be one of Low, Pii, Secret, got "topsecret"' },
    });
  });
});

describe('compat: the remaining rows of docs/compat.md', () => {
  it('create answers 2xx {id} (upstream 200, ours 201); /health 200; /admin/purge keeps upstream keys; search ignores limit like upstream; path ids need not be UUIDs', async () => {
    const store = await startStore();
    const created = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'apple' }) });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body)).toEqual(['id']);
    expect((await call(store.url, 'GET', '/health')).status).toBe(200);
    expect((await call(store.url, 'POST', '/admin/purge')).body).toEqual({
      purged: 0,
      ttl_purged: 0,
      health_checks_purged: 0,
      expired_purged: 0,
    });
    for (let i = 0; i < 6; i++) await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: `apple ${i}` }) });
    expect((await call(store.url, 'GET', '/breadcrumbs/search?q=apple&limit=2')).body).toHaveLength(5);
    expect((await call(store.url, 'POST', '/agents/not-a-uuid', { body: { roles: [] } })).status).toBe(200);
  });

  it('operational upstream routes that no SDK call uses are 404 route_not_found; /agents/run is 501, never an agent named "run"', async () => {
    const store = await startStore();
    expect(await call(store.url, 'POST', '/agents/run', { body: {} })).toMatchObject({
      status: 501,
      body: { code: 'not_implemented' },
    });
    expect(await call(store.url, 'GET', '/agents/run')).toMatchObject({ status: 405 });
    for (const [method, path] of [
      ['GET', '/hygiene/stats'],
      ['POST', '/hygiene/run'],
      ['GET', '/openapi.json'],
    ] as const) {
      expect(await call(store.url, method, path, method === 'POST' ? { body: {} } : {})).toMatchObject({
        status: 404,
        body: { code: 'route_not_found' },
      });
    }
    // /metrics is served, with our own metric names (the database size among them; docs/store.md).
    const metrics = await fetch(`${store.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^tools_runner_store_db_bytes \d+$/m);
  });
});
