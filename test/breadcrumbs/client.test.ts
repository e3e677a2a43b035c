import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  StoreError,
  conflictId,
  createStoreClient,
  isConflict,
  isNotFound,
  isVersionMismatch,
} from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { onCleanup, startStore } from '../store/helpers.js';
import { TRANSPORTS, connect } from './transports.js';

const logger = silentLogger();
const body = (extra: Record<string, unknown> = {}) => ({ title: 'c', context: { n: 1 }, tags: ['t'], ...extra });

async function rejection(promise: Promise<unknown>): Promise<StoreError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

describe.each(TRANSPORTS)('store client against the embedded store (%s)', (transport) => {
  it('covers every breadcrumb call with typed results', async () => {
    const store = await startStore();
    const client = connect(transport, store, { baseUrl: store.url + '/' });
    onCleanup(() => client.close());
    expect(client.baseUrl).toBe(store.url);
    const { id } = await client.createBreadcrumb(body({ schema_name: 's.v1', context: { a: 1 } }), {
      idempotencyKey: 'k',
    });
    expect((await client.getBreadcrumb(id)).context).toEqual({ a: 1 });
    expect(await client.getBreadcrumbFull(id)).toMatchObject({
      id,
      version: 1,
      schema_name: 's.v1',
      checksum: expect.stringMatching(/^sha256:/),
    });
    expect(await client.updateBreadcrumb(id, { context: { a: 2 } }, { ifMatch: 1 })).toEqual({ ok: true, version: 2 });
    expect((await client.history(id)).map((h) => h.version)).toEqual([2, 1]);
    expect((await client.listBreadcrumbs({ tag: 't', include_context: true }))[0]).toMatchObject({
      id,
      context: { a: 2 },
    });
    expect((await client.search({ q: 'c', schema_name: 's.v1' })).map((b) => b.id)).toEqual([id]);
    await client.deleteBreadcrumb(id);
    expect(await client.listBreadcrumbs({})).toEqual([]);
    expect(await client.health()).toMatchObject({ status: 'ok' });
    expect(await client.token()).toBeUndefined();
  });

  it('listAll pages with offset until exhausted', async () => {
    const store = await startStore();
    const client = connect(transport, store);
    onCleanup(() => client.close());
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) ids.push((await client.createBreadcrumb(body({ tags: ['page'], context: { i } }))).id);
    await client.createBreadcrumb(body({ tags: ['other'] }));
    const all = await client.listAll({ tag: 'page', limit: 5 });
    expect(all.map((b) => b.id)).toEqual([...ids].reverse());
  });

  it('maps failures to StoreError with status, storeCode and runner code', async () => {
    const store = await startStore();
    const client = connect(transport, store);
    onCleanup(() => client.close());
    const { id } = await client.createBreadcrumb(body(), { idempotencyKey: 'once' });

    const conflict = await rejection(client.createBreadcrumb(body(), { idempotencyKey: 'once' }));
    expect(conflict).toMatchObject({ status: 409, storeCode: 'conflict', code: 'conflict', retryable: false });
    expect(conflict.message).toBe(
      'store POST /breadcrumbs answered 409 conflict: duplicate idempotency key: Idempotency-Key "once" was already used',
    );
    expect(isConflict(conflict)).toBe(true);
    expect(conflictId(conflict)).toBe(id);

    const mismatch = await rejection(client.updateBreadcrumb(id, { title: 'x' }, { ifMatch: 7 }));
    expect(mismatch).toMatchObject({ status: 412, storeCode: 'version_mismatch', code: 'conflict' });
    expect(isVersionMismatch(mismatch)).toBe(true);
    expect(isConflict(mismatch)).toBe(false);

    const missing = await rejection(client.getBreadcrumb('nope'));
    expect(missing).toMatchObject({
      status: 404,
      storeCode: 'not_found',
      code: 'not_found',
      message: 'store GET /breadcrumbs/nope answered 404 not_found: breadcrumb "nope" not found',
    });
    expect(isNotFound(missing)).toBe(true);

    const invalid = await rejection(
      client.createBreadcrumb({ title: 't', context: {}, tags: [1 as unknown as string] }),
    );
    expect(invalid).toMatchObject({ status: 400, storeCode: 'invalid_body', code: 'input.invalid', retryable: false });
    expect(invalid.message).toContain('tags must be an array of strings');
  });

  it.runIf(transport === 'http')('reports network failure, timeout and cancellation as status 0', async () => {
    const store = await startStore();
    const port = store.port;
    await store.close();
    const down = createStoreClient({ baseUrl: `http://127.0.0.1:${port}`, logger });
    const network = await rejection(down.health());
    expect(network).toMatchObject({ status: 0, storeCode: 'network', code: 'dependency.unavailable', retryable: true });
    expect(network.message).toBe('store GET /health failed: ECONNREFUSED');

    // A server that accepts and never answers (a fault the real store does not produce).
    const silent = http.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onCleanup(
      () =>
        new Promise((resolve) => {
          silent.closeAllConnections();
          silent.close(resolve);
        }),
    );
    const slow = createStoreClient({
      baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      logger,
      timeoutMs: 100,
    });
    const timeout = await rejection(slow.listBreadcrumbs({ tag: 'x' }));
    expect(timeout).toMatchObject({
      status: 0,
      storeCode: 'timeout',
      code: 'dependency.unavailable',
      message: 'store GET /breadcrumbs timed out after 100 ms',
    });
    const controller = new AbortController();
    const pending = slow.getBreadcrumb('a', { signal: controller.signal });
    controller.abort(new Error('shutting down'));
    const aborted = await rejection(pending);
    expect(aborted).toMatchObject({
      status: 0,
      storeCode: 'aborted',
      message: 'store GET /breadcrumbs/a was cancelled',
    });
    expect((aborted.cause as Error).message).toBe('shutting down');
    slow.close();
  });

  it('round-trips secrets', async () => {
    const store = await startStore();
    const client = connect(transport, store);
    onCleanup(() => client.close());
    const { id } = await client.createSecret({ name: 'KEY', scope_type: 'global', value: 's3cr3t-value' });
    expect(await client.listSecrets({ scope_type: 'global' })).toEqual([
      { id, name: 'KEY', scope_type: 'global', scope_id: null, created_at: expect.any(String) },
    ]);
    expect(await client.decryptSecret(id, 'test')).toBe('s3cr3t-value');
    await client.deleteSecret(id);
    expect(isNotFound(await rejection(client.decryptSecret(id)))).toBe(true);
  });
});

