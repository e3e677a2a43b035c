import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { call, crumb, startStore } from './helpers.js';

type Case = [name: string, method: string, path: string, options: { body?: unknown; raw?: string; headers?: Record<string, string> }, status: number, code: string, error: string | RegExp];

const cases: Case[] = [
  ['malformed JSON', 'POST', '/breadcrumbs', { raw: '{"title": ' }, 400, 'invalid_json', /^request body is not valid JSON: /],
  ['empty body', 'POST', '/breadcrumbs', { raw: '' }, 400, 'invalid_json', 'request body is empty; expected a JSON object'],
  ['array body', 'POST', '/breadcrumbs', { body: [1] }, 400, 'invalid_body', 'request body must be a JSON object, got array'],
  ['missing title', 'POST', '/breadcrumbs', { body: { context: {}, tags: [] } }, 400, 'invalid_body', 'title must be a string, got undefined'],
  ['context not object', 'POST', '/breadcrumbs', { body: crumb({ context: [1] }) }, 400, 'invalid_body', 'context must be a JSON object, got array'],
  ['missing context', 'POST', '/breadcrumbs', { body: { title: 't', tags: [] } }, 400, 'invalid_body', 'context must be a JSON object, got undefined'],
  ['context too deep', 'POST', '/breadcrumbs', { raw: `{"title":"t","tags":[],"context":{"a":${'['.repeat(20000)}${']'.repeat(20000)}}}` }, 400, 'invalid_body', 'context is nested deeper than 256 levels'],
  ['llm_hints too deep', 'POST', '/breadcrumbs', { body: crumb({ llm_hints: JSON.parse('['.repeat(300) + ']'.repeat(300)) }) }, 400, 'invalid_body', 'llm_hints is nested deeper than 256 levels'],
  ['tags not array', 'POST', '/breadcrumbs', { body: crumb({ tags: 'a' }) }, 400, 'invalid_body', 'tags must be an array of strings, got string'],
  ['tags with number', 'POST', '/breadcrumbs', { body: crumb({ tags: ['a', 1] }) }, 400, 'invalid_body', 'tags must be an array of strings, got array with a non-string element'],
  ['too many tags', 'POST', '/breadcrumbs', { body: crumb({ tags: Array.from({ length: 1001 }, (_, i) => `t${i}`) }) }, 400, 'invalid_body', 'tags may hold at most 1000 entries, got 1001'],
  ['schema_name number', 'POST', '/breadcrumbs', { body: crumb({ schema_name: 5 }) }, 400, 'invalid_body', 'schema_name must be a string or null, got number'],
  ['bad sensitivity', 'POST', '/breadcrumbs', { body: crumb({ sensitivity: 3 }) }, 400, 'invalid_body', 'sensitivity must be one of Low, Pii, Secret, got 3'],
  ['bad ttl', 'POST', '/breadcrumbs', { body: crumb({ ttl: 'tomorrow' }) }, 400, 'invalid_body', 'ttl must be an RFC 3339 timestamp or null, got "tomorrow"'],
  ['empty idempotency key', 'POST', '/breadcrumbs', { body: crumb(), headers: { 'Idempotency-Key': '' } }, 400, 'invalid_body', 'Idempotency-Key must be 1 to 256 characters, got 0'],
  ['two tags', 'GET', '/breadcrumbs?tag=a&tag=b', {}, 400, 'invalid_query', 'query parameter "tag" may be given only once, got 2'],
  ['bad limit', 'GET', '/breadcrumbs?limit=abc', {}, 400, 'invalid_query', 'query parameter "limit" must be an integer, got "abc"'],
  ['fractional offset', 'GET', '/breadcrumbs?offset=1.5', {}, 400, 'invalid_query', 'query parameter "offset" must be an integer, got "1.5"'],
  ['bad nn', 'GET', '/breadcrumbs/search?q=x&nn=many', {}, 400, 'invalid_query', 'query parameter "nn" must be an integer, got "many"'],
  ['bad qvec', 'GET', '/breadcrumbs/search?qvec=1,x', {}, 400, 'invalid_query', 'qvec must be 1 to 4096 comma-separated numbers, got "1,x"'],
  ['bad embedding', 'POST', '/breadcrumbs', { body: crumb({ embedding: [1, 'x'] }) }, 400, 'invalid_body', 'embedding must be an array of 1 to 4096 finite numbers, got an array of 2'],
  ['bad include_context', 'GET', '/breadcrumbs?include_context=yes', {}, 400, 'invalid_query', 'query parameter "include_context" must be true or false, got "yes"'],
  ['unknown id', 'GET', '/breadcrumbs/nope', {}, 404, 'not_found', 'breadcrumb "nope" not found'],
  ['unknown id full', 'GET', '/breadcrumbs/00000000-0000-4000-8000-000000000000/full', {}, 404, 'not_found', 'breadcrumb "00000000-0000-4000-8000-000000000000" not found'],
  ['patch unknown id', 'PATCH', '/breadcrumbs/nope', { body: { title: 'x' } }, 404, 'not_found', 'breadcrumb "nope" not found'],
  ['unknown route', 'GET', '/nothing/here', {}, 404, 'route_not_found', 'no route "/nothing/here"'],
  ['wrong method', 'PUT', '/breadcrumbs', { body: crumb() }, 405, 'method_not_allowed', 'method PUT is not allowed on /breadcrumbs (allowed: GET, POST)'],
  ['mint without owner', 'POST', '/auth/token', { body: { agent_id: 'a' } }, 400, 'invalid_body', 'owner_id must be a non-empty string, got undefined'],
  ['mint bad role', 'POST', '/auth/token', { body: { owner_id: 'o', agent_id: 'a', roles: ['root'] } }, 400, 'invalid_body', 'roles must be an array of curator, emitter, subscriber, got ["root"]'],
  ['mint bad ttl', 'POST', '/auth/token', { body: { owner_id: 'o', agent_id: 'a', ttl_sec: 0 } }, 400, 'invalid_body', 'ttl_sec must be an integer from 1 to 604800, got 0'],
  ['secret without name', 'POST', '/secrets', { body: { scope_type: 'global', value: 'v' } }, 400, 'invalid_body', 'name must be a non-empty string, got undefined'],
  ['secret value not string', 'POST', '/secrets', { body: { name: 'N', scope_type: 'global', value: 1 } }, 400, 'invalid_body', 'value must be a string, got number'],
  ['decrypt unknown', 'POST', '/secrets/nope/decrypt', { body: {} }, 404, 'not_found', 'secret "nope" not found'],
  ['decrypt bad reason', 'POST', '/secrets/nope/decrypt', { body: { reason: 5 } }, 400, 'invalid_body', 'reason must be a string, got number'],
  ['two events filters', 'GET', '/events/stream?x_tag=a&x_tag=b', {}, 400, 'invalid_query', 'query parameter "x_tag" may be given only once, got 2'],
  ['unknown stream extension', 'GET', '/events/stream?x_ext=deleted,teleport', {}, 400, 'invalid_query', 'x_ext names an unknown stream extension "teleport" (known: deleted, ids, gap)'],
  ['webhooks', 'POST', '/agents/a/webhooks', { body: { url: 'http://x' } }, 501, 'not_implemented', 'webhooks are not supported by the embedded store (no outbound delivery); use GET /events/stream'],
  ['put secret unknown', 'PUT', '/secrets/nope', { body: { value: 'v' } }, 404, 'not_found', 'secret "nope" not found'],
  ['put secret no value', 'PUT', '/secrets/nope', { body: {} }, 400, 'invalid_body', 'value must be a string, got undefined'],
];

