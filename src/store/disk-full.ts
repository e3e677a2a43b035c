// A full disk: a write the database refuses for lack of space (SQLite's SQLITE_FULL, ENOSPC,
// PostgreSQL's 53100 disk_full) answers 507 `store.full` instead of 500.
//
// States: OK → FULL when a write is refused for lack of space (/health answers 503 "degraded" with
// the reason, the `tools_runner_store_full` gauge is 1) → OK again when the next write commits:
// nothing needs restarting once space is freed.

import type { Logger } from '../logger.js';
import { HttpError } from './http-util.js';

/** True for the errors of a database that has no space left to write. */
export function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_FULL' || code === 'ENOSPC' || code === '53100';
}

/** The store's fullness state (see the module comment). */
export interface DiskFullness {
  /** Marks the store full and returns the 507 to answer for `error`. */
  refuse(error: unknown): HttpError;
  /** A write committed: the store is not full (any more). */
  wrote(): void;
  /** Why /health is degraded, while full. */
  reason(): string | undefined;
  /** Writes refused for lack of space since the store started. */
  refusedTotal(): number;
}

/** A fresh state: OK. */
export function createDiskFullness(logger: Logger): DiskFullness {
  let since: string | undefined;
  let refused = 0;
  return {
    refuse(error) {
      refused++;
      const detail = (error as { message?: unknown } | null)?.message;
      if (since === undefined) {
        since = new Date().toISOString();
        logger.error('store disk is full: writes are refused (507) until space is freed', {
          error: typeof detail === 'string' ? detail : String(error),
        });
      }
      return new HttpError(
        507,
        'store.full',
        `the store's disk is full (${typeof detail === 'string' ? detail : String(error)}): the write was not stored; free space and retry`,
      );
    },
    wrote() {
      if (since === undefined) return;
      logger.info('store disk has space again: writes are accepted', { fullSince: since });
      since = undefined;
    },
    reason: () =>
      since === undefined ? undefined : `store.full: a write was refused for lack of disk space at ${since}`,
    refusedTotal: () => refused,
  };
}