describe.each(TRANSPORTS)('store client auth (%s)', (transport) => {
  const SECRET = 'client-test-secret-xyz';
  const ADMIN = 'client-test-admin-xyz';

  it('mints once for concurrent callers, uses the token, and maps 401/403 to permission.denied', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const client = connect(transport, store, {
      auth: { mint: { owner_id: 'o1', agent_id: 'runner', adminKey: ADMIN } },
    });
    onCleanup(() => client.close());
    const [a, b] = await Promise.all([client.token(), client.token()]);
    expect(a).toBeDefined();
    expect(a).toBe(b);
    const { id } = await client.createBreadcrumb(body());
    expect(await client.getBreadcrumbFull(id)).toMatchObject({ owner_id: 'o1', created_by: 'runner' });

    const anonymous = connect(transport, store);
    const denied = await rejection(anonymous.listBreadcrumbs({}));
    expect(denied).toMatchObject({ status: 401, storeCode: 'unauthorized', code: 'permission.denied' });
    const reader = connect(transport, store, {
      auth: { mint: { owner_id: 'o1', agent_id: 'r', roles: ['subscriber'], adminKey: ADMIN } },
    });
    expect(await rejection(reader.createBreadcrumb(body()))).toMatchObject({
      status: 403,
      storeCode: 'forbidden',
      code: 'permission.denied',
    });
    const badAdmin = connect(transport, store, {
      auth: { mint: { owner_id: 'o1', agent_id: 'r', adminKey: 'wrong' } },
    });
    expect(await rejection(badAdmin.listBreadcrumbs({}))).toMatchObject({
      status: 403,
      message: expect.stringContaining('POST /auth/token answered 403'),
    });
    const fixed = connect(transport, store, { auth: { token: (await client.token())! } });
    expect((await fixed.listBreadcrumbs({})).map((x) => x.id)).toEqual([id]);
    for (const c of [anonymous, reader, badAdmin, fixed]) c.close();
  });

  it.runIf(transport === 'http')('re-mints and retries once when the store refuses a minted token (401)', async () => {
    const first = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const client = createStoreClient({
      baseUrl: first.url,
      logger,
      auth: { mint: { owner_id: 'o', agent_id: 'a', adminKey: ADMIN } },
    });
    onCleanup(() => client.close());
    const before = await client.token();
    await client.listBreadcrumbs({});
    await first.close();
    // Same port, new signing secret: the held token is now invalid.
    await startStore({ port: first.port, authSecret: 'rotated-secret-123', adminKey: ADMIN });
    expect(await client.listBreadcrumbs({})).toEqual([]);
    expect(await client.token()).not.toBe(before);
  });

  it('re-mints shortly before the token expires', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const client = connect(transport, store, {
      auth: { mint: { owner_id: 'o', agent_id: 'a', adminKey: ADMIN, ttl_sec: 1 } },
    });
    onCleanup(() => client.close());
    const first = await client.token();
    const deadline = Date.now() + 10_000;
    let next = first;
    while (next === first && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      next = await client.token();
    }
    expect(next).not.toBe(first);
    expect(await client.listBreadcrumbs({})).toEqual([]);
  });
});

