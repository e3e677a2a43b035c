// A replica whose database connection is cut in the middle of a write stalls no other replica: a
// TCP proxy between one replica and PostgreSQL stops forwarding that replica's bytes (both ways)
// right after it sends the first write statement of a transaction; writes through a second
// replica still commit and reach its stream. Before the event feed took no lock held across a
// client round trip, the cut transaction held the one event_clock row and every replica's writes
// waited behind it.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/pg/db.js';
import { PG_UNAVAILABLE } from '../support/pg-cluster.js';
import { idleInTransaction, startCutProxy } from '../support/pg-cut-proxy.mjs';
import { call, crumb, onCleanup, openSse, pgDatabase, startStore } from './helpers.js';

const BOUND_MS = 2000;

/** `promise`, or a rejection naming `what` after BOUND_MS. */
function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${BOUND_MS} ms`)), BOUND_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const openTransaction = (url: string, name: string): Promise<void> => idleInTransaction(pg, url, name, BOUND_MS);

describe.skipIf(PG_UNAVAILABLE !== undefined)('store on PostgreSQL: a replica cut off mid-write', () => {
  it('writes through another replica commit and reach its stream while the cut transaction is open', async () => {
    const url = new URL(await pgDatabase());
    const proxy = await startCutProxy(url);
    const viaProxy = new URL(url);
    viaProxy.port = String(proxy.port);
    viaProxy.searchParams.set('application_name', 'cut-replica');
    const cutReplica = await startStore({ db: viaProxy.toString() });
    const other = await startStore({ db: url.toString() });
    // Runs before the stores close (cleanups are LIFO): the cut client's query fails and it is released.
    onCleanup(() => proxy.close());
    const stream = await openSse(other.url, { query: '?x_ext=ids' });

    const cut = proxy.arm();
    const stuck = call(cutReplica.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'cut off' }) }).catch(
      () => undefined,
    );
    await bounded(cut, 'the cut');
    await openTransaction(url.toString(), 'cut-replica');
    for (let n = 0; n < 5; n++) {
      const reply = await bounded(
        call(other.url, 'POST', '/breadcrumbs', { body: crumb({ context: { n } }) }),
        `write ${n} through the other replica`,
      );
      expect(reply.status).toBe(201);
      const events = await bounded(stream.waitForEvents(n + 1), `event ${n} on the other replica's stream`);
      expect(events[n]?.data).toMatchObject({ breadcrumb_id: reply.body.id, context: { n } });
    }
    proxy.close();
    await stuck;
  });

  it('a row the cut replica locked is free again after the idle-in-transaction timeout: PostgreSQL ends its session', async () => {
    const url = new URL(await pgDatabase());
    const proxy = await startCutProxy(url);
    const viaProxy = new URL(url);
    viaProxy.port = String(proxy.port);
    viaProxy.searchParams.set('application_name', 'cut-updater');
    const cutReplica = await startStore({ db: viaProxy.toString(), dbIdleInTransactionTimeoutMs: 300 });
    const other = await startStore({ db: url.toString() });
    onCleanup(() => proxy.close());
    const id = (await call(other.url, 'POST', '/breadcrumbs', { body: crumb() })).body.id as string;

    // The cut lands right after the update's SELECT … FOR UPDATE: the replica holds the record's row lock.
    const cut = proxy.arm();
    const stuck = call(cutReplica.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: 'cut off' } }).catch(
      () => undefined,
    );
    await bounded(cut, 'the cut');
    await openTransaction(url.toString(), 'cut-updater');
    const reply = await bounded(
      call(other.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: 'after' } }),
      'an update of the same record through the other replica',
    );
    expect(reply.status).toBe(200);
    expect((await call(other.url, 'GET', `/breadcrumbs/${id}`)).body).toMatchObject({ title: 'after', version: 2 });
    proxy.close();
    await stuck;
  });
});

describe.skipIf(PG_UNAVAILABLE !== undefined)('store on PostgreSQL: events of a database from before the relay', () => {
  it('keeps the stored events and their seqs, and numbers new events after them', async () => {
    const url = await pgDatabase();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(
        'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      for (const migration of MIGRATIONS.filter((m) => m.version <= 3)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      }
      // Two events appended as the version 3 store did: seqs from event_clock.
      for (const seq of [1, 2]) {
        const data = JSON.stringify({
          type: 'breadcrumb.updated',
          breadcrumb_id: `old-${seq}`,
          owner_id: 'o',
          tags: [],
        });
        await client.query(
          "INSERT INTO events (seq, owner_id, schema_name, tags, data) VALUES ($1, 'o', NULL, '[]', $2)",
          [seq, data],
        );
      }
      await client.query('UPDATE event_clock SET last_seq = 2');
    } finally {
      await client.end();
    }
    const store = await startStore({ db: url });
    const reply = await call(store.url, 'POST', '/breadcrumbs', { body: crumb() });
    expect(reply.status).toBe(201);
    const stream = await openSse(store.url, { query: '?x_ext=ids', headers: { 'Last-Event-ID': '0' } });
    const events = await bounded(stream.waitForEvents(3), 'the replay');
    expect(events.map((frame) => [Number(frame.id), frame.data.breadcrumb_id])).toEqual([
      [1, 'old-1'],
      [2, 'old-2'],
      [3, reply.body.id],
    ]);
  });
});
