// The retention sweep's schedule (src/store/server-util.ts startRetention): a sweep still running when
// the store closes fails on the closed database; that is the close, not a fault to log as an error.
// (A fake Retention: the moment a paced sweep meets the close is hard to produce on purpose.)
import { describe, expect, it } from 'vitest';
import type { Retention, SweepResult } from '../../src/store/retention.js';
import { startRetention } from '../../src/store/server-util.js';
import { captureLogger } from './helpers.js';

function controlledRetention(): { retention: Retention; sweeps: number; fail(error: Error): void } {
  let failCurrent: (error: Error) => void = () => {};
  const state = {
    sweeps: 0,
    retention: {
      sweep: () => {
        state.sweeps++;
        return new Promise<SweepResult>((_resolve, reject) => (failCurrent = reject));
      },
      sizes: () => ({ dbBytes: 0, freeBytes: 0, walBytes: 0 }),
      measure: async () => ({ dbBytes: 0, freeBytes: 0, walBytes: 0 }),
      removedTotal: () => 0,
    } as unknown as Retention,
    fail: (error: Error) => failCurrent(error),
  };
  return state;
}

describe('retention schedule', () => {
  it('a sweep failing after the stop (the store closed its database) is logged at debug, one failing before it as an error', async () => {
    const { logger, lines, waitFor } = captureLogger();

    const running = controlledRetention();
    const stopRunning = startRetention(running.retention, 60_000, logger);
    running.fail(new Error('disk I/O error'));
    expect((await waitFor('retention sweep failed')).level).toBe('error');
    stopRunning();

    const closing = controlledRetention();
    const stop = startRetention(closing.retention, 60_000, logger);
    expect(closing.sweeps).toBe(1);
    stop();
    closing.fail(new Error('The database connection is not open'));
    const ended = await waitFor('retention sweep ended by the store closing');
    expect(ended.level).toBe('debug');
    expect(lines.filter((line) => line.msg === 'retention sweep failed')).toHaveLength(1);
  });
});
