// The search index, A/B in one run: the same breadcrumb rows indexed by an FTS5 table that keeps its
// own copy of the text (schema 2) and by the external-content index over the breadcrumbs table
// (schema 3, src/store/db.ts). Each variant inserts --n rows of a runner's typical size (a request or
// an answer context of ~600 bytes) in transactions of 16 rows; prints µs per row and file bytes per row.
// Usage: node bench/store-fts.mjs [--n=20000] [--rounds=2]
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const Database = createRequire(import.meta.url)('better-sqlite3');
const arg = (name, fallback) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const n = arg('n', 20000);
const rounds = arg('rounds', 2);

const VARIANTS = {
  copy: {
    fts: `CREATE VIRTUAL TABLE f USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 2')`,
    insert: (db) => {
      const stmt = db.prepare('INSERT INTO f (rowid, title, body) VALUES (?, ?, ?)');
      return (seq, title, description, context) => stmt.run(seq, title, `${description ?? ''} ${context}`);
    },
  },
  external: {
    fts: `CREATE VIRTUAL TABLE f USING fts5(title, description, context, content = 'b', content_rowid = 'seq', tokenize = 'unicode61 remove_diacritics 2')`,
    insert: (db) => {
      const stmt = db.prepare('INSERT INTO f (rowid, title, description, context) VALUES (?, ?, ?, ?)');
      return (seq, title, description, context) => stmt.run(seq, title, description, context);
    },
  },
};

function run(name) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-fts-'));
  const db = new Database(join(dir, 'x.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE b (seq INTEGER PRIMARY KEY, title TEXT NOT NULL, description TEXT, context TEXT NOT NULL)');
  db.exec(VARIANTS[name].fts);
  const row = db.prepare('INSERT INTO b (seq, title, description, context) VALUES (?, ?, ?, ?)');
  const index = VARIANTS[name].insert(db);
  const batch = db.transaction((from) => {
    for (let seq = from; seq < from + 16; seq++) {
      const context = JSON.stringify({
        tool: 'echo',
        requestId: `rid-${seq}`,
        input: {
          text: `hello world number ${seq} with some words to index`,
          pad: 'lorem ipsum dolor sit amet '.repeat(16),
        },
      });
      row.run(seq, `Request: echo ${seq}`, null, context);
      index(seq, `Request: echo ${seq}`, null, context);
    }
  });
  const t0 = performance.now();
  for (let seq = 1; seq <= n; seq += 16) batch(seq);
  const us = ((performance.now() - t0) * 1000) / n;
  db.pragma('wal_checkpoint(TRUNCATE)');
  const bytes = statSync(join(dir, 'x.db')).size;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return { variant: name, rows: n, us_per_row: +us.toFixed(1), bytes_per_row: Math.round(bytes / n) };
}

for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 === 0 ? ['copy', 'external'] : ['external', 'copy'])
    console.log(JSON.stringify({ round: r + 1, ...run(name) }));
}
