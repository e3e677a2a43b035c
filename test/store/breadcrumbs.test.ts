import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { call, crumb, startStore, describeBackends } from './helpers.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describeBackends('store: breadcrumb routes', () => {
  it('creates (201 {id} uuid v4) and reads the context view and the full record', async () => {
    const store = await startStore();
    const created = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({
        title: 'T',
        context: { b: [1, 2], a: 'x' },
        tags: ['x', 'y'],
        schema_name: 's.v1',
        description: 'd',
        semantic_version: '1.0.0',
        llm_hints: { mode: 'raw' },
      }),
    });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body)).toEqual(['id']);
    expect(created.body.id).toMatch(UUID_V4);
    const id = created.body.id as string;

    const view = await call(store.url, 'GET', `/breadcrumbs/${id}`);
    expect(view.status).toBe(200);
    expect(view.body).toEqual({
      id,
      title: 'T',
      description: 'd',
      semantic_version: '1.0.0',
      context: { b: [1, 2], a: 'x' },
      tags: ['x', 'y'],
      schema_name: 's.v1',
      llm_hints: { mode: 'raw' },
      version: 1,
      updated_at: expect.any(String),
    });

    const full = await call(store.url, 'GET', `/breadcrumbs/${id}/full`);
    const compact = JSON.stringify({ b: [1, 2], a: 'x' });
    expect(full.body).toEqual({
      id,
      owner_id: '00000000-0000-0000-0000-000000000001',
      title: 'T',
      description: 'd',
      semantic_version: '1.0.0',
      context: { b: [1, 2], a: 'x' },
      tags: ['x', 'y'],
      schema_name: 's.v1',
      llm_hints: { mode: 'raw' },
      visibility: 'Team',
      sensitivity: 'Low',
      version: 1,
      checksum: 'sha256:' + createHash('sha256').update(compact).digest('hex'),
      ttl: null,
      ttl_type: null,
      ttl_config: null,
      read_count: 0,
      ttl_source: null,
      created_at: full.body.updated_at,
      updated_at: view.body.updated_at,
      created_by: null,
      updated_by: null,
      size_bytes: Buffer.byteLength(compact),
      embedding: null,
    });
    expect(Number.isNaN(Date.parse(full.body.updated_at))).toBe(false);
  });

  it("the full record carries upstream's TTL fields and the stored embedding", async () => {
    const store = await startStore();
    const ttl = new Date(Date.now() + 3_600_000).toISOString();
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ ttl, embedding: [0.5, -1, 2] }) });
    const full = (await call(store.url, 'GET', `/breadcrumbs/${id}/full`)).body;
    expect(full).toMatchObject({
      ttl_type: 'datetime',
      ttl_config: null,
      read_count: 0,
      ttl_source: 'explicit',
      embedding: [0.5, -1, 2],
    });
    expect(Date.parse(full.ttl)).toBe(Date.parse(ttl));
  });

  it('patches any subset (context replaces), bumps the version and keeps history newest first', async () => {
    const store = await startStore();
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ context: { a: 1, keep: true }, schema_name: 's' }),
    });
    const patched = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, {
      body: { context: { a: 2 }, title: 'new', visibility: 'private' },
    });
    expect(patched).toMatchObject({ status: 200, body: { ok: true, version: 2 } });
    const again = await call(store.url, 'PATCH', `/breadcrumbs/${id}`, {
      body: { tags: ['t:b'], schema_name: null },
      headers: { 'If-Match': '2' },
    });
    expect(again.body).toEqual({ ok: true, version: 3 });
    const full = (await call(store.url, 'GET', `/breadcrumbs/${id}/full`)).body;
    expect(full).toMatchObject({
      title: 'new',
      context: { a: 2 },
      tags: ['t:b'],
      schema_name: null,
      visibility: 'Private',
      version: 3,
    });
    const history = await call(store.url, 'GET', `/breadcrumbs/${id}/history`);
    expect(history.status).toBe(200);
    expect(history.body.map((h: { version: number; context: unknown }) => [h.version, h.context])).toEqual([
      [3, { a: 2 }],
      [2, { a: 2 }],
      [1, { a: 1, keep: true }],
    ]);
    expect(history.body[0]).toEqual({ version: 3, context: { a: 2 }, updated_at: full.updated_at, updated_by: null });
  });

  it('lists one tag or schema, newest updated first, with paging and include_context', async () => {
    const store = await startStore();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (
          await call(store.url, 'POST', '/breadcrumbs', {
            body: crumb({
              title: `n${i}`,
              context: { i },
              tags: i % 2 ? ['odd', 'all'] : ['even', 'all'],
              schema_name: i < 3 ? 'low' : 'high',
            }),
          })
        ).body.id,
      );
    }
    await call(store.url, 'PATCH', `/breadcrumbs/${ids[1]}`, { body: { title: 'touched' } });
    const all = await call(store.url, 'GET', '/breadcrumbs?tag=all');
    expect(all.body.map((b: { id: string }) => b.id)).toEqual([ids[1], ids[4], ids[3], ids[2], ids[0]]);
    expect(Object.keys(all.body[0]).sort()).toEqual(['id', 'schema_name', 'tags', 'title', 'updated_at', 'version']);
    const odd = await call(store.url, 'GET', '/breadcrumbs?tag=odd&include_context=true');
    expect(odd.body.map((b: { context: unknown }) => b.context)).toEqual([{ i: 1 }, { i: 3 }]);
    const low = await call(store.url, 'GET', '/breadcrumbs?schema_name=low&tag=even');
    expect(low.body.map((b: { title: string }) => b.title)).toEqual(['n2', 'n0']);
    const page = await call(store.url, 'GET', '/breadcrumbs?limit=2&offset=1');
    expect(page.body.map((b: { id: string }) => b.id)).toEqual([ids[4], ids[3]]);
    expect((await call(store.url, 'GET', '/breadcrumbs?tag=none')).body).toEqual([]);
  });

  it('searches title, description and context text by FTS5 relevance, nn results (default 5), with tag/schema filters', async () => {
    const store = await startStore();
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'Weather tool', tags: ['tool'] }) });
    await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ title: 'x', description: 'about WEATHER and more words here', tags: ['doc'] }),
    });
    await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ title: 'y', context: { city: 'weatherby' }, tags: ['tool'] }),
    });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: '100%_literal', tags: ['tool'] }) });
    const hits = await call(store.url, 'GET', '/breadcrumbs/search?q=weather&nn=3');
    expect(hits.status).toBe(200);
    expect(hits.body).toHaveLength(3);
    expect(hits.body[0].title).toBe('Weather tool');
    expect(hits.body.map((b: { title: string }) => b.title).sort()).toEqual(['Weather tool', 'x', 'y']);
    expect(Object.keys(hits.body[0]).sort()).toEqual(['id', 'schema_name', 'tags', 'title', 'updated_at', 'version']);
    const withContext = await call(store.url, 'GET', '/breadcrumbs/search?q=weatherby&include_context=true');
    expect(withContext.body.map((b: { context: unknown }) => b.context)).toEqual([{ city: 'weatherby' }]);
    const tagged = await call(store.url, 'GET', '/breadcrumbs/search?q=weather&tag=tool&nn=1');
    expect(tagged.body.map((b: { title: string }) => b.title)).toEqual(['Weather tool']);
    // FTS5 query syntax in q is treated as words, never as syntax.
    const literal = await call(store.url, 'GET', '/breadcrumbs/search?q=' + encodeURIComponent('100%_ OR "NEAR(*'));
    expect(literal.status).toBe(200);
    expect(literal.body.map((b: { title: string }) => b.title)).toEqual(['100%_literal']);
    expect((await call(store.url, 'GET', '/breadcrumbs/search')).body).toEqual([]);
  });

  it('deletes: the record, its listing and history are gone; a second delete is 404', async () => {
    const store = await startStore();
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    expect(await call(store.url, 'DELETE', `/breadcrumbs/${id}`)).toMatchObject({ status: 200, body: { ok: true } });
    for (const path of [`/breadcrumbs/${id}`, `/breadcrumbs/${id}/full`]) {
      expect(await call(store.url, 'GET', path)).toMatchObject({
        status: 404,
        body: { code: 'not_found', error: `breadcrumb "${id}" not found` },
      });
    }
    // Upstream answers history of an unknown id with 200 [].
    expect(await call(store.url, 'GET', `/breadcrumbs/${id}/history`)).toMatchObject({ status: 200, body: [] });
    expect((await call(store.url, 'GET', '/breadcrumbs?tag=t:a')).body).toEqual([]);
    expect((await call(store.url, 'DELETE', `/breadcrumbs/${id}`)).status).toBe(404);
    expect((await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: 'x' } })).status).toBe(404);
  });

  it('hides an expired breadcrumb everywhere and prunes it', async () => {
    const store = await startStore({ pruneIntervalMs: 60_000 });
    const past = new Date(Date.now() - 1000).toISOString();
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ ttl: past }) });
    const live = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ ttl: new Date(Date.now() + 3_600_000).toISOString() }),
    });
    expect((await call(store.url, 'GET', `/breadcrumbs/${id}`)).status).toBe(404);
    expect((await call(store.url, 'GET', '/breadcrumbs?tag=t:a')).body.map((b: { id: string }) => b.id)).toEqual([
      live.body.id,
    ]);
    expect((await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { ttl: null } })).status).toBe(404);
    const full = await call(store.url, 'GET', `/breadcrumbs/${live.body.id}/full`);
    expect(full.body.ttl).toMatch(/Z$/);
  });

  it('Idempotency-Key: of 20 concurrent creates exactly one wins (201), 19 get 409 carrying the winner id', async () => {
    const store = await startStore();
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(store.url, 'POST', '/breadcrumbs', {
          body: crumb({ context: { i } }),
          headers: { 'Idempotency-Key': 'claim:req-1' },
        }),
      ),
    );
    const won = replies.filter((r) => r.status === 201);
    const lost = replies.filter((r) => r.status === 409);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(19);
    for (const reply of lost)
      expect(reply.body).toEqual({
        error: 'duplicate idempotency key: Idempotency-Key "claim:req-1" was already used',
        code: 'conflict',
        id: won[0]?.body.id,
      });
    expect((await call(store.url, 'GET', '/breadcrumbs?tag=t:a')).body).toHaveLength(1);
    expect(
      (await call(store.url, 'POST', '/breadcrumbs', { body: crumb(), headers: { 'Idempotency-Key': 'claim:req-2' } }))
        .status,
    ).toBe(201);
  });

  it('If-Match: of 20 concurrent PATCHes at the same version exactly one wins, the others get 412', async () => {
    const store = await startStore();
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(store.url, 'PATCH', `/breadcrumbs/${id}`, {
          body: { context: { winner: i } },
          headers: { 'If-Match': '1' },
        }),
      ),
    );
    const won = replies.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    expect(won[0]?.body).toEqual({ ok: true, version: 2 });
    const lost = replies.filter((r) => r.status === 412);
    expect(lost).toHaveLength(19);
    for (const reply of lost)
      expect(reply.body).toEqual({
        error: `version_mismatch: breadcrumb "${id}" is at version 2, not 1`,
        code: 'version_mismatch',
        version: 2,
      });
    const winner = replies.indexOf(won[0]!);
    expect((await call(store.url, 'GET', `/breadcrumbs/${id}`)).body.context).toEqual({ winner });
    expect(
      (await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: {}, headers: { 'If-Match': '"2"' } })).body,
    ).toEqual({ ok: true, version: 3 });
  });

  it('stores contexts nested up to the depth limit (256) and duplicate tags once in the index', async () => {
    const store = await startStore();
    let deep: unknown = 'leaf';
    for (let i = 0; i < 255; i++) deep = [deep];
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { deep }, tags: ['dup', 'dup'] }) });
    expect((await call(store.url, 'GET', `/breadcrumbs/${id}`)).body.context).toEqual({ deep });
    expect(
      (await call(store.url, 'GET', '/breadcrumbs?tag=dup')).body.map((b: { id: string; tags: string[] }) => [
        b.id,
        b.tags,
      ]),
    ).toEqual([[id, ['dup', 'dup']]]);
    await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { tags: ['other'] } });
    expect((await call(store.url, 'GET', '/breadcrumbs?tag=dup')).body).toEqual([]);
  });

  it('answers /health even when everything else needs auth', async () => {
    const store = await startStore({ authSecret: 'secret-one', adminKey: 'admin-one' });
    const health = await call(store.url, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', auth: 'on', streams: 0 });
  });
});
