import http from 'node:http';
import { expect, it } from 'vitest';
import { cases } from './error-cases.js';
import { call, crumb, startStore, describeBackends } from './helpers.js';

describeBackends('store: bad input gets a 4xx with JSON {error, code}', () => {
  it.each(cases)('%s', async (_name, method, path, options, status, code, error) => {
    const store = await startStore();
    const reply = await call(store.url, method, path, options);
    expect(reply.status).toBe(status);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(reply.body.code).toBe(code);
    if (typeof error === 'string') expect(reply.body.error).toBe(error);
    else expect(reply.body.error).toMatch(error);
  });

  it('rejects bad PATCH bodies and If-Match headers without changing anything', async () => {
    const store = await startStore();
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    const nullTitle = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: null } });
    expect(nullTitle).toMatchObject({ status: 400, body: { code: 'invalid_body', error: 'title cannot be null' } });
    const badMatch = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, {
      body: { title: 'x' },
      headers: { 'If-Match': 'abc' },
    });
    expect(badMatch).toMatchObject({
      status: 400,
      body: { code: 'invalid_body', error: 'If-Match must be a version number, got "abc"' },
    });
    const half = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: 'changed', tags: [1] } });
    expect(half.status).toBe(400);
    expect((await call(store.url, 'GET', `/breadcrumbs/${id}`)).body).toMatchObject({ title: 'a crumb', version: 1 });
  });

  it('413 when Content-Length announces too much, without reading the body', async () => {
    const store = await startStore({ maxBodyBytes: 2048 });
    const reply = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ context: { big: 'x'.repeat(4000) } }),
    });
    expect(reply.status).toBe(413);
    expect(reply.body).toEqual({ error: 'request body exceeds the limit of 2048 bytes', code: 'payload_too_large' });
  });

  it('413 while reading a chunked body that grows past the limit', async () => {
    const store = await startStore({ maxBodyBytes: 2048 });
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        `${store.url}/breadcrumbs`,
        { method: 'POST', headers: { 'Content-Type': 'application/json' } },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write('{"title":"t","tags":[],"context":{"big":"');
      req.write('y'.repeat(3000));
      req.end('"}}');
    });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toEqual({
      error: 'request body exceeds the limit of 2048 bytes',
      code: 'payload_too_large',
    });
    expect((await call(store.url, 'GET', '/breadcrumbs')).body).toEqual([]);
  });
});
