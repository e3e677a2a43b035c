// The one bounded map and set of the code base (memos, caches, "seen" sets): insertion order is
// recency order; `set`/`add` of a key moves it to the newest end, and beyond `max` entries the
// oldest leaves (least recently set first; `touch` counts a read as a use).

import { ErrorCode, RunnerError } from './errors.js';

function checkedMax(max: number, what: string): number {
  if (!Number.isInteger(max) || max < 1) {
    throw new RunnerError(ErrorCode.ConfigInvalid, `the bound of a ${what} must be an integer >= 1, got ${String(max)}`);
  }
  return max;
}

/** A Map of at most `max` entries (see the module comment); `onEvict` hears every entry that leaves for room. */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly max: number;
  readonly #onEvict: ((key: K, value: V) => void) | undefined;

  constructor(max: number, onEvict?: (key: K, value: V) => void) {
    super();
    this.max = checkedMax(max, 'bounded map');
    this.#onEvict = onEvict;
  }

  /** Sets `key` as the newest entry, then evicts the oldest entries beyond `max`. */
  override set(key: K, value: V): this {
    super.delete(key);
    super.set(key, value);
    while (this.size > this.max) {
      const oldest = this.entries().next();
      if (oldest.done) break;
      super.delete(oldest.value[0]);
      this.#onEvict?.(oldest.value[0], oldest.value[1]);
    }
    return this;
  }

  /** The value of `key`, which becomes the newest entry (a least-recently-used cache's read). */
  touch(key: K): V | undefined {
    if (!super.has(key)) return undefined;
    const value = super.get(key) as V;
    this.set(key, value);
    return value;
  }
}

/** A Set of at most `max` values (see the module comment). */
export class BoundedSet<T> extends Set<T> {
  readonly max: number;

  constructor(max: number) {
    super();
    this.max = checkedMax(max, 'bounded set');
  }

  /** Adds `value` as the newest, then evicts the oldest values beyond `max`. */
  override add(value: T): this {
    super.delete(value);
    super.add(value);
    while (this.size > this.max) {
      const oldest = this.values().next();
      if (oldest.done) break;
      super.delete(oldest.value);
    }
    return this;
  }
}
