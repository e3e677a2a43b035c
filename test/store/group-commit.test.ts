// Group commit: writes that arrive together share one SQLite transaction, each in its own
// savepoint — a write that fails (409, 412, 404) fails alone, and no caller is answered before its
// write committed; events still come out in commit order. A lease's finish joins the same commit,
// and one marked `ride` (the runner's, which nobody awaits) makes no commit of its own while another
// write will make one.
import { describe, expect, it, vi } from 'vitest';
import Database from 'better-sqlite3';
import { createGroupCommit, RIDE_MAX_MS } from '../../src/store/group-commit.js';
import type { LocalRequest } from '../../src/store/index.js';
import { crumb, startStore, tempDir } from './helpers.js';

const req = (body: unknown, headers: Record<string, string> = {}): LocalRequest => ({
  query: new URLSearchParams(),
  headers,
  body,
  token: undefined,
});

describe('store: group commit', () => {
  it.each([true, false])('writes issued together (group commit %s) succeed or fail one by one', async (group) => {
    const store = await startStore({ groupCommit: group });
    const seeded = await store.local.call('POST', '/breadcrumbs', req(crumb()));
    const seededId = (seeded as { value: { id: string } }).value.id;
    const before = store.writeStats();
    const frames: string[] = [];
    const sub = await store.local.stream(new URLSearchParams('x_ext=ids,deleted'), undefined, undefined, {
      frame: (data) => frames.push(data),
      end: () => {},
    });
    const replies = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => store.local.call('POST', '/breadcrumbs', req(crumb({ context: { i } })))),
      store.local.call('POST', '/breadcrumbs', req(crumb({ context: { i: 'k1' } }), { 'Idempotency-Key': 'same' })),
      store.local.call('POST', '/breadcrumbs', req(crumb({ context: { i: 'k2' } }), { 'Idempotency-Key': 'same' })),
      store.local.call('PATCH', `/breadcrumbs/${seededId}`, req({ context: { v: 2 } }, { 'If-Match': '1' })),
      store.local.call('PATCH', `/breadcrumbs/${seededId}`, req({ context: { v: 3 } }, { 'If-Match': '1' })),
      store.local.call('DELETE', '/breadcrumbs/no-such-id', req(undefined)),
    ]);
    expect(replies.map((r) => r.status)).toEqual([...Array(10).fill(201), 201, 409, 200, 412, 404]);
    const after = store.writeStats();
    expect(after.writes - before.writes).toBe(15);
    // Together: one transaction for all fifteen; one by one: fifteen.
    expect(after.transactions - before.transactions).toBe(group ? 1 : 15);
    // Every answered write is there, and its event was published before its caller was answered.
    expect(frames).toHaveLength(12);
    const seqs = frames
      .map((f) => JSON.parse(f) as { context: { i?: unknown; v?: unknown } })
      .map((e) => e.context.i ?? `v${String(e.context.v)}`);
    expect(seqs).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 'k1', 'v2']);
    sub.close();
  });

  it.each([true, false])(
    'a lease finish joins the group commit (group commit %s); a bad body is refused at once',
    async (group) => {
      const store = await startStore({ groupCommit: group, leaseKey: 'lease-key-for-tests-0123' });
      const lease = (op: string, body: Record<string, unknown>) =>
        store.local.call('POST', `/x/leases/${op}`, req(body, { 'X-Lease-Key': 'lease-key-for-tests-0123' }));
      const held = { scope: 'ws', holder: 'a', token: 'tok-a', ttl_ms: 60_000 };
      for (const name of ['r1', 'r2']) expect((await lease('acquire', { ...held, name })).status).toBe(200);
      const before = store.writeStats();
      const replies = await Promise.all([
        store.local.call('POST', '/breadcrumbs', req(crumb({ context: { i: 'answer' } }))),
        lease('finish', { scope: 'ws', name: 'r1', token: 'tok-a' }),
        lease('finish', { scope: 'ws', name: 'r2', token: 'not-the-holder' }),
        lease('finish', { scope: 'ws', name: '' }),
      ]);
      expect(replies.map((r) => r.status)).toEqual([201, 200, 200, 400]);
      expect(replies.slice(1, 3).map((r) => (r as { value: unknown }).value)).toEqual([{ ok: true }, { ok: false }]);
      expect(JSON.stringify((replies[3] as { error: unknown }).error)).toMatch(/name must be a non-empty string/);
      const after = store.writeStats();
      // the answer and both finishes: one transaction together, three one by one
      expect(after.writes - before.writes).toBe(3);
      expect(after.transactions - before.transactions).toBe(group ? 1 : 3);
      // committed: the finished lease is done, the other still held
      const again = await Promise.all(['r1', 'r2'].map((name) => lease('acquire', { ...held, name, token: 'tok-b' })));
      expect(again.map((r) => (r as { value: { acquired: boolean; state?: string } }).value)).toEqual([
        expect.objectContaining({ acquired: false, state: 'done' }),
        expect.objectContaining({ acquired: false, state: 'held' }),
      ]);
    },
  );

  it('a finish that rides waits for the next write, in a later turn too, and commits alone only after RIDE_MAX_MS', async () => {
    const store = await startStore({ leaseKey: 'lease-key-for-tests-0123' });
    const lease = (op: string, body: Record<string, unknown>) =>
      store.local.call('POST', `/x/leases/${op}`, req(body, { 'X-Lease-Key': 'lease-key-for-tests-0123' }));
    const states = async (): Promise<Record<string, string>> => {
      const reply = (await lease('list', { scope: 'ws' })) as { value: { leases: { name: string; state: string }[] } };
      return Object.fromEntries(reply.value.leases.map((l) => [l.name, l.state]));
    };
    const held = { scope: 'ws', holder: 'a', token: 'tok-a', ttl_ms: 60_000 };
    for (const name of ['r1', 'r2']) expect((await lease('acquire', { ...held, name })).status).toBe(200);
    const before = store.writeStats();
    const finished = lease('finish', { scope: 'ws', name: 'r1', token: 'tok-a', ride: true });
    // a turn of the event loop later the finish has not committed: nothing else wrote
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(await states()).toEqual({ r1: 'held', r2: 'held' });
    expect(store.writeStats().transactions).toBe(before.transactions);
    // the next write, made later, commits it too: one transaction for both
    const written = await store.local.call('POST', '/breadcrumbs', req(crumb({ context: { i: 'next request' } })));
    expect(written.status).toBe(201);
    expect((await finished).status).toBe(200);
    expect(((await finished) as { value: unknown }).value).toEqual({ ok: true });
    const after = store.writeStats();
    expect(after.writes - before.writes).toBe(2);
    expect(after.transactions - before.transactions).toBe(1);
    expect(await states()).toEqual({ r1: 'done', r2: 'held' });
    // a finish that no write follows still commits, alone, when RIDE_MAX_MS has passed on the store's
    // timer (faked here: the order of events, not the wall clock)
    let alone: { status: number } | undefined;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      void lease('finish', { scope: 'ws', name: 'r2', token: 'tok-a', ride: true }).then((reply) => (alone = reply));
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      vi.advanceTimersByTime(RIDE_MAX_MS - 1);
      await new Promise((resolve) => setImmediate(resolve));
      expect(alone).toBeUndefined();
      expect(store.writeStats().transactions).toBe(after.transactions);
      vi.advanceTimersByTime(1);
    } finally {
      vi.useRealTimers();
    }
    await vi.waitFor(() => expect(alone?.status).toBe(200));
    expect(store.writeStats().transactions - after.transactions).toBe(1);
    expect(await states()).toEqual({ r1: 'done', r2: 'done' });
  });

  it("the store's close commits a finish still waiting to ride", async () => {
    const dataDir = tempDir();
    const leaseKey = 'lease-key-for-tests-0123';
    const store = await startStore({ dataDir, leaseKey });
    // named by a breadcrumb that exists (a finished lease whose subject is gone is pruned at start)
    const subject = (await store.local.call('POST', '/breadcrumbs', req(crumb()))) as { value: { id: string } };
    const name = subject.value.id;
    const lease = (s: typeof store, op: string, body: Record<string, unknown>) =>
      s.local.call('POST', `/x/leases/${op}`, req(body, { 'X-Lease-Key': leaseKey }));
    expect(
      (await lease(store, 'acquire', { scope: 'ws', name, holder: 'a', token: 'tok-a', ttl_ms: 60_000 })).status,
    ).toBe(200);
    const finished = lease(store, 'finish', { scope: 'ws', name, token: 'tok-a', ride: true });
    await store.close();
    expect((await finished).status).toBe(200);
    const reopened = await startStore({ dataDir, leaseKey });
    const listed = (await lease(reopened, 'list', { scope: 'ws' })) as { value: { leases: { state: string }[] } };
    expect(listed.value.leases.map((l) => l.state)).toEqual(['done']);
  });

  it('flush() commits waiting riders at once (what the store does at close)', async () => {
    const db = new Database(':memory:');
    const commits = createGroupCommit(db, true);
    let ran = 0;
    const rider = commits.submit(
      () => ++ran,
      (value) => value,
      true,
    );
    expect(ran).toBe(0);
    commits.flush();
    expect(ran).toBe(1);
    expect(commits.counters.transactions).toBe(1);
    expect(await rider).toBe(1);
    // nothing left for the timer: it was cleared, and a later flush finds nothing to commit
    commits.flush();
    expect(commits.counters.transactions).toBe(1);
    db.close();
  });

  it('a finish without ride commits in its own turn as before; ride must be a boolean', async () => {
    const store = await startStore({ leaseKey: 'lease-key-for-tests-0123' });
    const lease = (op: string, body: Record<string, unknown>) =>
      store.local.call('POST', `/x/leases/${op}`, req(body, { 'X-Lease-Key': 'lease-key-for-tests-0123' }));
    const held = { scope: 'ws', holder: 'a', token: 'tok-a', ttl_ms: 60_000 };
    expect((await lease('acquire', { ...held, name: 'r1' })).status).toBe(200);
    const before = store.writeStats();
    const finished = lease('finish', { scope: 'ws', name: 'r1', token: 'tok-a' });
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.writeStats().transactions - before.transactions).toBe(1);
    expect(((await finished) as { value: unknown }).value).toEqual({ ok: true });
    for (const ride of ['yes', 1, null]) {
      const refused = await lease('finish', { scope: 'ws', name: 'r1', ride });
      expect(refused.status).toBe(400);
      expect((refused as { error: unknown }).error).toEqual({
        error: `ride must be a boolean, got ${JSON.stringify(ride)}`,
        code: 'invalid_body',
      });
    }
  });
});
