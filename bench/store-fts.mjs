// The search index, A/B in one run, on the same breadcrumb rows (a request or an answer context of
// ~600 bytes):
//   copy      an FTS5 table that keeps its own copy of the text (schema 2)
//   external  the external-content index over the breadcrumbs table, each row indexed in its own
//             write's transaction (schema 3)
//   batched   the same index written after the writes, every row above the mark in one transaction
//             (schema 4, src/store/fts-index.ts), once per 250 ms worth of rows at the call rate
//             each transaction size stands for
//   none      no index (the floor)
// Transactions of 1 row stand for a low call rate (70 calls/s, 2 rows a call: 35 rows per 250 ms
// batch), of 16 rows for a busy one (a group commit at ~800 calls/s: 400 rows per batch).
// Prints CPU µs per row (writes and indexing together) and file bytes per row.
// Usage: node bench/store-fts.mjs [--n=20000] [--rounds=2] [--tx-rows=1,16] [--variants=external,batched,none]
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
const list = (name, fallback) =>
  (process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback).split(',');
const txSizes = list('tx-rows', '1,16').map(Number);
const variants = list('variants', 'copy,external,batched,none');
/** Rows written per 250 ms batch at the call rate a transaction size stands for (see the header). */
const batchRows = (txRows) => (txRows === 1 ? 35 : 400);

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
  batched: {
    fts: `CREATE VIRTUAL TABLE f USING fts5(title, description, context, content = 'b', content_rowid = 'seq', tokenize = 'unicode61 remove_diacritics 2')`,
    insert: () => () => {},
    // fts-index.ts's batch: the rows above the mark, and the mark moved past them
    batch: (db) => {
      db.exec('CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID');
      db.prepare(`INSERT INTO meta VALUES ('mark', '0')`).run();
      const last = db.prepare('SELECT max(seq) FROM (SELECT seq FROM b WHERE seq > ? ORDER BY seq LIMIT 512)').pluck();
      const range = db.prepare(
        'INSERT INTO f (rowid, title, description, context) SELECT seq, title, description, context FROM b WHERE seq > ? AND seq <= ?',
      );
      const mark = db.prepare(`UPDATE meta SET value = ? WHERE key = 'mark'`);
      let through = 0;
      const tx = db.transaction(() => {
        const to = last.get(through);
        if (to === null) return false;
        range.run(through, to);
        mark.run(String(to));
        through = to;
        return true;
      });
      return () => {
        while (tx());
      };
    },
  },
  none: {
    fts: '',
    insert: () => () => {},
  },
};

function run(name, txRows) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-fts-'));
  const db = new Database(join(dir, 'x.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE b (seq INTEGER PRIMARY KEY, title TEXT NOT NULL, description TEXT, context TEXT NOT NULL)');
  if (VARIANTS[name].fts) db.exec(VARIANTS[name].fts);
  const row = db.prepare('INSERT INTO b (seq, title, description, context) VALUES (?, ?, ?, ?)');
  const index = VARIANTS[name].insert(db);
  const catchUp = VARIANTS[name].batch?.(db);
  const write = db.transaction((from) => {
    for (let seq = from; seq < from + txRows; seq++) {
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
  const every = batchRows(txRows);
  const t0 = process.cpuUsage();
  for (let seq = 1; seq <= n; seq += txRows) {
    write(seq);
    if (catchUp && (seq + txRows - 1) % every < txRows) catchUp();
  }
  catchUp?.();
  const cpu = process.cpuUsage(t0);
  const us = (cpu.user + cpu.system) / n;
  db.pragma('wal_checkpoint(TRUNCATE)');
  const bytes = statSync(join(dir, 'x.db')).size;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    variant: name,
    tx_rows: txRows,
    rows: n,
    cpu_us_per_row: +us.toFixed(1),
    bytes_per_row: Math.round(bytes / n),
  };
}

for (let r = 0; r < rounds; r++) {
  for (const txRows of txSizes)
    for (const name of r % 2 === 0 ? variants : [...variants].reverse())
      console.log(JSON.stringify({ round: r + 1, ...run(name, txRows) }));
}
