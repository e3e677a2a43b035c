// Schema versions 1 and 2 → 3: the search index becomes an external-content index over the
// breadcrumbs table (no second copy of the text), built once from the stored rows.
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
    'opens a version-%s database, builds the external-content index from the stored rows and marks it version 3',
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
      expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get()).toBe('3');
      expect(
        check.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'breadcrumbs_fts_content'").pluck().get(),
      ).toBe(0);
      expect(check.pragma('auto_vacuum', { simple: true })).toBe(2);
      check.close();
    },
  );

  it('refuses a database of an unknown schema version, naming it', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    await first.close();
    const db = new Database(join(dir, 'store.db'));
    db.exec("UPDATE meta SET value = '9' WHERE key = 'schema_version'");
    db.close();
    await expect(startStore({ dataDir: dir })).rejects.toThrow(
      `database "${join(dir, 'store.db')}" has schema version 9; this store understands version 3`,
    );
  });
});
