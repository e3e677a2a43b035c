// The progress publisher with a real embedded store: one tool.progress.v1 per request, created at the
// first report and replaced with the reports since the last write; `done: true` after close(); at
// most MAX_EVENTS_PER_WRITE reports per write (the rest counted in `dropped`); nothing is written
// for a call that reported nothing; a store failure stops publishing without throwing.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStoreClient, SCHEMA, type StoreClient } from '../../src/breadcrumbs/index.js';
import { createRequestKeys } from '../../src/breadcrumbs/request-keys.js';
import { defaultConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/logger.js';
import { createProgressPublisher, MAX_EVENTS_PER_WRITE, progressTag } from '../../src/request/progress.js';
import { createStore, type Store } from '../../src/store/index.js';

const keys = createRequestKeys(Buffer.alloc(32, 7));
let store: Store;
let client: StoreClient;

beforeAll(async () => {
  store = await createStore({ ...defaultConfig({ port: 0, dataDir: ':memory:' }), logger: silentLogger() });
  client = createStoreClient({ baseUrl: store.url, logger: silentLogger() });
});

afterAll(async () => {
  client?.close();
  await store?.close();
});

const publisher = (rid: string, c: StoreClient = client, intervalMs = 10) =>
  createProgressPublisher({
    client: c,
    keys,
    workspace: 'workspace:tools',
    rid,
    requestBreadcrumbId: `bc-${rid}`,
    tool: 'llm',
    intervalMs,
    logger: silentLogger(),
  });

async function record(rid: string) {
  const items = await client.listBreadcrumbs({
    schema_name: SCHEMA.ToolProgress,
    tag: `request:${rid}`,
    include_context: true,
  });
  return items;
}

describe('progress publisher', () => {
  it('creates one record, then replaces it; close() marks it done', async () => {
    const p = publisher('r1');
    p.push({ text: 'a' });
    await expect.poll(async () => (await record('r1')).length, { timeout: 20_000 }).toBe(1);
    p.push({ text: 'b' });
    p.push({ text: 'c' });
    await p.close();
    const [only, ...rest] = await record('r1');
    expect(rest).toEqual([]);
    expect(only?.tags).toEqual(['workspace:tools', 'tool:progress', 'request:r1', progressTag(keys, 'bc-r1')]);
    // the last write holds what came after the previous one (the reader keeps what it saw by seq)
    expect(only?.context).toMatchObject({ request_id: 'r1', tool: 'llm', seq: 3, dropped: 0, done: true });
    const events = (only?.context as { events: Array<{ seq: number }> }).events;
    expect(events.at(-1)).toEqual({ seq: 3, value: { text: 'c' } });
  });

  it('drops reports over the per-write bound and counts them', async () => {
    const p = publisher('r2', client, 60_000);
    for (let i = 0; i < MAX_EVENTS_PER_WRITE + 5; i++) p.push({ i });
    await p.close();
    const [only] = await record('r2');
    const context = only?.context as { seq: number; dropped: number; events: unknown[] };
    expect(context).toMatchObject({ seq: MAX_EVENTS_PER_WRITE + 5, dropped: 5, done: true });
    expect(context.events).toHaveLength(MAX_EVENTS_PER_WRITE);
  });

  it('writes nothing for a call that reported nothing', async () => {
    await publisher('r3').close();
    expect(await record('r3')).toEqual([]);
  });

  it('a store failure stops publishing and never throws', async () => {
    const dead = createStoreClient({ baseUrl: 'http://127.0.0.1:1', logger: silentLogger() });
    try {
      const p = publisher('r4', dead);
      p.push({ text: 'x' });
      await expect(p.close()).resolves.toBeUndefined();
    } finally {
      dead.close();
    }
  });
});
