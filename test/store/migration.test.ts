// Schema versions 1 and 2 → 4: the search index becomes an external-content index over the
// breadcrumbs table (no second copy of the text), built once from the stored rows. 3 → 4: the index
// is written in batches after the writes (fts-index.ts); a version-3 file was indexed row by row, so
// every row in it is marked indexed.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { call, crumb, startStore, tempDir } from './helpers.js';

describe('store: schema migration', () => {
  it.each([
    ['1', 'DROP TABLE breadcrumbs_fts; CREATE VIRTUAL TABLE breadcrumbs_fts USING fts5(title, body)'],
    [
      '2',
      'DROP TABLE breadcrumbs_fts; CREATE VIRTUAL TABLE breadcrumbs_fts USING fts5(title, body); INSERT INTO breadcrumbs_fts (rowid, title, body) SELECT write_seq, title, context FROM breadcrumbs',
    ],
  ])(
    'opens a version-%s database, builds the external-content index from the stored rows and marks it version 4',
    async (version, sql) => {
      const dir = tempDir();
      const first = await startStore({ dataDir: dir });
      await call(first.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'zebra crossing' }) });
      await first.close();
      // Make it look like the old version: its index (none in version 1's data), its version mark, no auto-vacuum.
      const db = new Database(join(dir, 'store.db'));
      db.exec(`${sql}; UPDATE meta SET value = '${version}' WHERE key = 'schema_version'`);
      db.pragma('auto_vacuum = NONE');
      db.exec('VACUUM');
      expect(db.pragma('auto_vacuum', { simple: true })).toBe(0);
      db.close();
      const second = await startStore({ dataDir: dir });
      expect(
        (await call(second.url, 'GET', '/breadcrumbs/search?q=zebra')).body.map((b: { title: string }) => b.title),
      ).toEqual(['zebra crossing']);
      await second.close();
      const check = new Database(join(dir, 'store.db'), { readonly: true });
      expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get()).toBe('4');
      expect(
        check.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'breadcrumbs_fts_content'").pluck().get(),
      ).toBe(0);
      expect(check.pragma('auto_vacuum', { simple: true })).toBe(2);
      check.close();
    },
  );

  it('opens a version-3 database (every row indexed in its own write): marks every row indexed and keeps the index exact', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    const id = (await call(first.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'gazelle herd' }) })).body.id;
    await call(first.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'gazelle calf' }) });
    await first.close();
    // version 3 had no mark: it indexed inline, so its file is fully indexed
    const db = new Database(join(dir, 'store.db'));
    db.exec(
      "DELETE FROM meta WHERE key = 'fts_indexed_through'; UPDATE meta SET value = '3' WHERE key = 'schema_version'",
    );
    const last = db.prepare('SELECT max(write_seq) FROM breadcrumbs').pluck().get();
    db.close();
    const second = await startStore({ dataDir: dir, searchIndexDelayMs: 60_000 });
    const opened = new Database(join(dir, 'store.db'), { readonly: true });
    expect(opened.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get()).toBe('4');
    expect(opened.prepare("SELECT value FROM meta WHERE key = 'fts_indexed_through'").pluck().get()).toBe(String(last));
    opened.close();
    // an indexed row of the old file changes: its old entry leaves the index
    await call(second.url, 'PATCH', `/breadcrumbs/${id}`, { body: { title: 'antelope herd' } });
    const found = (await call(second.url, 'GET', '/breadcrumbs/search?q=gazelle')).body.map(
      (b: { title: string }) => b.title,
    );
    expect(found).toEqual(['gazelle calf']);
    await second.close();
    const check = new Database(join(dir, 'store.db'));
    check.prepare(`INSERT INTO breadcrumbs_fts (breadcrumbs_fts, rank) VALUES ('integrity-check', 1)`).run();
    check.close();
  });

  it('refuses a database of an unknown schema version, naming it', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    await first.close();
    const db = new Database(join(dir, 'store.db'));
    db.exec("UPDATE meta SET value = '9' WHERE key = 'schema_version'");
    db.close();
    await expect(startStore({ dataDir: dir })).rejects.toThrow(
      `database "${join(dir, 'store.db')}" has schema version 9; this store understands version 4`,
    );
  });
});
