// The metrics registry costs an idle process no wake-ups of its own beyond the event-loop lag sampler's
// 10 per second (src/service/metrics.ts). Counted, not timed: the times a real Node process's main
// thread was scheduled (/proc/thread-self/schedstat) over one idle second, with the registry and without.

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const metricsModule = fileURLToPath(new URL('../../dist/service/metrics.js', import.meta.url));

function idleWakeups(withMetrics: boolean): number {
  const script = `
    ${
      withMetrics
        ? `const { createMetrics } = await import(${JSON.stringify(metricsModule)});
    createMetrics({
      queue: () => ({ queued: 0, running: 0, backlog: 0, capacity: 1 }),
      pool: () => ({ warm: 0, busy: 0 }),
      catalog: () => ({ active: 0, rejected: 0 }),
      isKnownTool: () => false,
    });`
        : ''
    }
    const { readFileSync } = await import('node:fs');
    const scheduled = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[2]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = scheduled();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    console.log(scheduled() - before);
    process.exit(0);
  `;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).trim());
}

describe.runIf(process.platform === 'linux')('metrics when idle', () => {
  it('wake an idle process about 10 times a second, not 100', () => {
    const bare = idleWakeups(false);
    const withMetrics = idleWakeups(true);
    // the 10 ms sampler of prom-client's default made this ~100 more; 100 ms makes it ~10
    expect(withMetrics - bare).toBeLessThan(40);
    expect(withMetrics - bare).toBeGreaterThanOrEqual(5);
  }, 20_000);
});
