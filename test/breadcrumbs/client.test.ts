import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { StoreError, conflictId, createStoreClient, isConflict, isNotFound, isVersionMismatch } from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { onCleanup, startStore } from '../store/helpers.js';

const logger = silentLogger();
const body = (extra: Record<string, unknown> = {}) => ({ title: 'c', context: { n: 1 }, tags: ['t'], ...extra });

async function rejection(promise: Promise<unknown>): Promise<StoreError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

describe('store client against the embedded store', () => {
  it('covers every breadcrumb call with typed results', async () => {
    const store = await startStore();
    const client = createStoreClient({ baseUrl: store.url + '/', logger });
    onCleanup(() => client.close());
    expect(client.baseUrl).toBe(store.url);
    const { id } = await client.createBreadcrumb(body({ schema_name: 's.v1', context: { a: 1 } }), { idempotencyKey: 'k' });
    expect((await client.getBreadcrumb(id)).context).toEqual({ a: 1 });
    expect(await client.getBreadcrumbFull(id)).toMatchObject({ id, version: 1, schema_name: 's.v1', checksum: expect.stringMatching(/^sha256:/) });
    expect(await client.updateBreadcrumb(id, { context: { a: 2 } }, { ifMatch: 1 })).toEqual({ ok: true, version: 2 });
    expect((await client.history(id)).map((h) => h.version)).toEqual([2, 1]);
    expect((await client.listBreadcrumbs({ tag: 't', include_context: true }))[0]).toMatchObject({ id, context: { a: 2 } });
    expect((await client.search({ q: 'c', schema_name: 's.v1' })).map((b) => b.id)).toEqual([id]);
    await client.deleteBreadcrumb(id);
    expect(await client.listBreadcrumbs({})).toEqual([]);
    expect(await client.health()).toMatchObject({ status: 'ok' });
    expect(await client.token()).toBeUndefined();
  });

  it('listAll pages with offset until exhausted', async () => {
    const store = await startStore();
    const client = createStoreClient({ baseUrl: store.url, logger });
    onCleanup(() => client.close());
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) ids.push((await client.createBreadcrumb(body({ tags: ['page'], context: { i } }))).id);
    await client.createBreadcrumb(body({ tags: ['other'] }));
    const all = await client.listAll({ tag: 'page', limit: 5 });
    expect(all.map((b) => b.id)).toEqual([...ids].reverse());
  });

  it('maps failures to StoreError with status, storeCode and runner code', async () => {
    const store = await startStore();
    const client = createStoreClient({ baseUrl: store.url, logger });
    onCleanup(() => client.close());
    const { id } = await client.createBreadcrumb(body(), { idempotencyKey: 'once' });

    const conflict = await rejection(client.createBreadcrumb(body(), { idempotencyKey: 'once' }));
    expect(conflict).toMatchObject({ status: 409, storeCode: 'conflict', code: 'conflict', retryable: false });
    expect(conflict.message).toBe('store POST /breadcrumbs answered 409 conflict: duplicate idempotency key: Idempotency-Key "once" was already used');
    expect(isConflict(conflict)).toBe(true);
    expect(conflictId(conflict)).toBe(id);

    const mismatch = await rejection(client.updateBreadcrumb(id, { title: 'x' }, { ifMatch: 7 }));
    expect(mismatch).toMatchObject({ status: 412, storeCode: 'version_mismatch', code: 'conflict' });
    expect(isVersionMismatch(mismatch)).toBe(true);
    expect(isConflict(mismatch)).toBe(false);

    const missing = await rejection(client.getBreadcrumb('nope'));
    expect(missing).toMatchObject({ status: 404, storeCode: 'not_found', code: 'not_found', message: 'store GET /breadcrumbs/nope answered 404 not_found: breadcrumb "nope" not found' });
    expect(isNotFound(missing)).toBe(true);

    const invalid = await rejection(client.createBreadcrumb({ title: 't', context: {}, tags: [1 as unknown as string] }));
    expect(invalid).toMatchObject({ status: 400, storeCode: 'invalid_body', code: 'input.invalid', retryable: false });
    expect(invalid.message).toContain('tags must be an array of strings');
  });

  it('reports network failure, timeout and cancellation as status 0', async () => {
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
    onCleanup(() => new Promise((resolve) => { silent.closeAllConnections(); silent.close(resolve); }));
    const slow = createStoreClient({ baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, logger, timeoutMs: 100 });
    const timeout = await rejection(slow.listBreadcrumbs({ tag: 'x' }));
    expect(timeout).toMatchObject({ status: 0, storeCode: 'timeout', code: 'dependency.unavailable', message: 'store GET /breadcrumbs timed out after 100 ms' });
    const controller = new AbortController();
    const pending = slow.getBreadcrumb('a', { signal: controller.signal });
    controller.abort(new Error('shutting down'));
    const aborted = await rejection(pending);
    expect(aborted).toMatchObject({ status: 0, storeCode: 'aborted', message: 'store GET /breadcrumbs/a was cancelled' });
    expect((aborted.cause as Error).message).toBe('shutting down');
    slow.close();
  });

  it('round-trips secrets', async () => {
    const store = await startStore();
    const client = createStoreClient({ baseUrl: store.url, logger });
    onCleanup(() => client.close());
    const { id } = await client.createSecret({ name: 'KEY', scope_type: 'global', value: 's3cr3t-value' });
    expect(await client.listSecrets({ scope_type: 'global' })).toEqual([{ id, name: 'KEY', scope_type: 'global', scope_id: null, created_at: expect.any(String) }]);
    expect(await client.decryptSecret(id, 'test')).toBe('s3cr3t-value');
    await client.deleteSecret(id);
    expect(isNotFound(await rejection(client.decryptSecret(id)))).toBe(true);
  });
});

