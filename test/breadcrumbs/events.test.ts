import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createStoreClient, openEventStream, type StoreEvent } from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { onCleanup, startStore, tempDir } from '../store/helpers.js';

const logger = silentLogger();
const FAST = { initialMs: 10, maxMs: 100 };

interface Recorder {
  events: Array<{ event: StoreEvent; id?: string }>;
  connects: Array<{ reconnect: boolean; attempt: number }>;
  /** Resolves once `n` events arrived. */
  events$(n: number): Promise<void>;
  /** Resolves once `n` connects happened. */
  connects$(n: number): Promise<void>;
  onEvent(event: StoreEvent, id?: string): void;
  onConnected(info: { reconnect: boolean; attempt: number }): void;
}

function recorder(): Recorder {
  const events: Recorder['events'] = [];
  const connects: Recorder['connects'] = [];
  const waiters: Array<{ check: () => boolean; resolve: () => void }> = [];
  const poke = (): void => {
    for (const w of [...waiters])
      if (w.check()) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
  };
  const until = (check: () => boolean): Promise<void> =>
    check() ? Promise.resolve() : new Promise((resolve) => waiters.push({ check, resolve }));
  return {
    events,
    connects,
    events$: (n) => until(() => events.length >= n),
    connects$: (n) => until(() => connects.length >= n),
    onEvent: (event, id) => {
      events.push({ event, ...(id !== undefined ? { id } : {}) });
      poke();
    },
    onConnected: (info) => {
      connects.push(info);
      poke();
    },
  };
}

function open(
  client: ReturnType<typeof createStoreClient>,
  rec: Recorder,
  extra: Partial<Parameters<typeof openEventStream>[0]> = {},
) {
  const controller = new AbortController();
  const stream = openEventStream({
    client,
    logger,
    signal: controller.signal,
    onEvent: rec.onEvent,
    onConnected: rec.onConnected,
    backoff: FAST,
    ...extra,
  });
  onCleanup(async () => {
    controller.abort();
    await stream.closed;
  });
  return { controller, stream };
}

