// The SQLite store's full-text index is written in batches after the writes (src/store/fts-index.ts):
// a search still sees every write answered before it, the mark in meta says exactly which rows are
// indexed, and rows that leave (update, delete) take their index entries with them whether or not
// they were indexed yet. FTS5's own integrity check against the breadcrumbs table is the judge: a
// 'delete' of a row that was never indexed, or an indexed row left behind, makes it fail.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createBreadcrumbWrites } from '../../src/store/breadcrumb-writes.js';
import { openDatabase } from '../../src/store/db.js';
import { createEventLog } from '../../src/store/event-log.js';
import { createSearchIndex, FTS_BATCH_BYTES, FTS_MARK_KEY } from '../../src/store/fts-index.js';
import { call, crumb, onCleanup, startStore, tempDir } from './helpers.js';

const titles = (reply: { body: Array<{ title: string }> }): string[] => reply.body.map((b) => b.title).sort();
const search = async (url: string, q: string): Promise<string[]> =>
  titles(await call(url, 'GET', `/breadcrumbs/search?q=${encodeURIComponent(q)}&nn=50`));

/** The mark and the newest row's write_seq, read from the file by a connection of its own. */
function state(dir: string): { mark: number; last: number } {
  const db = new Database(join(dir, 'store.db'), { readonly: true });
  try {
    return {
      mark: Number(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(FTS_MARK_KEY)),
      last: db.prepare('SELECT COALESCE(max(write_seq), 0) FROM breadcrumbs').pluck().get() as number,
    };
  } finally {
    db.close();
  }
}