describe.each(TRANSPORTS)('store client values over %s', (transport) => {
  it("isolates values as if serialised: neither side can change the other's objects", async () => {
    const store = await startStore();
    const client = connect(transport, store);
    const input = {
      title: 'iso',
      context: { nested: { n: 1 }, list: [1, 2], gone: undefined as unknown, when: new Date(0) },
      tags: ['iso'],
      description: undefined,
    };
    const { id } = await client.createBreadcrumb(input);
    input.context.nested.n = 99;
    input.context.list.push(3);
    input.tags.push('late');
    const first = await client.getBreadcrumb(id);
    // Exactly what JSON carries: undefined dropped, Date as its ISO text.
    expect(first.context).toEqual({ nested: { n: 1 }, list: [1, 2], when: '1970-01-01T00:00:00.000Z' });
    expect(first.tags).toEqual(['iso']);
    (first.context.nested as { n: number }).n = 7;
    first.tags.push('mine');
    const again = await client.getBreadcrumb(id);
    expect(again.context.nested).toEqual({ n: 1 });
    expect(again.tags).toEqual(['iso']);
    const [listed] = await client.listBreadcrumbs({ tag: 'iso', include_context: true });
    (listed!.context as { nested: { n: number } }).nested.n = 5;
    expect((await client.getBreadcrumbFull(id)).context).toEqual({
      nested: { n: 1 },
      list: [1, 2],
      when: '1970-01-01T00:00:00.000Z',
    });
  });

  it('refuses what HTTP cannot carry, the same way on both transports', async () => {
    const store = await startStore();
    const client = connect(transport, store);
    const badKey = await rejection(client.createBreadcrumb(body(), { idempotencyKey: 'line\nbreak' }));
    expect(badKey).toMatchObject({
      status: 0,
      storeCode: 'unsendable',
      code: 'input.invalid',
      message:
        'store POST /breadcrumbs was not sent: header Idempotency-Key holds characters HTTP headers cannot carry',
    });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const badBody = await rejection(client.createBreadcrumb(body({ context: cyclic })));
    expect(badBody).toMatchObject({ status: 0, storeCode: 'unsendable', code: 'input.invalid' });
    expect(badBody.message).toMatch(/^store POST \/breadcrumbs was not sent: Converting circular structure to JSON/);
    const longKey = await rejection(client.createBreadcrumb(body(), { idempotencyKey: 'k'.repeat(257) }));
    expect(longKey.message).toBe(
      'store POST /breadcrumbs answered 400 invalid_body: Idempotency-Key must be 1 to 256 characters, got 257',
    );
    const badSearch = await rejection(client.search({ qvec: [] }));
    expect(badSearch).toMatchObject({ status: 400, storeCode: 'invalid_query' });
    expect(await client.listBreadcrumbs({ limit: 0, tag: 'none' })).toEqual([]);
    expect(await rejection(client.getBreadcrumb('%zz'))).toMatchObject({ status: 404 });
  });
});
