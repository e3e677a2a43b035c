// Schema version 1 → 2: a database written before the search index existed gets it filled once.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { call, crumb, startStore, tempDir } from './helpers.js';

describe('store: schema migration', () => {
  it('opens a version-1 database, fills the FTS5 index from the stored rows and marks it version 2', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    await call(first.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'zebra crossing' }) });
    await first.close();
    // Make it look like version 1: no index rows, old version mark.
    const db = new Database(join(dir, 'store.db'));
    db.exec("DELETE FROM breadcrumbs_fts; UPDATE meta SET value = '1' WHERE key = 'schema_version'");
    db.close();
    const second = await startStore({ dataDir: dir });
    expect((await call(second.url, 'GET', '/breadcrumbs/search?q=zebra')).body.map((b: { title: string }) => b.title)).toEqual(['zebra crossing']);
    await second.close();
    const check = new Database(join(dir, 'store.db'), { readonly: true });
    expect(check.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get()).toBe('2');
    check.close();
  });

  it('refuses a database of an unknown schema version, naming it', async () => {
    const dir = tempDir();
    const first = await startStore({ dataDir: dir });
    await first.close();
    const db = new Database(join(dir, 'store.db'));
    db.exec("UPDATE meta SET value = '9' WHERE key = 'schema_version'");
    db.close();
    await expect(startStore({ dataDir: dir })).rejects.toThrow(`database "${join(dir, 'store.db')}" has schema version 9; this store understands version 2`);
  });
});
