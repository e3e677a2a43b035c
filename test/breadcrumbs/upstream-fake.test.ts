// The client against a tiny "upstream-like" server (a typed boundary: another server): plain-text
// error bodies, PATCH answering only {"ok":true}, 400 on a repeated tag, offset ignored by a
// misbehaving list, a 200 that is not JSON.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  StoreError,
  createStoreClient,
  isConflict,
  isNotFound,
  isVersionMismatch,
} from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { onCleanup } from '../store/helpers.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function upstream(route: (req: Seen, res: http.ServerResponse) => void): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(entry);
      route(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const text = (res: http.ServerResponse, status: number, body: string): void => {
  res.writeHead(status, { 'Content-Type': 'text/plain' }).end(body);
};
const json = (res: http.ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
};

async function failure(promise: Promise<unknown>): Promise<StoreError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

describe('store client against an upstream-like server', () => {
  it('derives storeCode and runner code from the status of plain-text errors', async () => {
    const statuses: Record<string, [number, string]> = {
      '/breadcrumbs/missing': [404, 'not found'],
      '/breadcrumbs/conflict': [409, 'duplicate idempotency key'],
      '/breadcrumbs/stale': [412, 'version_mismatch'],
      '/breadcrumbs/denied': [401, 'unauthorized'],
      '/breadcrumbs/boom': [500, 'database error: connection refused'],
      '/breadcrumbs/bad': [422, 'Failed to deserialize the JSON body'],
    };
    const { url } = await upstream((req, res) => {
      const [status, body] = statuses[req.url.replace(/\/full$/, '')] ?? [404, 'not found'];
      text(res, status, body);
    });
    const client = createStoreClient({ baseUrl: url, logger: silentLogger() });
    onCleanup(() => client.close());
    const missing = await failure(client.getBreadcrumbFull('missing'));
    expect(missing).toMatchObject({
      status: 404,
      storeCode: 'not_found',
      code: 'not_found',
      message: 'store GET /breadcrumbs/missing/full answered 404 not_found: not found',
    });
    expect(isNotFound(missing)).toBe(true);
    const conflict = await failure(client.getBreadcrumb('conflict'));
    expect(conflict).toMatchObject({ status: 409, storeCode: 'conflict', code: 'conflict' });
    expect(isConflict(conflict)).toBe(true);
    const stale = await failure(client.updateBreadcrumb('stale', { title: 'x' }, { ifMatch: 1 }));
    expect(stale).toMatchObject({ status: 412, storeCode: 'version_mismatch', code: 'conflict' });
    expect(isVersionMismatch(stale)).toBe(true);
    expect(await failure(client.getBreadcrumb('denied'))).toMatchObject({
      status: 401,
      storeCode: 'unauthorized',
      code: 'permission.denied',
      retryable: false,
    });
    expect(await failure(client.getBreadcrumb('boom'))).toMatchObject({
      status: 500,
      storeCode: 'server_error',
      code: 'dependency.unavailable',
      retryable: true,
    });
    expect(await failure(client.getBreadcrumb('bad'))).toMatchObject({
      status: 422,
      storeCode: 'invalid_body',
      code: 'input.invalid',
    });
  });

  it('accepts a PATCH reply without version and sends If-Match / Idempotency-Key / one tag', async () => {
    const { url, seen } = await upstream((req, res) => {
      if (req.method === 'PATCH') return json(res, 200, { ok: true });
      if (req.method === 'POST') return json(res, 201, { id: '11111111-1111-4111-8111-111111111111' });
      return json(res, 200, []);
    });
    const client = createStoreClient({ baseUrl: url, logger: silentLogger(), auth: { token: 'upstream-token' } });
    onCleanup(() => client.close());
    expect(await client.updateBreadcrumb('abc', { context: { x: 1 } }, { ifMatch: 3 })).toEqual({ ok: true });
    expect(await client.createBreadcrumb({ title: 't', context: {}, tags: ['a'] }, { idempotencyKey: 'k-1' })).toEqual({
      id: '11111111-1111-4111-8111-111111111111',
    });
    await client.listBreadcrumbs({
      tag: 'tool:request',
      schema_name: 'tool.request.v1',
      include_context: true,
      limit: 50,
    });
    expect(seen[0]).toMatchObject({
      method: 'PATCH',
      url: '/breadcrumbs/abc',
      headers: { 'if-match': '3', authorization: 'Bearer upstream-token' },
    });
    expect(JSON.parse(seen[0]!.body)).toEqual({ context: { x: 1 } });
    expect(seen[1]!.headers['idempotency-key']).toBe('k-1');
    const query = new URL(seen[2]!.url, url).searchParams;
    expect(query.getAll('tag')).toEqual(['tool:request']);
    expect(Object.fromEntries(query)).toEqual({
      tag: 'tool:request',
      schema_name: 'tool.request.v1',
      include_context: 'true',
      limit: '50',
    });
  });

  it('mints without an admin key when none is given, and listAll stops when a server ignores offset', async () => {
    const item = {
      id: 'a',
      title: 't',
      tags: ['x'],
      schema_name: null,
      version: 1,
      updated_at: '2025-01-01T00:00:00Z',
    };
    const { url, seen } = await upstream((req, res) => {
      if (req.url === '/auth/token')
        return json(res, 200, { token: 'minted.jwt.token', owner_id: 'o', agent_id: 'a', roles: ['emitter'] });
      return json(res, 200, [item, { ...item, id: 'b' }]);
    });
    const client = createStoreClient({
      baseUrl: url,
      logger: silentLogger(),
      auth: { mint: { owner_id: 'o', agent_id: 'a' } },
    });
    onCleanup(() => client.close());
    expect((await client.listAll({ tag: 'x', limit: 2 })).map((b) => b.id)).toEqual(['a', 'b']);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/auth/token' });
    expect(seen[0]!.headers['x-admin-key']).toBeUndefined();
    expect(JSON.parse(seen[0]!.body)).toEqual({ owner_id: 'o', agent_id: 'a' });
    expect(seen.slice(1).map((s) => s.headers.authorization)).toEqual([
      'Bearer minted.jwt.token',
      'Bearer minted.jwt.token',
    ]);
  });

  it('reports a 200 whose body is not JSON, or has the wrong shape, as dependency.unavailable', async () => {
    const { url } = await upstream((req, res) =>
      req.url.startsWith('/breadcrumbs?') ? json(res, 200, [{ id: 5 }]) : text(res, 200, '<html>proxy</html>'),
    );
    const client = createStoreClient({ baseUrl: url, logger: silentLogger() });
    onCleanup(() => client.close());
    expect(await failure(client.getBreadcrumb('x'))).toMatchObject({
      storeCode: 'invalid_response',
      code: 'dependency.unavailable',
      message: 'store GET /breadcrumbs/x answered 200 with a body that is not JSON',
    });
    const shape = await failure(client.listBreadcrumbs({ limit: 1 }));
    expect(shape).toMatchObject({ storeCode: 'invalid_response', code: 'dependency.unavailable' });
    expect(shape.message).toMatch(/^store GET \/breadcrumbs answered an unexpected shape: 0\.id: /);
  });

  it('keeps a path prefix of the base URL (a store behind a reverse proxy)', async () => {
    const { url, seen } = await upstream((_req, res) => json(res, 200, []));
    const client = createStoreClient({ baseUrl: `${url}/rcrt/`, logger: silentLogger() });
    onCleanup(() => client.close());
    expect(client.baseUrl).toBe(`${url}/rcrt`);
    await client.listBreadcrumbs({ tag: 'a b' });
    expect(seen[0]!.url).toBe('/rcrt/breadcrumbs?tag=a+b');
  });

  it('refuses a base URL that is not http(s)', () => {
    expect(() => createStoreClient({ baseUrl: 'ftp://x', logger: silentLogger() })).toThrow(
      'store URL "ftp://x" must be http:// or https://',
    );
    expect(() => createStoreClient({ baseUrl: 'nope', logger: silentLogger() })).toThrow(
      'store URL "nope" is not a valid URL',
    );
  });
});
