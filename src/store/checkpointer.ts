// Moves SQLite WAL checkpoints off the event loop.
//
// With synchronous=NORMAL a commit only appends to the WAL, but every checkpoint copies pages back
// into the database and fsyncs — 10–20 ms on ordinary disks, which the store's own connection
// would otherwise pay inside some unlucky request every ~1000 WAL pages (bench/store.mjs showed
// this as the main cost of a create). A worker thread with its own connection runs PASSIVE
// checkpoints every `intervalMs`, which never block the writer. The writer keeps SQLite's
// auto-checkpoint at a high threshold as a safety net: if the worker falls behind (sustained
// writes never leave the WAL fully copied, so it cannot rewind), the writer checkpoints itself.
//
// The interval (CHECKPOINT_INTERVAL_MS, 1 s): the hot pages of a call (the tables' and indexes'
// last leaves, the search index, the event log) are rewritten by every commit, so a checkpoint
// copies each of them once however many commits touched it since the last one. At 200 ms the
// worker copied the same pages five times as often: 1 s cost 0.04–0.05 ms less CPU per call at
// ~700 calls/s (bench/journal/2026-11-rounds.md, "Warm-only runs"). The WAL then holds up to ~1 s of commits
// (tens of MB at that rate); WRITER_AUTOCHECKPOINT_PAGES bounds it if the worker falls behind, and
// journal_size_limit (db.ts) truncates the file after a checkpoint.
//
// States: RUNNING (timer in the worker) → STOPPING (`stop()` posted) → STOPPED (worker exited).

import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';

/** A running background checkpointer. */
export interface Checkpointer {
  /** Stops the worker and closes its connection; resolves once it exited. */
  stop(): Promise<void>;
}

/** How often the worker checkpoints (see the header for why 1 s and not less). */
export const CHECKPOINT_INTERVAL_MS = 1000;

/** WAL pages after which the writer checkpoints by itself (when the worker fell behind). */
export const WRITER_AUTOCHECKPOINT_PAGES = 8000;

// Runs inside the worker (CommonJS eval). Reports failures; never throws out of the timer.
const WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort.postMessage({ type: 'error', message: String(error && error.message || error) });
  }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {}
  db.close();
  parentPort.close();
});
`;

/** Starts checkpointing `file` (an existing WAL-mode database) every `intervalMs`. */
export function startCheckpointer(options: { file: string; intervalMs: number; logger: Logger }): Checkpointer {
  const { logger } = options;
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { module, file: options.file, intervalMs: options.intervalMs },
  });
  worker.unref();
  let reported = false;
  worker.on('message', (message: { type?: string; message?: string }) => {
    if (message.type === 'error' && !reported) {
      reported = true;
      logger.warn('background checkpoint failed; the writer will checkpoint itself', { error: message.message });
    }
  });
  worker.on('error', (error) =>
    logger.warn('checkpoint worker crashed; the writer will checkpoint itself', { error: coerceError(error) }),
  );
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= (async () => {
        worker.postMessage('stop');
        const timer = setTimeout(() => void worker.terminate(), 5000);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}
