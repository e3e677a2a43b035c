// The live feed's view of a call's progress (src/request/progress.ts, the live feed): the first report at
// once, later ones at most one per interval (a waiting report replaced by a newer one, the last one
// sent at close), values cut to LIVE_MAX_CHARS of JSON, a throwing listener ignored.

import { describe, expect, it } from 'vitest';
import { createLiveProgress, liveValue, LIVE_MAX_CHARS, type LiveProgressReport } from '../../src/request/progress.js';

describe('live progress', () => {
  it('sends the first report at once, keeps only the newest while waiting, and sends it at close', () => {
    const sent: LiveProgressReport[] = [];
    // an interval no test run reaches: everything after the first report waits for close()
    const live = createLiveProgress({ rid: 'r1', tool: 't', emit: (r) => sent.push(r), intervalMs: 3_600_000 });
    live.push({ text: 'a' });
    expect(sent).toEqual([{ rid: 'r1', tool: 't', seq: 1, value: { text: 'a' } }]);
    for (let i = 0; i < 1000; i++) live.push({ n: i });
    expect(sent).toHaveLength(1);
    live.close();
    expect(sent).toEqual([
      { rid: 'r1', tool: 't', seq: 1, value: { text: 'a' } },
      { rid: 'r1', tool: 't', seq: 1001, value: { n: 999 } },
    ]);
    live.push('after');
    live.close();
    expect(sent).toHaveLength(2);
  });

  it('sends a waiting report when the interval has passed', async () => {
    const sent: number[] = [];
    const live = createLiveProgress({ rid: 'r', tool: 't', emit: (r) => sent.push(r.seq), intervalMs: 50 });
    live.push(1);
    live.push(2);
    live.push(3);
    // (on a loaded machine 2 may already have gone out on its own; 3 always comes, without close())
    await expect.poll(() => sent.at(-1), { timeout: 20_000 }).toBe(3);
    expect(sent[0]).toBe(1);
    const count = sent.length;
    live.close();
    expect(sent).toHaveLength(count);
  });

  it('cuts values longer than LIVE_MAX_CHARS of JSON and survives a throwing listener', () => {
    expect(liveValue({ text: 'short' })).toEqual({ text: 'short' });
    expect(liveValue('x'.repeat(10))).toBe('x'.repeat(10));
    const long = 'y'.repeat(4000);
    const text = liveValue({ text: long }) as { text: string };
    expect(text.text).toMatch(/^y+… \(4000 chars\)$/);
    expect(JSON.stringify(text).length).toBeLessThanOrEqual(LIVE_MAX_CHARS);
    const other = liveValue({ data: long }) as { truncated: boolean; chars: number; preview: string };
    expect(other).toEqual({
      truncated: true,
      chars: 4011,
      preview: JSON.stringify({ data: long }).slice(0, LIVE_MAX_CHARS / 2),
    });
    expect(JSON.stringify(other).length).toBeLessThanOrEqual(LIVE_MAX_CHARS + 64);
    const live = createLiveProgress({
      rid: 'r',
      tool: 't',
      emit: () => {
        throw new Error('listener broke');
      },
    });
    expect(() => live.push(1)).not.toThrow();
    live.close();
  });
});
