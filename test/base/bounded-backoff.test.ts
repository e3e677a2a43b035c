// The low shared helpers: the one bounded map/set (src/bounded.ts) and the one backoff (src/backoff.ts).

import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../src/backoff.js';
import { BoundedMap, BoundedSet } from '../../src/bounded.js';

describe('BoundedSet', () => {
  it('keeps the newest `max` values; adding one again makes it the newest', () => {
    const seen = new BoundedSet<string>(2);
    seen.add('a').add('b').add('a').add('c');
    expect([...seen]).toEqual(['a', 'c']);
    expect(seen.has('b')).toBe(false);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses the bound %s, naming it', (max) => {
    expect(() => new BoundedSet(max)).toThrow(`the bound of a bounded set must be an integer >= 1, got ${String(max)}`);
  });
});

describe('BoundedMap', () => {
  it('evicts the least recently set or touched entry and reports it', () => {
    const evicted: string[] = [];
    const map = new BoundedMap<string, number>(2, (key, value) => evicted.push(`${key}=${value}`));
    map.set('a', 1).set('b', 2);
    expect(map.touch('a')).toBe(1);
    map.set('c', 3);
    expect([...map.keys()]).toEqual(['a', 'c']);
    expect(evicted).toEqual(['b=2']);
    expect(map.touch('missing')).toBeUndefined();
    expect(() => new BoundedMap(0)).toThrow('the bound of a bounded map must be an integer >= 1, got 0');
  });
});

describe('backoffMs', () => {
  it('doubles from initialMs and stops at maxMs', () => {
    const plan = { initialMs: 100, maxMs: 1_000 };
    expect([0, 1, 2, 3, 4, 60].map((n) => backoffMs(plan, n))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(backoffMs(plan, -3)).toBe(100);
  });

  it('with jitter waits 50-100 % of the delay', () => {
    const plan = { initialMs: 100, maxMs: 1_000, jitter: true };
    expect(backoffMs(plan, 1, () => 0)).toBe(100);
    expect(backoffMs(plan, 1, () => 0.999999)).toBe(200);
  });
});
