// A bounded set of recently seen ids: insertion order, and at `max` entries adding a new id evicts
// the oldest. Adding an id already present moves it to the newest end. The create flow keeps the
// ids of create requests it has queued or answered here; the store stays the real record (an id
// evicted and delivered again is looked up there before anything is redone).

import { ErrorCode, RunnerError } from '../errors.js';

/** The bounded set (see the module comment). */
export interface RecentIds {
  has(id: string): boolean;
  /** Adds `id` (or refreshes it); evicts the oldest id when the set is full. */
  add(id: string): void;
  delete(id: string): void;
  readonly size: number;
}

/** Creates a RecentIds holding at most `max` ids (`max` >= 1). */
export function createRecentIds(max: number): RecentIds {
  if (!Number.isInteger(max) || max < 1) throw new RunnerError(ErrorCode.ConfigInvalid, `the bound of a recent-id set must be an integer >= 1, got ${String(max)}`);
  const ids = new Set<string>();
  return {
    has: (id) => ids.has(id),
    add(id) {
      ids.delete(id);
      if (ids.size >= max) {
        const oldest = ids.values().next();
        if (!oldest.done) ids.delete(oldest.value);
      }
      ids.add(id);
    },
    delete: (id) => void ids.delete(id),
    get size() {
      return ids.size;
    },
  };
}
