import http from 'node:http';
import { expect, it } from 'vitest';
import { call, captureLogger, crumb, openSse, startStore, type SseFrame, describeBackends } from './helpers.js';

// These tests cover our stream extensions, so every stream opts in to all of them.
const ALL = '?x_ext=deleted,ids,gap';
const ids = (frames: SseFrame[]): number[] => frames.map((frame) => Number(frame.id));
const consecutive = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describeBackends('store: /events/stream', () => {
  it('emits one breadcrumb.updated per create and update and a breadcrumb.deleted, as data frames with ids', async () => {
    const store = await startStore();
    const sse = await openSse(store.url, { query: ALL });
    expect(sse.status).toBe(200);
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ context: { a: 1 }, tags: ['x'], schema_name: 's.v1' }),
    });
    await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { context: { a: 2 } } });
    await call(store.url, 'DELETE', `/breadcrumbs/${id}`);
    const [created, updated, deleted] = await sse.waitForEvents(3);
    const full = {
      breadcrumb_id: id,
      owner_id: '00000000-0000-0000-0000-000000000001',
      tags: ['x'],
      schema_name: 's.v1',
      updated_at: expect.any(String),
    };
    expect(created).toEqual({ id: '1', data: { type: 'breadcrumb.updated', ...full, version: 1, context: { a: 1 } } });
    expect(updated).toEqual({ id: '2', data: { type: 'breadcrumb.updated', ...full, version: 2, context: { a: 2 } } });
    expect(deleted).toEqual({
      id: '3',
      data: {
        type: 'breadcrumb.deleted',
        breadcrumb_id: id,
        owner_id: full.owner_id,
        version: 2,
        tags: ['x'],
        schema_name: 's.v1',
        deleted_at: expect.any(String),
      },
    });
  });

  it('delivers every event exactly once, in commit order, to several streams under concurrent writes', async () => {
    const store = await startStore();
    const streams = await Promise.all([
      openSse(store.url, { query: ALL }),
      openSse(store.url, { query: ALL }),
      openSse(store.url, { query: ALL }),
    ]);
    const created: string[] = [];
    for (let batch = 0; batch < 5; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { batch, i } }) }),
        ),
      );
      created.push(...replies.map((reply) => reply.body.id as string));
      await Promise.all(
        created
          .slice(-20)
          .map((id) => call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { context: { patched: true } } })),
      );
    }
    const total = 200;
    for (const sse of streams) {
      const events = await sse.waitForEvents(total);
      expect(ids(events)).toEqual(consecutive(1, total));
      const versions = new Map<string, number>();
      for (const { data } of events) {
        expect(data.version).toBe((versions.get(data.breadcrumb_id) ?? 0) + 1);
        versions.set(data.breadcrumb_id, data.version);
      }
      expect([...versions.keys()].sort()).toEqual([...created].sort());
    }
    expect(streams[1]!.events()).toEqual(streams[0]!.events());
    expect(streams[2]!.events()).toEqual(streams[0]!.events());
  });

  it('resumes after Last-Event-ID across the replay/live seam with no gap and no duplicate', async () => {
    const store = await startStore({ eventRetention: 10_000 });
    const first = await openSse(store.url, { query: ALL });
    for (let i = 0; i < 5; i++) await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { i } }) });
    await first.waitForEvents(5);
    first.close();
    // 600 more writes (more than two replay pages) while disconnected, then keep writing while reconnecting.
    await Promise.all(
      Array.from({ length: 600 }, (_, i) =>
        call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { offline: i } }) }),
      ),
    );
    let writing = true;
    const writer = (async () => {
      let n = 0;
      while (writing || n < 50) {
        await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { during: n++ } }) });
      }
      return n;
    })();
    const resumed = await openSse(store.url, { query: ALL, headers: { 'Last-Event-ID': '5' } });
    await resumed.waitForEvents(650);
    writing = false;
    const during = await writer;
    const last = 605 + during;
    const events = await resumed.waitForEvents(last - 5);
    expect(ids(events)).toEqual(consecutive(6, last));
    expect(events[0]!.data.context).toEqual({ offline: expect.any(Number) });

    const byQuery = await openSse(store.url, { query: `${ALL}&last_event_id=${last - 2}` });
    expect(ids(await byQuery.waitForEvents(2))).toEqual([last - 1, last]);
  });

  it('sends stream.gap first when the resume point is older than retention, unknown, or in the future', async () => {
    const store = await startStore({ eventRetention: 100 });
    for (let i = 0; i < 300; i++) await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { i } }) });
    const old = await openSse(store.url, { query: ALL, headers: { 'Last-Event-ID': '3' } });
    const frames = await old.waitForEvents(2);
    expect(frames[0]).toEqual({
      data: { type: 'stream.gap', last_event_id: '3', oldest_event_id: expect.any(Number), latest_event_id: 300 },
    });
    const oldest = frames[0]!.data.oldest_event_id as number;
    expect(oldest).toBeGreaterThan(4);
    expect(oldest).toBeLessThanOrEqual(201);
    const all = await old.waitForEvents(1 + 300 - oldest + 1);
    expect(ids(all.slice(1))).toEqual(consecutive(oldest, 300));

    for (const bad of ['99999', 'not-a-number']) {
      const sse = await openSse(store.url, { query: ALL, headers: { 'Last-Event-ID': bad } });
      await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
      const [gap, next] = await sse.waitForEvents(2);
      expect(gap!.data).toMatchObject({ type: 'stream.gap', last_event_id: bad });
      expect(Number(next!.id)).toBeGreaterThan(300);
      expect(sse.events()).toHaveLength(2);
    }
  });

  it('filters by ?schema_name= and ?tag= (extension) and pings without ids', async () => {
    const store = await startStore({ pingIntervalMs: 50 });
    const bySchema = await openSse(store.url, { query: `${ALL}&x_schema_name=tool.request.v1` });
    const byTag = await openSse(store.url, { query: `${ALL}&x_tag=tool:request` });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ schema_name: 'other', tags: ['x'] }) });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ schema_name: 'tool.request.v1', tags: ['x'] }) });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ schema_name: 'other', tags: ['tool:request'] }) });
    expect(ids(await bySchema.waitForEvents(1))).toEqual([2]);
    expect(ids(await byTag.waitForEvents(1))).toEqual([3]);
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (bySchema.frames.some((f) => f.data.type === 'ping')) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    const ping = bySchema.frames.find((f) => f.data.type === 'ping')!;
    expect(ping).toEqual({ data: { type: 'ping', ts: expect.any(String) } });
    expect(bySchema.events()).toHaveLength(1);
  });

  it('emits breadcrumb.deleted with reason expired when the sweep prunes an expired breadcrumb', async () => {
    const store = await startStore({ pruneIntervalMs: 50 });
    const sse = await openSse(store.url, { query: ALL });
    const {
      body: { id },
    } = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ ttl: new Date(Date.now() + 150).toISOString() }),
    });
    const [, expired] = await sse.waitForEvents(2);
    expect(expired!.data).toMatchObject({ type: 'breadcrumb.deleted', breadcrumb_id: id, reason: 'expired' });
    expect((await call(store.url, 'GET', `/breadcrumbs/${id}`)).status).toBe(404);
  });

  it('disconnects a consumer that stops reading once its unsent buffer passes the cap', async () => {
    const capture = captureLogger();
    const store = await startStore({ maxBodyBytes: 256 * 1024, sseBufferCapBytes: 256 * 1024, logger: capture.logger });
    const req = http.get(`${store.url}/events/stream`);
    const response = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    response.pause();
    const warned = capture.waitFor('sse consumer too slow, disconnecting');
    let stop = false;
    void warned.then(() => (stop = true));
    const big = 'z'.repeat(100 * 1024);
    for (let i = 0; i < 1000 && !stop; i++)
      await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ context: { i, big } }) });
    const line = await warned;
    expect(line).toMatchObject({ level: 'warn', capBytes: 256 * 1024 });
    expect(line.bufferedBytes as number).toBeGreaterThan(256 * 1024);
    req.destroy();
    // The store stays healthy and the consumer can come back.
    const again = await openSse(store.url, { query: ALL, headers: { 'Last-Event-ID': '1' } });
    expect(Number((await again.waitForEvents(1))[0]!.id)).toBe(2);
  });
});