describe('store: bad input gets a 4xx with JSON {error, code}', () => {
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
    const { body: { id } } = await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    const nullTitle = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: null } });
    expect(nullTitle).toMatchObject({ status: 400, body: { code: 'invalid_body', error: 'title cannot be null' } });
    const badMatch = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: 'x' }, headers: { 'If-Match': 'abc' } });
    expect(badMatch).toMatchObject({ status: 400, body: { code: 'invalid_body', error: 'If-Match must be a version number, got "abc"' } });
    const half = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: 'changed', tags: [1] } });
    expect(half.status).toBe(400);
    expect((await call(store.url, 'GET', `/breadcrumbs/${id}`)).body).toMatchObject({ title: 'a crumb', version: 1 });
  });

  it('413 when Content-Length announces too much, without reading the body', async () => {
    const store = await startStore({ maxBodyBytes: 2048 });
    const reply = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { big: 'x'.repeat(4000) } }) });
    expect(reply.status).toBe(413);
    expect(reply.body).toEqual({ error: 'request body exceeds the limit of 2048 bytes', code: 'payload_too_large' });
  });

  it('413 while reading a chunked body that grows past the limit', async () => {
    const store = await startStore({ maxBodyBytes: 2048 });
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${store.url}/breadcrumbs`, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.write('{"title":"t","tags":[],"context":{"big":"');
      req.write('y'.repeat(3000));
      req.end('"}}');
    });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toEqual({ error: 'request body exceeds the limit of 2048 bytes', code: 'payload_too_large' });
    expect((await call(store.url, 'GET', '/breadcrumbs')).body).toEqual([]);
  });
});