describe('store client auth', () => {
  const SECRET = 'client-test-secret-xyz';
  const ADMIN = 'client-test-admin-xyz';

  it('mints once for concurrent callers, uses the token, and maps 401/403 to permission.denied', async () => {
    const store = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const client = createStoreClient({ baseUrl: store.url, logger, auth: { mint: { owner_id: 'o1', agent_id: 'runner', adminKey: ADMIN } } });
    onCleanup(() => client.close());
    const [a, b] = await Promise.all([client.token(), client.token()]);
    expect(a).toBeDefined();
    expect(a).toBe(b);
    const { id } = await client.createBreadcrumb(body());
    expect(await client.getBreadcrumbFull(id)).toMatchObject({ owner_id: 'o1', created_by: 'runner' });

    const anonymous = createStoreClient({ baseUrl: store.url, logger });
    const denied = await rejection(anonymous.listBreadcrumbs({}));
    expect(denied).toMatchObject({ status: 401, storeCode: 'unauthorized', code: 'permission.denied' });
    const reader = createStoreClient({ baseUrl: store.url, logger, auth: { mint: { owner_id: 'o1', agent_id: 'r', roles: ['subscriber'], adminKey: ADMIN } } });
    expect(await rejection(reader.createBreadcrumb(body()))).toMatchObject({ status: 403, storeCode: 'forbidden', code: 'permission.denied' });
    const badAdmin = createStoreClient({ baseUrl: store.url, logger, auth: { mint: { owner_id: 'o1', agent_id: 'r', adminKey: 'wrong' } } });
    expect(await rejection(badAdmin.listBreadcrumbs({}))).toMatchObject({ status: 403, message: expect.stringContaining('POST /auth/token answered 403') });
    const fixed = createStoreClient({ baseUrl: store.url, logger, auth: { token: (await client.token())! } });
    expect((await fixed.listBreadcrumbs({})).map((x) => x.id)).toEqual([id]);
    for (const c of [anonymous, reader, badAdmin, fixed]) c.close();
  });

  it('re-mints and retries once when the store refuses a minted token (401)', async () => {
    const first = await startStore({ authSecret: SECRET, adminKey: ADMIN });
    const client = createStoreClient({ baseUrl: first.url, logger, auth: { mint: { owner_id: 'o', agent_id: 'a', adminKey: ADMIN } } });
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
    const client = createStoreClient({ baseUrl: store.url, logger, auth: { mint: { owner_id: 'o', agent_id: 'a', adminKey: ADMIN, ttl_sec: 1 } } });
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