/** A scripted SSE server (a typed boundary: another server) for faults the real store does not produce. */
async function sseServer(script: (n: number, req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const requests: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req);
    script(requests.length, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

const sseHead = (res: http.ServerResponse): void =>
  void res.writeHead(200, { 'Content-Type': 'text/event-stream' }).flushHeaders();

describe('openEventStream', () => {
  it('delivers events (not pings) with their ids from the embedded store', async () => {
    const store = await startStore({ pingIntervalMs: 50 });
    const client = createStoreClient({ baseUrl: store.url, logger });
    onCleanup(() => client.close());
    const rec = recorder();
    open(client, rec);
    await rec.connects$(1);
    expect(rec.connects).toEqual([{ reconnect: false, attempt: 1 }]);
    const a = await client.createBreadcrumb({ title: 'a', context: { x: 1 }, tags: ['t'] });
    await client.updateBreadcrumb(a.id, { context: { x: 2 } });
    // The runner's catalog relies on breadcrumb.deleted: our client opts in to it by default.
    await client.deleteBreadcrumb(a.id);
    await rec.events$(3);
    expect(rec.events.map((e) => [e.id, e.event.type, e.event.breadcrumb_id, e.event.version])).toEqual([
      ['1', 'breadcrumb.updated', a.id, 1],
      ['2', 'breadcrumb.updated', a.id, 2],
      ['3', 'breadcrumb.deleted', a.id, 2],
    ]);
  });

  it('reconnects after the store restarts (data dir kept), reports reconnect: true and resumes without duplicates', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    const client = createStoreClient({ baseUrl: first.url, logger });
    onCleanup(() => client.close());
    const rec = recorder();
    open(client, rec);
    await rec.connects$(1);
    await client.createBreadcrumb({ title: 'before', context: {}, tags: [] });
    await rec.events$(1);
    await first.close();
    const second = await startStore({ dataDir: dir, port: first.port });
    const after = await client.createBreadcrumb({ title: 'after', context: { n: 2 }, tags: [] });
    await rec.connects$(2);
    await rec.events$(2);
    expect(rec.connects[1]).toMatchObject({ reconnect: true });
    expect(rec.connects[1]!.attempt).toBeGreaterThanOrEqual(1);
    expect(rec.events.map((e) => e.id)).toEqual(['1', '2']);
    expect(rec.events[1]!.event.breadcrumb_id).toBe(after.id);
    await client.createBreadcrumb({ title: 'live', context: {}, tags: [] });
    await rec.events$(3);
    expect(rec.events.map((e) => e.id)).toEqual(['1', '2', '3']);
    expect(second.url).toBe(first.url);
  });

  it('reconnects after a clean end of stream and sends Last-Event-ID', async () => {
    const fake = await sseServer((n, _req, res) => {
      sseHead(res);
      if (n === 1) res.end('id: 7\ndata: {"type":"breadcrumb.updated","breadcrumb_id":"a","version":1}\n\n');
      else
        res.write(
          'data: {"type":"ping","ts":"x"}\n\nid: 8\ndata: {"type":"breadcrumb.updated","breadcrumb_id":"a","version":2}\n\n',
        );
    });
    const client = createStoreClient({ baseUrl: fake.url, logger });
    const rec = recorder();
    open(client, rec);
    await rec.events$(2);
    expect(rec.connects).toEqual([
      { reconnect: false, attempt: 1 },
      { reconnect: true, attempt: 1 },
    ]);
    expect(rec.events.map((e) => [e.id, e.event.version])).toEqual([
      ['7', 1],
      ['8', 2],
    ]);
    expect(fake.requests[0]!.headers['last-event-id']).toBeUndefined();
    expect(fake.requests[1]!.headers['last-event-id']).toBe('7');
    // Our extensions are opt-in by name; upstream ignores the parameter.
    expect(fake.requests[1]!.url).toBe('/events/stream?x_ext=deleted%2Cids%2Cgap');
  });

  it('treats a silent connection as dead after stallMs and retries failed connects with backoff', async () => {
    const fake = await sseServer((n, _req, res) => {
      if (n === 1) return void res.writeHead(503, { 'Content-Type': 'text/plain' }).end('warming up');
      sseHead(res);
      if (n === 3) res.write('data: {"type":"stream.gap"}\n\n');
      // n === 2: headers, then silence.
    });
    const client = createStoreClient({ baseUrl: fake.url, logger });
    const rec = recorder();
    open(client, rec, { stallMs: 150 });
    await rec.events$(1);
    expect(rec.connects).toEqual([
      { reconnect: false, attempt: 2 },
      { reconnect: true, attempt: 1 },
    ]);
    expect(rec.events[0]!.event).toEqual({ type: 'stream.gap' });
    expect(fake.requests).toHaveLength(3);
  });

  it('sends the opt-in query filter and the bearer token; survives a throwing handler and bad frames', async () => {
    const fake = await sseServer((_n, _req, res) => {
      sseHead(res);
      res.write('data: not json\n\ndata: {"no":"type"}\n\ndata: {"type":"x.one"}\n\ndata: {"type":"x.two"}\n\n');
    });
    const client = createStoreClient({ baseUrl: fake.url, logger, auth: { token: 'tok-123' } });
    const seen: string[] = [];
    const controller = new AbortController();
    let done: () => void = () => {};
    const two = new Promise<void>((resolve) => (done = resolve));
    const stream = openEventStream({
      client,
      logger,
      signal: controller.signal,
      query: { tag: 'tool:request' },
      backoff: FAST,
      onEvent: (event) => {
        seen.push(event.type);
        if (event.type === 'x.one') throw new Error('handler bug');
        done();
      },
    });
    await two;
    controller.abort();
    await stream.closed;
    expect(seen).toEqual(['x.one', 'x.two']);
    expect(fake.requests[0]!.url).toBe('/events/stream?x_ext=deleted%2Cids%2Cgap&x_tag=tool%3Arequest');
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer tok-123');
    expect(fake.requests[0]!.headers.accept).toBe('text/event-stream');
  });

  it('resolves closed promptly when the signal aborts, also while waiting to reconnect', async () => {
    const store = await startStore();
    const port = store.port;
    await store.close();
    const client = createStoreClient({ baseUrl: `http://127.0.0.1:${port}`, logger });
    const controller = new AbortController();
    const stream = openEventStream({
      client,
      logger,
      signal: controller.signal,
      onEvent: () => {},
      backoff: { initialMs: 60_000, maxMs: 60_000 },
    });
    controller.abort();
    await stream.closed;
  });
});

describe.each(['http', 'in-process'] as const)('openEventStream over %s', (transport) => {
  const connectTo = (
    store: Awaited<ReturnType<typeof startStore>>,
    auth?: Parameters<typeof createStoreClient>[0]['auth'],
  ) => {
    const client = createStoreClient({
      baseUrl: store.url,
      logger,
      ...(transport === 'in-process' ? { local: store.local } : {}),
      ...(auth ? { auth } : {}),
    });
    onCleanup(() => client.close());
    return client;
  };

  it("delivers committed events in order with ids and deletions; without extensions exactly upstream's stream", async () => {
    const store = await startStore();
    const client = connectTo(store);
    expect(client.transport).toBe(transport);
    const all = recorder();
    const plain = recorder();
    const tagged = recorder();
    open(client, all);
    open(client, plain, { extensions: [] });
    open(client, tagged, { query: { tag: 'keep' } });
    await Promise.all([all.connects$(1), plain.connects$(1), tagged.connects$(1)]);
    const a = await client.createBreadcrumb({ title: 'a', context: { x: 1 }, tags: ['keep'] });
    const b = await client.createBreadcrumb({ title: 'b', context: { x: 1 }, tags: ['drop'] });
    await client.updateBreadcrumb(a.id, { context: { x: 2 } });
    await client.deleteBreadcrumb(b.id);
    await all.events$(4);
    await plain.events$(3);
    await tagged.events$(2);
    expect(all.events.map((e) => [e.id, e.event.type, e.event.breadcrumb_id, e.event.version])).toEqual([
      ['1', 'breadcrumb.updated', a.id, 1],
      ['2', 'breadcrumb.updated', b.id, 1],
      ['3', 'breadcrumb.updated', a.id, 2],
      ['4', 'breadcrumb.deleted', b.id, 1],
    ]);
    expect(plain.events.map((e) => [e.id, e.event.type, e.event.breadcrumb_id])).toEqual([
      [undefined, 'breadcrumb.updated', a.id],
      [undefined, 'breadcrumb.updated', b.id],
      [undefined, 'breadcrumb.updated', a.id],
    ]);
    expect(tagged.events.map((e) => [e.event.breadcrumb_id, e.event.version])).toEqual([
      [a.id, 1],
      [a.id, 2],
    ]);
    // Each consumer gets its own objects: changing one cannot reach another or the store.
    (all.events[0]!.event.context as Record<string, unknown>).x = 'mutated';
    expect(plain.events[0]!.event.context).toEqual({ x: 1 });
    expect((await client.history(a.id)).find((h) => h.version === 1)?.context).toEqual({ x: 1 });
  });

  it("scopes events to the token's owner and refuses a stream without a valid token", async () => {
    const store = await startStore({ authSecret: 'events-secret-123', adminKey: 'events-admin-123' });
    const mine = connectTo(store, { mint: { owner_id: 'o1', agent_id: 'runner', adminKey: 'events-admin-123' } });
    const theirs = connectTo(store, { mint: { owner_id: 'o2', agent_id: 'other', adminKey: 'events-admin-123' } });
    const rec = recorder();
    open(mine, rec);
    await rec.connects$(1);
    await theirs.createBreadcrumb({ title: 'x', context: {}, tags: ['t'] });
    const own = await mine.createBreadcrumb({ title: 'y', context: {}, tags: ['t'] });
    await rec.events$(1);
    expect(rec.events.map((e) => e.event.breadcrumb_id)).toEqual([own.id]);

    const anonymous = connectTo(store, { token: 'not-a-jwt' });
    const denied = recorder();
    const warnings: string[] = [];
    const capture = {
      ...logger,
      warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push(`${msg}: ${String(fields?.error)}`),
      child: () => capture,
    };
    open(anonymous, denied, { logger: capture as typeof logger });
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (warnings.length > 0) {
          clearInterval(timer);
          resolve();
        }
      }, 5);
    });
    expect(warnings[0]).toBe(
      'event stream lost, reconnecting: store GET /events/stream answered 401 unauthorized: invalid token: Invalid Compact JWS',
    );
    expect(denied.connects).toEqual([]);
  });

  it('ends the stream when the store closes and resolves closed on abort', async () => {
    const store = await startStore();
    const client = connectTo(store);
    const rec = recorder();
    const { controller, stream } = open(client, rec, { backoff: { initialMs: 60_000, maxMs: 60_000 } });
    await rec.connects$(1);
    expect(await client.health()).toMatchObject({ streams: 1 });
    await store.close();
    controller.abort();
    await stream.closed;
  });
});
