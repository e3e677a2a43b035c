// The in-process endpoint (Store.local) answers the store client's routes exactly as HTTP does:
// the bad-input cases of errors.test.ts with the same status, code and message, plus auth, 503
// while closing, and the event subscription's filters.
import { expect, it } from 'vitest';
import type { LocalReply, LocalRequest } from '../../src/store/index.js';
import { cases } from './error-cases.js';
import { call, crumb, startStore, describeBackends } from './helpers.js';

// The routes the store client uses, the ones the in-process endpoint serves.
const CLIENT_ROUTES = [
  /^\/health$/,
  /^\/auth\/token$/,
  /^\/breadcrumbs(\/search)?$/,
  /^\/breadcrumbs\/[^/]+(\/full|\/history)?$/,
  /^\/secrets(\/[^/]+(\/decrypt)?)?$/,
];
const served = (path: string): boolean => CLIENT_ROUTES.some((re) => re.test(path.split('?')[0] as string));

function request(
  path: string,
  options: { body?: unknown; raw?: string; headers?: Record<string, string> },
  token?: string,
): LocalRequest {
  const q = path.indexOf('?');
  const body =
    options.raw !== undefined ? (options.raw.trim() === '' ? undefined : JSON.parse(options.raw)) : options.body;
  return { query: new URLSearchParams(q === -1 ? '' : path.slice(q + 1)), headers: options.headers ?? {}, body, token };
}

const errorOf = (reply: LocalReply): Record<string, unknown> => {
  if (!('error' in reply)) throw new Error(`expected a failure, got ${reply.status}`);
  return reply.error;
};

// JSON-invalid bodies cannot reach the in-process endpoint (the client copies values as JSON).
const inProcessCases = cases.filter(
  ([, method, path, options]) =>
    served(path) &&
    !(options.raw !== undefined && !/^\s*(\{.*\})?\s*$/s.test(options.raw)) &&
    !(method === 'PUT' && path.startsWith('/breadcrumbs')) &&
    !(method === 'PUT' && path.startsWith('/secrets/')),
);

