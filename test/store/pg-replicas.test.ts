// The PostgreSQL store with several replicas on one database: migrations applied once when they
// start together, every write reaching every replica's streams in commit order, resume on another
// replica, Idempotency-Key / If-Match / secrets across replicas, and a PostgreSQL restart.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/pg/db.js';
import type { Store } from '../../src/store/index.js';
import { PG_UNAVAILABLE, sharedPgCluster } from '../support/pg-cluster.js';
import { call, crumb, openSse, pgDatabase, PG_TEST_SECRETS_KEY, startStore, type SseConnection } from './helpers.js';

async function replicas(count: number, url?: string): Promise<{ url: string; stores: Store[] }> {
  const db = url ?? (await pgDatabase());
  const stores = await Promise.all(Array.from({ length: count }, () => startStore({ db })));
  return { url: db, stores };
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const eventsOf = (conn: SseConnection) =>
  conn.events().map((frame) => ({
    id: Number(frame.id),
    type: frame.data.type as string,
    bc: frame.data.breadcrumb_id as string,
    version: frame.data.version as number,
  }));

describe.skipIf(PG_UNAVAILABLE !== undefined)('store on PostgreSQL: several replicas on one database', () => {
  it('three replicas starting together on a fresh database apply each migration exactly once', async () => {
    const { url, stores } = await replicas(3);
    const rows = await query<{ version: number }>(url, 'SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.map((row) => row.version)).toEqual(MIGRATIONS.map((m) => m.version));
    for (const store of stores) expect((await call(store.url, 'GET', '/health')).status).toBe(200);
  });

  it('a write through any replica reaches the streams of every replica, each in the same commit order', async () => {
    const { stores } = await replicas(3);
    const streams = await Promise.all(stores.map((store) => openSse(store.url, { query: '?x_ext=ids,deleted' })));
    // Three breadcrumbs, each updated through all three replicas concurrently (If-Match-free PATCHes).
    const ids = await Promise.all(
      stores.map(async (store) => (await call(store.url, 'POST', '/breadcrumbs', { body: crumb() })).body.id as string),
    );
    const writes: Array<Promise<unknown>> = [];
    for (let round = 0; round < 10; round++) {
      ids.forEach((id, i) =>
        writes.push(
          call((stores[(i + round) % 3] as Store).url, 'PATCH', `/breadcrumbs/${id}`, { body: { context: { round } } }),
        ),
      );
    }
    await Promise.all(writes);
    await call((stores[1] as Store).url, 'DELETE', `/breadcrumbs/${ids[0] as string}`);
    const total = 3 + 30 + 1;
    const seen = await Promise.all(streams.map(async (conn) => (await conn.waitForEvents(total), eventsOf(conn))));
    for (const events of seen) {
      expect(events).toHaveLength(total);
      expect(events).toEqual(seen[0]);
      const seqs = events.map((e) => e.id);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      // Per breadcrumb: versions 1..11 in order, then (for the first) its deletion.
      for (const id of ids)
        expect(events.filter((e) => e.bc === id && e.type === 'breadcrumb.updated').map((e) => e.version)).toEqual(
          Array.from({ length: 11 }, (_, k) => k + 1),
        );
    }
    expect(seen[0]?.at(-1)).toMatchObject({ type: 'breadcrumb.deleted', bc: ids[0] });
  });

  it('resumes on another replica from the Last-Event-ID the first one sent, with no gap and no duplicate', async () => {
    const { stores } = await replicas(2);
    const [a, b] = stores as [Store, Store];
    const first = await openSse(a.url, { query: '?x_ext=ids,gap' });
    for (let n = 0; n < 6; n++) await call(a.url, 'POST', '/breadcrumbs', { body: crumb({ context: { n } }) });
    const seen = await first.waitForEvents(6);
    first.close();
    const resumed = await openSse(b.url, {
      query: '?x_ext=ids,gap',
      headers: { 'Last-Event-ID': String(seen[2]?.id) },
    });
    await call(b.url, 'POST', '/breadcrumbs', { body: crumb({ context: { n: 6 } }) });
    const rest = await resumed.waitForEvents(4);
    expect(rest.map((frame) => frame.data.type)).not.toContain('stream.gap');
    expect(rest.map((frame) => frame.data.context.n)).toEqual([3, 4, 5, 6]);
  });

  it('Idempotency-Key and If-Match hold across replicas: one winner each', async () => {
    const { stores } = await replicas(3);
    const creates = await Promise.all(
      Array.from({ length: 21 }, (_, i) =>
        call((stores[i % 3] as Store).url, 'POST', '/breadcrumbs', {
          body: crumb(),
          headers: { 'Idempotency-Key': 'same-key' },
        }),
      ),
    );
    const won = creates.filter((reply) => reply.status === 201);
    expect(won).toHaveLength(1);
    const winner = won[0]?.body.id as string;
    expect(creates.filter((reply) => reply.status === 409).map((reply) => reply.body.id)).toEqual(
      Array(20).fill(winner),
    );
    const patches = await Promise.all(
      Array.from({ length: 21 }, (_, i) =>
        call((stores[i % 3] as Store).url, 'PATCH', `/breadcrumbs/${winner}`, {
          body: { context: { i } },
          headers: { 'If-Match': '1' },
        }),
      ),
    );
    expect(patches.filter((reply) => reply.status === 200)).toHaveLength(1);
    expect(patches.filter((reply) => reply.status === 412).map((reply) => reply.body.version)).toEqual(
      Array(20).fill(2),
    );
  });

  it('secrets written through one replica decrypt on another; a replica with another secrets key refuses to start', async () => {
    const { url, stores } = await replicas(2);
    const created = await call((stores[0] as Store).url, 'POST', '/secrets', {
      body: { name: 'K', scope_type: 'global', value: 'v4lue' },
    });
    expect(
      (await call((stores[1] as Store).url, 'POST', `/secrets/${created.body.id as string}/decrypt`, { body: {} }))
        .body,
    ).toEqual({ value: 'v4lue' });
    const stored = await query<{ ciphertext: Buffer }>(url, 'SELECT ciphertext FROM secrets');
    expect(stored[0]?.ciphertext.includes(Buffer.from('v4lue'))).toBe(false);
    await expect(startStore({ db: url, secretsKey: 'cd'.repeat(32) })).rejects.toMatchObject({
      code: 'config.invalid',
      message: expect.stringContaining('every replica must use the same --secrets-key'),
    });
    await expect(startStore({ db: url, secretsKey: undefined })).rejects.toMatchObject({
      code: 'config.invalid',
      message: expect.stringContaining('needs --secrets-key'),
    });
  });

  it('refuses a database migrated by a newer version, and a db that is not a postgres URL', async () => {
    const { url, stores } = await replicas(1);
    await (stores[0] as Store).close();
    await query(url, "INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')");
    await expect(startStore({ db: url })).rejects.toMatchObject({
      code: 'config.invalid',
      message: expect.stringContaining('schema migration 999, newer than this store knows'),
    });
    await expect(startStore({ db: 'mysql://u:secret@h/db', secretsKey: PG_TEST_SECRETS_KEY })).rejects.toMatchObject({
      code: 'config.invalid',
      message: 'db must be a postgres:// or postgresql:// URL, got "h/db"',
    });
  });

  it('after a PostgreSQL restart the replicas write again and their open streams receive the new events', async () => {
    const { stores } = await replicas(2);
    const streams = await Promise.all(stores.map((store) => openSse(store.url, { query: '?x_ext=ids' })));
    await call((stores[0] as Store).url, 'POST', '/breadcrumbs', { body: crumb({ context: { n: 'before' } }) });
    await Promise.all(streams.map((conn) => conn.waitForEvents(1)));
    await (await sharedPgCluster()).restart();
    // Pooled connections died with the server: a write may fail until the pool has reconnected.
    let reply = await call((stores[1] as Store).url, 'POST', '/breadcrumbs', {
      body: crumb({ context: { n: 'after' } }),
    });
    for (let attempt = 0; reply.status !== 201 && attempt < 50; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      reply = await call((stores[1] as Store).url, 'POST', '/breadcrumbs', {
        body: crumb({ context: { n: 'after' } }),
      });
    }
    expect(reply.status).toBe(201);
    for (const conn of streams) {
      const events = await conn.waitForEvents(2);
      expect(events.map((frame) => frame.data.context.n)).toEqual(['before', 'after']);
    }
  });
});
