// A PostgreSQL store whose database is unreachable answers 503 `unavailable` on both of its
// endpoints: over HTTP and in process (the endpoint `start` gives its own runner). Before, the
// in-process endpoint threw the driver's error, so the runner's retries of store trouble did not
// apply: a job whose tool had run failed at its answer write, and another replica ran it again
// (found by bench/pg-failover.mjs: duplicate runs of requests in flight at a PostgreSQL restart).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_UNAVAILABLE, startPgCluster, type PgCluster } from '../support/pg-cluster.js';
import { call, startStore } from './helpers.js';

let cluster: PgCluster | undefined;
beforeAll(async () => {
  if (PG_UNAVAILABLE === undefined) cluster = await startPgCluster();
}, 120_000);
afterAll(async () => cluster?.stop());

const create = { title: 't', context: { n: 1 }, tags: ['x'] };
const local = (body: unknown) => ({ query: new URLSearchParams(), headers: {}, body, token: undefined });

describe.skipIf(PG_UNAVAILABLE !== undefined)('a PostgreSQL store without its database', () => {
  it('answers 503 unavailable in process as over HTTP, never a thrown driver error', async () => {
    const store = await startStore({ db: await (cluster as PgCluster).database() });
    expect((await store.local.call('POST', '/breadcrumbs', local(create))).status).toBe(201);
    expect((await call(store.url, 'POST', '/breadcrumbs', { body: create })).status).toBe(201);

    await (cluster as PgCluster).stop(); // the server is gone: every new connection is refused

    const unreachable = { error: "the store's database is unreachable; retry shortly", code: 'unavailable' };
    const inProcess = await store.local.call('POST', '/breadcrumbs', local(create));
    expect(inProcess).toEqual({ status: 503, error: unreachable });
    const read = await store.local.call('GET', '/breadcrumbs', local(undefined));
    expect(read).toEqual({ status: 503, error: unreachable });
    const overHttp = await call(store.url, 'POST', '/breadcrumbs', { body: create });
    expect({ status: overHttp.status, code: overHttp.body.code }).toEqual({ status: 503, code: 'unavailable' });
  }, 120_000);
});