/** FTS5's integrity check, the index against its content table (rank 1); throws when they differ. */
function integrityCheck(dir: string): void {
  const db = new Database(join(dir, 'store.db'));
  try {
    db.prepare(`INSERT INTO breadcrumbs_fts (breadcrumbs_fts, rank) VALUES ('integrity-check', 1)`).run();
  } finally {
    db.close();
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('store: the search index is written in batches', () => {
  it('indexes rows after their writes and moves the mark past them', async () => {
    const dir = tempDir();
    const store = await startStore({ dataDir: dir, searchIndexDelayMs: 50 });
    const before = state(dir);
    expect(before.mark).toBe(before.last);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: `walrus ${i}` }) }),
      ),
    );
    await until(() => {
      const now = state(dir);
      return now.last > before.last && now.mark === now.last;
    }, 'the rows to be indexed');
    const db = new Database(join(dir, 'store.db'), { readonly: true });
    expect(db.prepare(`SELECT count(*) FROM breadcrumbs_fts WHERE breadcrumbs_fts MATCH 'walrus'`).pluck().get()).toBe(
      20,
    );
    db.close();
    await store.close();
    integrityCheck(dir);
  });

  it('a search finds a write answered just before it, while the batch is still waiting', async () => {
    const dir = tempDir();
    // the batch would come a minute later: only the search's own catch-up can index the row
    const store = await startStore({ dataDir: dir, searchIndexDelayMs: 60_000 });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'narwhal tusk' }) });
    const waiting = state(dir);
    expect(waiting.mark).toBeLessThan(waiting.last);
    expect(await search(store.url, 'narwhal')).toEqual(['narwhal tusk']);
    const after = state(dir);
    expect(after.mark).toBe(after.last);
  });

  it('updates and deletes before and after indexing leave the index exactly the table', async () => {
    const dir = tempDir();
    const store = await startStore({ dataDir: dir, searchIndexDelayMs: 60_000 });
    const create = async (title: string): Promise<string> =>
      (await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title }) })).body.id as string;
    const a = await create('alpha original');
    const b = await create('bravo original');
    await create('charlie original');
    // indexed now (the search catches up); then changed
    expect(await search(store.url, 'original')).toEqual(['alpha original', 'bravo original', 'charlie original']);
    expect((await call(store.url, 'PATCH', `/breadcrumbs/${a}`, { body: { title: 'alpha renamed' } })).status).toBe(
      200,
    );
    expect((await call(store.url, 'DELETE', `/breadcrumbs/${b}`)).status).toBe(200);
    // never indexed before they change or go
    const d = await create('delta first');
    expect((await call(store.url, 'PATCH', `/breadcrumbs/${d}`, { body: { title: 'delta second' } })).status).toBe(200);
    expect((await call(store.url, 'PATCH', `/breadcrumbs/${d}`, { body: { title: 'delta third' } })).status).toBe(200);
    const e = await create('echo gone');
    expect((await call(store.url, 'DELETE', `/breadcrumbs/${e}`)).status).toBe(200);
    const pending = state(dir);
    expect(pending.mark).toBeLessThan(pending.last);

    expect(await search(store.url, 'original')).toEqual(['charlie original']);
    expect(await search(store.url, 'alpha')).toEqual(['alpha renamed']);
    expect(await search(store.url, 'bravo')).toEqual([]);
    expect(await search(store.url, 'delta')).toEqual(['delta third']);
    expect(await search(store.url, 'first second')).toEqual([]);
    expect(await search(store.url, 'echo')).toEqual([]);
    // changed again after the search indexed them
    expect((await call(store.url, 'PATCH', `/breadcrumbs/${d}`, { body: { title: 'delta fourth' } })).status).toBe(200);
    expect((await call(store.url, 'DELETE', `/breadcrumbs/${a}`)).status).toBe(200);
    await store.close();
    const closed = state(dir);
    expect(closed.mark).toBe(closed.last);
    integrityCheck(dir);
    const again = await startStore({ dataDir: dir });
    expect(await search(again.url, 'delta alpha')).toEqual(['delta fourth']);
  });

  it('rows a crash left above the mark are indexed after the next start', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    for (const title of ['oryx one', 'oryx two', 'oryx three'])
      await call(first.url, 'POST', '/breadcrumbs', { body: crumb({ title }) });
    await first.close();
    // The file as a crash before the last two rows' batch leaves it: rows committed, not indexed,
    // the mark below them (their index entries taken out with the values they were indexed with).
    const db = new Database(join(dir, 'store.db'));
    const rows = db
      .prepare('SELECT write_seq, title, description, context FROM breadcrumbs ORDER BY write_seq DESC LIMIT 2')
      .all() as Array<{ write_seq: number; title: string; description: string | null; context: string }>;
    const unindex = db.prepare(
      `INSERT INTO breadcrumbs_fts (breadcrumbs_fts, rowid, title, description, context) VALUES ('delete', ?, ?, ?, ?)`,
    );
    for (const row of rows) unindex.run(row.write_seq, row.title, row.description, row.context);
    const below = (rows[1] as { write_seq: number }).write_seq - 1;
    db.prepare('UPDATE meta SET value = ? WHERE key = ?').run(String(below), FTS_MARK_KEY);
    expect(db.prepare(`SELECT count(*) FROM breadcrumbs_fts WHERE breadcrumbs_fts MATCH 'oryx'`).pluck().get()).toBe(1);
    db.close();

    const second = await startStore({ dataDir: dir, searchIndexDelayMs: 50 });
    await until(() => state(dir).mark === state(dir).last, 'the rows left by the crash to be indexed');
    expect(await search(second.url, 'oryx')).toEqual(['oryx one', 'oryx three', 'oryx two']);
    await second.close();
    integrityCheck(dir);
  });
});

