// The stopwatch of one request (src/request/timings.ts): its objects are literals written out per
// stage (for one hidden class per call), so these pin that they still hold every stage, in STAGES'
// order, and that add/lap/mark/rounding behave as documented.

import { describe, expect, it } from 'vitest';
import { createStopwatch, STAGES } from '../../src/request/timings.js';

/** A clock that returns the values given, one per call. */
const clockOf = (...values: number[]) => {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)]!;
};

describe('createStopwatch', () => {
  it('all() holds every stage in STAGES order, forAnswer() every stage but respond', () => {
    const watch = createStopwatch(undefined, clockOf(0));
    expect(Object.keys(watch.all())).toEqual([...STAGES]);
    expect(Object.keys(watch.forAnswer())).toEqual(STAGES.filter((s) => s !== 'respond'));
    expect(Object.values(watch.all()).every((v) => v === 0)).toBe(true);
  });

  it('counts queued from learnedAt, laps and marks, and rounds to 3 decimals', () => {
    // created at 10 (learned at 4), lap route at 12.5, mark at 20, lap sandbox_run at 20.12345, lap respond at 21
    const watch = createStopwatch(4, clockOf(10, 12.5, 20, 20.12345, 21));
    watch.lap('route');
    watch.mark();
    watch.lap('sandbox_run');
    watch.lap('respond');
    watch.add('secrets', 0.0004);
    watch.add('secrets', 0.0004);
    expect(watch.get('sandbox_run')).toBeCloseTo(0.12345, 9);
    expect(watch.all()).toEqual({
      queued: 6,
      claim: 0,
      route: 2.5,
      validate: 0,
      policy: 0,
      secrets: 0.001,
      sandbox_wait: 0,
      sandbox_run: 0.123,
      respond: 0.877,
    });
    const { respond: _respond, ...rest } = watch.all();
    expect(watch.forAnswer()).toEqual(rest);
  });

  it('ignores negative and non-finite additions', () => {
    const watch = createStopwatch(undefined, clockOf(0));
    watch.add('policy', -1);
    watch.add('policy', Number.NaN);
    watch.add('policy', Number.POSITIVE_INFINITY);
    watch.add('policy', 1.5);
    expect(watch.get('policy')).toBe(1.5);
  });
});