describeBackends('store in-process endpoint: same failures as HTTP', () => {
  it.each(inProcessCases)('%s', async (_name, method, rawPath, options, status, code, error) => {
    const store = await startStore();
    const path = rawPath.split('?')[0] as string;
    const reply = await store.local.call(method, path, request(rawPath, options));
    expect(reply.status).toBe(status);
    const body = errorOf(reply);
    expect(body.code).toBe(code);
    if (typeof error === 'string') expect(body.error).toBe(error);
    else expect(body.error).toMatch(error);
    // And HTTP agrees, field for field.
    const http = await call(store.url, method, rawPath, options);
    expect({ status: http.status, ...http.body }).toEqual({ status: reply.status, ...body });
  });

  it("answers success values like HTTP, 409 with the winner's id, 412 with the current version, 503 while closing", async () => {
    const store = await startStore();
    const created = await store.local.call(
      'POST',
      '/breadcrumbs',
      request('/breadcrumbs', { body: crumb(), headers: { 'Idempotency-Key': 'k1' } }),
    );
    expect(created).toEqual({ status: 201, value: { id: expect.any(String) } });
    const id = (created as { value: { id: string } }).value.id;
    expect(
      errorOf(
        await store.local.call(
          'POST',
          '/breadcrumbs',
          request('/breadcrumbs', { body: crumb(), headers: { 'Idempotency-Key': 'k1' } }),
        ),
      ),
    ).toEqual({
      error: 'duplicate idempotency key: Idempotency-Key "k1" was already used',
      code: 'conflict',
      id,
    });
    expect(
      errorOf(
        await store.local.call(
          'PATCH',
          `/breadcrumbs/${id}`,
          request('', { body: { title: 'x' }, headers: { 'If-Match': '3' } }),
        ),
      ),
    ).toEqual({
      error: `version_mismatch: breadcrumb "${id}" is at version 1, not 3`,
      code: 'version_mismatch',
      version: 1,
    });
    const local = await store.local.call('GET', `/breadcrumbs/${id}/full`, request('', {}));
    const http = await call(store.url, 'GET', `/breadcrumbs/${id}/full`);
    expect(local).toEqual({ status: 200, value: http.body });
    const listed = await store.local.call(
      'GET',
      '/breadcrumbs',
      request('/breadcrumbs?tag=t:a&include_context=true', {}),
    );
    expect(listed).toEqual({
      status: 200,
      value: (await call(store.url, 'GET', '/breadcrumbs?tag=t:a&include_context=true')).body,
    });
    const closing = store.close();
    expect(errorOf(await store.local.call('GET', '/health', request('', {})))).toEqual({
      error: 'the store is shutting down',
      code: 'unavailable',
    });
    await closing;
  });

  it('checks Idempotency-Key and If-Match before the body, like HTTP', async () => {
    const store = await startStore();
    const key = await store.local.call(
      'POST',
      '/breadcrumbs',
      request('', { body: [1], headers: { 'Idempotency-Key': '' } }),
    );
    expect(errorOf(key)).toEqual({ error: 'Idempotency-Key must be 1 to 256 characters, got 0', code: 'invalid_body' });
    expect(
      (await call(store.url, 'POST', '/breadcrumbs', { body: [1], headers: { 'Idempotency-Key': '' } })).body,
    ).toEqual(errorOf(key));
    const ifMatch = await store.local.call(
      'PATCH',
      '/breadcrumbs/x',
      request('', { body: [1], headers: { 'If-Match': 'soon' } }),
    );
    expect(errorOf(ifMatch)).toEqual({ error: 'If-Match must be a version number, got "soon"', code: 'invalid_body' });
    expect(
      (await call(store.url, 'PATCH', '/breadcrumbs/x', { body: [1], headers: { 'If-Match': 'soon' } })).body,
    ).toEqual(errorOf(ifMatch));
  });

  it('lists long listings whole and in the same order as HTTP, letting other work run meanwhile', async () => {
    const store = await startStore();
    for (let i = 0; i < 700; i++)
      await store.local.call('POST', '/breadcrumbs', request('', { body: crumb({ tags: ['many'], context: { i } }) }));
    let otherWorkRan = false;
    setImmediate(() => (otherWorkRan = true));
    const local = await store.local.call(
      'GET',
      '/breadcrumbs',
      request('/breadcrumbs?tag=many&include_context=true', {}),
    );
    expect(otherWorkRan).toBe(true);
    const http = await call(store.url, 'GET', '/breadcrumbs?tag=many&include_context=true');
    expect((local as { value: unknown[] }).value).toHaveLength(700);
    expect(local).toEqual({ status: 200, value: http.body });
  });

  it('authenticates the presented token and scopes records to its owner, like HTTP', async () => {
    const store = await startStore({ authSecret: 'local-secret-123', adminKey: 'local-admin-123' });
    const none = errorOf(await store.local.call('GET', '/breadcrumbs', request('', {})));
    expect(none).toEqual({
      error: 'missing Authorization: send a bearer token (Authorization: Bearer <token>)',
      code: 'unauthorized',
    });
    const minted = await store.local.call(
      'POST',
      '/auth/token',
      request('', {
        body: { owner_id: 'o1', agent_id: 'runner', roles: ['subscriber'] },
        headers: { 'X-Admin-Key': 'local-admin-123' },
      }),
    );
    const token = (minted as { value: { token: string } }).value.token;
    const forbidden = errorOf(await store.local.call('POST', '/breadcrumbs', request('', { body: crumb() }, token)));
    expect(forbidden).toEqual({
      error: 'emitter role required: token of agent "runner" lacks a role (emitter or curator) required for this route',
      code: 'forbidden',
    });
    const http = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb(),
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(http.body).toEqual(forbidden);
    expect(
      errorOf(
        await store.local.call(
          'POST',
          '/auth/token',
          request('', { body: { owner_id: 'o', agent_id: 'a' }, headers: { 'X-Admin-Key': 'nope' } }),
        ),
      ),
    ).toEqual({
      error: 'X-Admin-Key does not match the store admin key',
      code: 'forbidden',
    });
  });

  it("subscribes with the stream's filters and refuses a bad x_ext before subscribing", async () => {
    const store = await startStore();
    await expect(
      store.local.stream(new URLSearchParams('x_ext=teleport'), undefined, undefined, {
        frame: () => {},
        end: () => {},
      }),
    ).rejects.toEqual({
      status: 400,
      error: {
        error: 'x_ext names an unknown stream extension "teleport" (known: deleted, ids, gap)',
        code: 'invalid_query',
      },
    });
    const frames: Array<[string, string | undefined]> = [];
    let ended = false;
    const sub = await store.local.stream(new URLSearchParams('x_ext=ids,deleted&x_tag=keep'), undefined, undefined, {
      frame: (data, id) => frames.push([data, id]),
      end: () => (ended = true),
    });
    const a = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ tags: ['keep'] }) });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ tags: ['other'] }) });
    await call(store.url, 'DELETE', `/breadcrumbs/${a.body.id}`);
    await new Promise((resolve) => setImmediate(resolve));
    expect(frames.map(([data, id]) => [JSON.parse(data).type, JSON.parse(data).breadcrumb_id, id])).toEqual([
      ['breadcrumb.updated', a.body.id, '1'],
      ['breadcrumb.deleted', a.body.id, '3'],
    ]);
    expect((await call(store.url, 'GET', '/health')).body.streams).toBe(1);
    await store.close();
    expect(ended).toBe(true);
    sub.close();
  });
});
