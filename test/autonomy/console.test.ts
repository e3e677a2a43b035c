// The console's view of autonomy (issue 21): GET /api/extensions/autonomy lists the continuous
// tools (state, lease holder, runs), the subscriptions and the schedules (last and next tick); /metrics
// carries the same figures.

import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { cleanupConsole, startConsoleService, toolContext, WS } from '../console/helpers.js';

afterAll(cleanupConsole);

describe('console: autonomy', () => {
  it('shows the running scheduler, a subscription and a schedule with its next tick', async () => {
    const bootDir = mkdtempSync(join(tmpdir(), 'tr-boot-'));
    mkdirSync(join(bootDir, 'tools'));
    copyFileSync(
      fileURLToPath(new URL('../../bootstrap-breadcrumbs/tools-self-contained/scheduler.json', import.meta.url)),
      join(bootDir, 'tools', 'scheduler.json'),
    );
    const { adminUrl, client, service } = await startConsoleService({
      bootstrap: true,
      bootstrapDir: bootDir,
      continuousLeaseMs: 3000,
    });
    try {
      await client.createBreadcrumb({
        title: 'every 2 s',
        schema_name: 'schedule.definition.v1',
        tags: ['schedule:definition'],
        context: { interval: { type: 'seconds', every_seconds: 2 }, labels: ['interval:2s'] },
      });
      await client.createBreadcrumb({
        title: 'ticker',
        schema_name: SCHEMA.ToolCode,
        tags: [TAG.Tool, TAG.tool('on-tick'), WS],
        context: toolContext(
          'on-tick',
          'export async function execute(input, context) { return { tick: context.request.trigger_event?.breadcrumb_id }; }',
          {
            permissions: { net: false, breadcrumbs: { read: ['schedule.tick.v1'] } },
            subscriptions: [{ schema_name: 'schedule.tick.v1', tag: 'interval:2s' }],
          },
        ),
      });
      let status: any;
      const deadline = Date.now() + 90_000;
      for (;;) {
        const res = await fetch(`${adminUrl}/api/extensions/autonomy`);
        status = await res.json();
        const sub = status.subscriptions?.find((s: any) => s.tool === 'on-tick');
        if (status.continuous?.[0]?.state === 'RUNNING' && status.schedules?.[0]?.last_tick_at && sub?.triggered > 0)
          break;
        if (Date.now() > deadline)
          throw new Error(
            `autonomy status never showed the running scheduler, a tick and a triggered subscription: ${JSON.stringify(status)}`,
          );
        await new Promise((r) => setTimeout(r, 300));
      }
      expect(status.continuous[0]).toMatchObject({ tool: 'scheduler', state: 'RUNNING', holder: service.replica });
      expect(status.continuous[0].runs).toBeGreaterThanOrEqual(1);
      expect(status.schedules[0]).toMatchObject({ title: 'every 2 s', labels: ['interval:2s'], enabled: true });
      expect(Date.parse(status.schedules[0].next_tick_at) % 2000).toBe(0);
      expect(status.subscriptions.find((s: any) => s.tool === 'on-tick')).toMatchObject({
        schema_name: 'schedule.tick.v1',
        tag: 'interval:2s',
      });
      // The same figures on /metrics.
      const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
      expect(metrics).toContain('tools_runner_continuous_running{tool="scheduler"} 1');
      expect(metrics).toMatch(
        /tools_runner_subscription_triggers\{subscription="on-tick@1\.0\.0#0",outcome="written"\} [1-9]/,
      );
      const missing = await fetch(`${adminUrl}/api/extensions/nope`);
      expect(missing.status).toBe(404);
    } finally {
      rmSync(bootDir, { recursive: true, force: true });
    }
  }, 120_000);
});
