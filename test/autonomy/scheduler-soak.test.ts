// The scheduler for three minutes (issue 38): bench/scheduler-soak.mjs at --minutes=3 — two replicas at
// default settings, 40 agent schedules joining, a 500-breadcrumb subscription burst, the lease holder
// SIGKILLed twice and both replicas down for 12 s. Every due tick is published exactly once (the
// catch-up covers the takeovers and the downtime), the burst is answered, and a continuous tool making
// 5 context.api calls a second is never restarted by its replica. Lags are printed, not
// asserted (bench/ measures them).

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('scheduler soak (3 minutes)', () => {
  it('publishes every due tick exactly once through kills and a restart', async () => {
    const bench = fileURLToPath(new URL('../../bench/scheduler-soak.mjs', import.meta.url));
    const { stdout } = await run(process.execPath, [bench, '--minutes=3'], { maxBuffer: 1 << 20 });
    const result = JSON.parse(stdout);
    console.log(JSON.stringify(result));
    for (const group of ['operator_1s', 'operator_5s', 'agents_1s']) {
      const g = result[group];
      expect(g.due, group).toBeGreaterThan(0);
      expect(g.duplicates, group).toBe(0);
      expect(g.missed_outside_downtime, group).toBe(0);
      // A due time missed in the downtime is one the missed record counts.
      expect(g.missed, group).toBe(g.reported_missed);
      expect(g.published + g.missed, group).toBe(g.due);
    }
    expect(result.operator_1s.missed).toBe(0);
    expect(result.operator_5s.missed).toBe(0);
    expect(result.burst_answered).toBe(500);
    // The continuous tool was never restarted by a replica that kept its lease (no budget ended it).
    expect(result.continuous.pulses).toBeGreaterThan(0);
    expect(result.continuous.restarts_within_a_replica).toBe(0);
    // Each 5-s tick ran its subscriber (the last one may still be running when the bench counts).
    expect(result.on_5s_tick_runs).toBeGreaterThanOrEqual(result.operator_5s.published - 1);
  }, 420_000);
});
