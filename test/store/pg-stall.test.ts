// A replica whose database connection is cut in the middle of a write stalls no other replica: a
// TCP proxy between one replica and PostgreSQL stops forwarding that replica's bytes (both ways)
// right after it sends the first write statement of a transaction; writes through a second
// replica still commit and reach its stream. Before the event feed took no lock held across a
// client round trip, the cut transaction held the one event_clock row and every replica's writes
// waited behind it.
import net from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/pg/db.js';
import { PG_UNAVAILABLE } from '../support/pg-cluster.js';
import { call, crumb, onCleanup, openSse, pgDatabase, startStore } from './helpers.js';

const WRITE = /^\s*(INSERT|UPDATE|DELETE|WITH)\b|\bFOR UPDATE\b/i;
const BOUND_MS = 2000;

/** A proxy to `target` that, once armed, cuts the first connection that writes inside a transaction. */
async function cuttingProxy(target: URL): Promise<{ port: number; arm(): Promise<void>; close(): void }> {
  const sockets = new Set<net.Socket>();
  let armed = false;
  let cutDone: () => void = () => {};
  const cut = new Promise<void>((resolve) => (cutDone = resolve));
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let frozen = false;
    let inTx = false;
    let cutAfterSync = false;
    let pending = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk: Buffer) => {
      if (frozen) return;
      pending = Buffer.concat([pending, chunk]);
      // Forward whole protocol messages, noting BEGIN and the first write after it.
      for (;;) {
        if (!started) {
          if (pending.length < 4) return;
          const length = pending.readInt32BE(0);
          if (pending.length < length) return;
          const startup = pending.subarray(0, length);
          pending = pending.subarray(length);
          upstream.write(startup);
          // An SSLRequest (8 bytes, code 80877103) is followed by the real startup message.
          started = !(length === 8 && startup.readInt32BE(4) === 80877103);
          continue;
        }
        if (pending.length < 5) return;
        const type = String.fromCharCode(pending[0] as number);
        const length = pending.readInt32BE(1) + 1;
        if (pending.length < length) return;
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        upstream.write(message);
        const text =
          type === 'Q'
            ? message.subarray(5, length - 1).toString()
            : type === 'P'
              ? message.subarray(message.indexOf(0, 5) + 1, message.indexOf(0, message.indexOf(0, 5) + 1)).toString()
              : '';
        if (/^\s*BEGIN\b/i.test(text)) inTx = true;
        else if (/^\s*(COMMIT|ROLLBACK)\b/i.test(text)) inTx = false;
        else if (armed && inTx && WRITE.test(text)) cutAfterSync = true;
        if (cutAfterSync && (type === 'S' || type === 'Q')) {
          frozen = true;
          armed = false;
          cutDone();
          return;
        }
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!frozen) client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    arm() {
      armed = true;
      return cut;
    },
    close() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** `promise`, or a rejection naming `what` after BOUND_MS. */
function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${BOUND_MS} ms`)), BOUND_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Resolves once the sessions named `name` include one idle inside a transaction (its write ran); polls up to BOUND_MS. */
async function openTransaction(url: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const deadline = Date.now() + BOUND_MS;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const sql = "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'";
      if ((await client.query(sql, [name])).rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, Math.min(5 * 2 ** attempt, 50)));
    }
    throw new Error(`no session of ${name} was idle in a transaction within ${BOUND_MS} ms`);
  } finally {
    await client.end();
  }
}

describe.skipIf(PG_UNAVAILABLE !== undefined)('store on PostgreSQL: a replica cut off mid-write', () => {
  it('writes through another replica commit and reach its stream while the cut transaction is open', async () => {
    const url = new URL(await pgDatabase());
    const proxy = await cuttingProxy(url);
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
    const proxy = await cuttingProxy(url);
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