describe('store: the search index against hostile records', () => {
  it('control characters, other scripts, long titles and contexts near the body limit (64 KB), changed and deleted in any order: the index stays exact', async () => {
    const dir = tempDir();
    const store = await startStore({ dataDir: dir, searchIndexDelayMs: 20 });
    const titles = [
      'bell\u0007 tab\t newline\n cr\r escape\u001b[31m',
      'Ünïcödé 漢字 العربية \u202e reversed emoji 🦀🦀',
      `long ${'wolf '.repeat(2000)}`, // 10 KB
      'quote " star * caret ^ NEAR( AND OR NOT : col:',
    ];
    const ids: string[] = [];
    for (const title of titles) {
      const reply = await call(store.url, 'POST', '/breadcrumbs', {
        body: crumb({ title, context: { blob: `wolf ${'z'.repeat(40_000)}`, nested: { title } } }),
      });
      expect(reply.status).toBe(201);
      ids.push(reply.body.id as string);
    }
    // changed and deleted both before and after their batch
    await call(store.url, 'PATCH', `/breadcrumbs/${ids[0]}`, { body: { title: 'tamed bell' } });
    await call(store.url, 'DELETE', `/breadcrumbs/${ids[1]}`);
    await until(() => state(dir).mark === state(dir).last, 'the batch');
    await call(store.url, 'PATCH', `/breadcrumbs/${ids[2]}`, { body: { context: { short: 'wolf' } } });
    await call(store.url, 'DELETE', `/breadcrumbs/${ids[3]}`);
    // queries made of FTS5 syntax are words, never syntax errors
    for (const q of ['" * ^ NEAR( AND', 'col: OR NOT', '漢字', '🦀', '\u0007']) {
      const reply = await call(store.url, 'GET', `/breadcrumbs/search?q=${encodeURIComponent(q)}`);
      expect(reply.status).toBe(200);
    }
    expect((await search(store.url, 'wolf')).length).toBe(2);
    expect(await search(store.url, 'tamed')).toEqual(['tamed bell']);
    expect(await search(store.url, 'reversed')).toEqual([]);
    await store.close();
    const closed = state(dir);
    expect(closed.mark).toBe(closed.last);
    integrityCheck(dir);
  });
});

describe('store: a batch of the search index is bounded', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('indexes at most FTS_BATCH_BYTES of text per transaction (at least one row), then lets the event loop run', async () => {
    // the index's timers only: the writes' own turns (setImmediate) run as usual
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const db = openDatabase(':memory:');
    onCleanup(() => db.close());
    const index = createSearchIndex(db, createLogger({ level: 'silent' }), 50);
    const writes = createBreadcrumbWrites(db, createEventLog(db, 1000), index, undefined, { groupCommit: false });
    const actor = { ownerId: 'owner', agentId: null, scoped: false };
    // rows of ~100 KB: two fit a batch, a third does not; one row larger than a batch is a batch of its own
    const big = (n: number): Record<string, unknown> => ({ text: `heron ${'x'.repeat(n)}` });
    const sizes = [100_000, 100_000, 100_000, 100_000, 300_000, 10];
    for (const n of sizes)
      await writes.create(
        {
          title: 'heron',
          context: big(n),
          tags: [],
          schema_name: null,
          description: null,
          semantic_version: null,
          llm_hints: null,
          visibility: 'public',
          sensitivity: 'low',
          ttl: null,
          expiresMs: null,
        },
        actor,
      );
    const seqs = db.prepare('SELECT write_seq FROM breadcrumbs ORDER BY write_seq').pluck().all() as number[];
    const mark = (): number => Number(db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(FTS_MARK_KEY));
    const indexed = (): number =>
      db.prepare(`SELECT count(*) FROM breadcrumbs_fts WHERE breadcrumbs_fts MATCH 'heron'`).pluck().get() as number;
    expect(FTS_BATCH_BYTES).toBe(256 * 1024);
    expect(mark()).toBe(0);
    vi.advanceTimersByTime(50);
    expect([mark(), indexed()]).toEqual([seqs[1], 2]);
    vi.advanceTimersByTime(1);
    expect([mark(), indexed()]).toEqual([seqs[3], 4]);
    vi.advanceTimersByTime(1);
    expect([mark(), indexed()]).toEqual([seqs[4], 5]);
    vi.advanceTimersByTime(1);
    expect([mark(), indexed()]).toEqual([seqs[5], 6]);
    vi.advanceTimersByTime(1);
    vi.advanceTimersByTime(1000);
    expect([mark(), indexed()]).toEqual([seqs[5], 6]);
    index.close();
  });
});
