// Contract tests of docs/compat.md, rows "GET /events/stream". Upstream (sse_stream in
// crates/rcrt-server/src/main.rs) forwards NATS `bc.*.updated` payloads and a 5 s ping as plain
// `data:` frames, reads no query parameter, and has no resume.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { call, crumb, openSse, startStore, type SseFrame } from '../store/helpers.js';

const UPSTREAM_TYPES = new Set(['breadcrumb.updated', 'ping']);

describe('compat: GET /events/stream', () => {
  it('a client that asks for nothing sees only upstream event types and frames: no breadcrumb.deleted (delete or TTL expiry), no id: lines, no stream.gap', async () => {
    const store = await startStore({ pingIntervalMs: 50, pruneIntervalMs: 50 });
    // Upstream clients send schema_name/tag (ignored upstream), agent_id, filters, a stale Last-Event-ID.
    const sse = await openSse(store.url, {
      query: '?schema_name=nothing&tag=nothing&agent_id=a&filters=%7B%7D',
      headers: { 'Last-Event-ID': '0' },
    });
    const a = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ schema_name: 'tool.request.v1' }) });
    await call(store.url, 'PATCH', `/breadcrumbs/${a.body.id}`, { body: { context: { n: 2 } } });
    await call(store.url, 'DELETE', `/breadcrumbs/${a.body.id}`);
    await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ title: 'short-lived', ttl: new Date(Date.now() + 30).toISOString() }),
    });
    // The expiry sweep runs every 50 ms; a marker written after the record is gone closes the window.
    for (;;) {
      const listed = await call(store.url, 'GET', '/breadcrumbs?tag=t:a');
      if (!listed.body.some((b: { title: string }) => b.title === 'short-lived')) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const marker = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'marker' }) });
    const events = await waitForId(sse.waitForEvents.bind(sse), marker.body.id as string);
    expect(sse.frames.every((frame) => UPSTREAM_TYPES.has(frame.data.type))).toBe(true);
    expect(sse.frames.every((frame) => frame.id === undefined)).toBe(true);
    expect(events.map((e) => [e.data.type, e.data.version])).toEqual([
      ['breadcrumb.updated', 1],
      ['breadcrumb.updated', 2],
      ['breadcrumb.updated', 1],
      ['breadcrumb.updated', 1],
    ]);
    // Upstream's payload keys, and its ping: RFC 3339 to the second.
    expect(Object.keys(events[0]!.data).sort()).toEqual([
      'breadcrumb_id',
      'context',
      'owner_id',
      'schema_name',
      'tags',
      'type',
      'updated_at',
      'version',
    ]);
    const ping = sse.frames.find((frame) => frame.data.type === 'ping');
    expect(ping?.data).toEqual({ type: 'ping', ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) });
  });

  it('extensions are opt-in by name with x_ext, filters are x_schema_name / x_tag', async () => {
    const store = await startStore();
    const deleted = await openSse(store.url, { query: '?x_ext=deleted' });
    const filtered = await openSse(store.url, { query: '?x_ext=ids&x_tag=keep' });
    const a = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ tags: ['keep'] }) });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ tags: ['drop'] }) });
    await call(store.url, 'DELETE', `/breadcrumbs/${a.body.id}`);
    const [, , gone] = await deleted.waitForEvents(3);
    expect(gone!.data).toMatchObject({ type: 'breadcrumb.deleted', breadcrumb_id: a.body.id });
    expect(gone!.id).toBeUndefined();
    const [kept] = await filtered.waitForEvents(1);
    expect(kept).toMatchObject({ id: '1', data: { type: 'breadcrumb.updated', tags: ['keep'] } });
    expect(filtered.events()).toHaveLength(1);
  });

  it('thirty replaying readers do not stall the store: a create during their replay is answered before the replays end, and every reader gets every event once, in order', async () => {
    const store = await startStore({ maxBodyBytes: 256 * 1024 });
    const big = 'y'.repeat(40_000);
    const total = 150;
    for (let i = 0; i < total; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, (_, k) =>
          call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: `e${i + k}`, context: { big } }) }),
        ),
      );
    }
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const started = Date.now();
    const readers = await Promise.all(
      Array.from({ length: 30 }, () => openSse(store.url, { query: '?x_ext=ids', headers: { 'Last-Event-ID': '0' } })),
    );
    const replays = Promise.all(readers.map((reader) => reader.waitForEvents(total).then(() => Date.now())));
    const created = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'during replay' }) });
    const createdAt = Date.now();
    const replayEnds = await replays;
    delay.disable();
    expect(created.status).toBe(201);
    // Ordering, not speed: the create was answered while readers were still replaying.
    expect(createdAt).toBeLessThanOrEqual(Math.max(...replayEnds));
    for (const reader of readers) {
      const ids = (await reader.waitForEvents(total + 1)).map((frame: SseFrame) => Number(frame.id));
      expect(ids).toEqual(Array.from({ length: total + 1 }, (_, i) => i + 1));
    }
    // Figures for the report (not asserted).
    console.log(
      JSON.stringify({
        figure: 'replay-stall',
        readers: 30,
        events: total,
        eventBytes: big.length,
        createLatencyMs: createdAt - started,
        replayMs: Math.max(...replayEnds) - started,
        loopDelayMaxMs: Math.round(delay.max / 1e6),
        loopDelayP99Ms: Math.round(delay.percentile(99) / 1e6),
      }),
    );
  });
});

/** Waits until an event about `id` arrived; returns all events so far. */
async function waitForId(waitFor: (n: number) => Promise<SseFrame[]>, id: string): Promise<SseFrame[]> {
  for (let n = 1; ; n++) {
    const got = await waitFor(n);
    if (got.some((e) => e.data.breadcrumb_id === id)) return got;
  }
}
