// The ids of create requests the create flow has queued or answered: a BoundedSet (src/bounded.ts),
// so at `max` entries adding a new id evicts the oldest and adding one again makes it the newest. The
// store stays the real record (an id evicted and delivered again is looked up there before anything
// is redone).

import { BoundedSet } from '../bounded.js';

/** The bounded set of recently seen ids. */
export type RecentIds = BoundedSet<string>;

/** Creates a RecentIds holding at most `max` ids (`max` >= 1). */
export function createRecentIds(max: number): RecentIds {
  return new BoundedSet<string>(max, 'recent-id set');
}
