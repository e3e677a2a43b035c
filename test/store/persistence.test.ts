import { describe, expect, it } from 'vitest';
import { call, crumb, openSse, startStore, tempDir } from './helpers.js';

describe('store: persistence in <dataDir>/store.db', () => {
  it('keeps breadcrumbs, versions, history, tags, idempotency keys and the event log across a restart', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    const {
      body: { id },
    } = await call(first.url, 'POST', '/breadcrumbs', {
      body: crumb({ context: { v: 1 }, tags: ['keep'] }),
      headers: { 'Idempotency-Key': 'once' },
    });
    await call(first.url, 'PATCH', `/breadcrumbs/${id}`, { body: { context: { v: 2 } } });
    const before = (await call(first.url, 'GET', `/breadcrumbs/${id}/full`)).body;
    await first.close();

    const second = await startStore({ dataDir: dir });
    expect((await call(second.url, 'GET', `/breadcrumbs/${id}/full`)).body).toEqual(before);
    expect((await call(second.url, 'GET', '/breadcrumbs?tag=keep')).body.map((b: { id: string }) => b.id)).toEqual([
      id,
    ]);
    expect(
      (await call(second.url, 'GET', `/breadcrumbs/${id}/history`)).body.map((h: { version: number }) => h.version),
    ).toEqual([2, 1]);
    expect(
      (await call(second.url, 'POST', '/breadcrumbs', { body: crumb(), headers: { 'Idempotency-Key': 'once' } })).body,
    ).toMatchObject({ code: 'conflict', id });

    // Event ids continue after the restart, and a client can resume from before it.
    const resumed = await openSse(second.url, { query: '?x_ext=ids', headers: { 'Last-Event-ID': '1' } });
    await call(second.url, 'PATCH', `/breadcrumbs/${id}`, { body: { context: { v: 3 } } });
    const events = await resumed.waitForEvents(2);
    expect(events.map((e) => [e.id, e.data.version])).toEqual([
      ['2', 2],
      ['3', 3],
    ]);
    // updated_at never goes backwards across a restart: the newest write lists first.
    const other = await call(second.url, 'POST', '/breadcrumbs', { body: crumb({ tags: ['keep'] }) });
    expect((await call(second.url, 'GET', '/breadcrumbs?tag=keep')).body.map((b: { id: string }) => b.id)).toEqual([
      other.body.id,
      id,
    ]);
  });

  it('keeps ":memory:" data only for the life of the store', async () => {
    const first = await startStore();
    await call(first.url, 'POST', '/breadcrumbs', { body: crumb() });
    await first.close();
    const second = await startStore();
    expect((await call(second.url, 'GET', '/breadcrumbs')).body).toEqual([]);
  });

  it('closes cleanly while streams and keep-alive connections are open, then refuses new work', async () => {
    const store = await startStore({ dataDir: tempDir() });
    const sse = await openSse(store.url);
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    await sse.waitForEvents(1);
    await store.close();
    await sse.ended;
    await expect(fetch(`${store.url}/health`)).rejects.toThrow();
    await store.close();
  });

  it('reports a port that is already in use as config.invalid naming it', async () => {
    const first = await startStore();
    await expect(startStore({ port: first.port })).rejects.toMatchObject({
      code: 'config.invalid',
      message: `port ${first.port} on 127.0.0.1 is already in use`,
    });
  });
});
