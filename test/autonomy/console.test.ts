// The console's view of autonomy (issue 21): GET /api/extensions/autonomy lists the continuous
// tools (state, lease holder, runs), the subscriptions and the schedules (last and next tick, lag);
// /metrics carries the same figures.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import {
  cleanupConsole,
  ensureConsoleBuilt,
  launchBrowser,
  screenshot,
  startConsoleService,
  toolContext,
  WS,
} from '../console/helpers.js';

afterAll(cleanupConsole);

/** A continuous operator tool that runs until stopped. */
const HEARTBEAT = {
  name: 'heartbeat',
  description: 'Runs until stopped.',
  version: '1.0.0',
  code: {
    language: 'typescript',
    source: 'export async function execute() { await new Promise(() => setInterval(() => {}, 1000)); }',
  },
  input_schema: { type: 'object', properties: {} },
  output_schema: { type: 'object' },
  permissions: { net: false },
  limits: { timeout_ms: 5000, memory_mb: 64 },
  bootstrap: { enabled: true, mode: 'continuous' },
  examples: [{ description: 'Runs until stopped', input: {}, output: {}, match: 'schema' }],
};

describe('console: autonomy', () => {
  it('shows a running continuous tool, a subscription and a schedule with its next tick', async () => {
    const bootDir = mkdtempSync(join(tmpdir(), 'tr-boot-'));
    mkdirSync(join(bootDir, 'tools'));
    writeFileSync(join(bootDir, 'tools', 'heartbeat.json'), JSON.stringify(HEARTBEAT));
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
        const schedule = status.scheduler?.schedules?.[0];
        if (status.continuous?.[0]?.state === 'RUNNING' && schedule?.last_tick_at && sub?.triggered > 0) break;
        if (Date.now() > deadline)
          throw new Error(
            `autonomy status never showed the running tool, a tick and a triggered subscription: ${JSON.stringify(status)}`,
          );
        await new Promise((r) => setTimeout(r, 300));
      }
      expect(status.continuous[0]).toMatchObject({ tool: 'heartbeat', state: 'RUNNING', holder: service.replica });
      expect(status.continuous[0].runs).toBeGreaterThanOrEqual(1);
      expect(status.scheduler.holder).toBe(service.replica);
      const schedule = status.scheduler.schedules[0];
      expect(schedule).toMatchObject({ title: 'every 2 s', labels: ['interval:2s'], enabled: true, state: 'active' });
      expect(Date.parse(schedule.next_tick_at) % 2000).toBe(0);
      expect(schedule.published).toBeGreaterThanOrEqual(1);
      expect(typeof schedule.lag_ms).toBe('number');
      expect(status.subscriptions.find((s: any) => s.tool === 'on-tick')).toMatchObject({
        schema_name: 'schedule.tick.v1',
        tag: 'interval:2s',
      });
      // The same figures on /metrics.
      const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
      expect(metrics).toContain('tools_runner_continuous_running{tool="heartbeat"} 1');
      expect(metrics).toContain('tools_runner_schedules{state="active"} 1');
      expect(metrics).toMatch(/tools_runner_schedule_ticks_total\{outcome="on_time"\} [1-9]/);
      expect(metrics).toMatch(/tools_runner_schedule_lag_seconds_count [1-9]/);
      expect(metrics).toMatch(
        /tools_runner_subscription_triggers\{subscription="on-tick@1\.0\.0#0",outcome="written"\} [1-9]/,
      );
      const missing = await fetch(`${adminUrl}/api/extensions/nope`);
      expect(missing.status).toBe(404);
      // The page in Chromium: the schedule's row with its state and counts, the tool's row.
      await ensureConsoleBuilt();
      const browser = await launchBrowser();
      const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`${adminUrl}/#/autonomy`);
      const row = page.locator(`tr[data-schedule="${schedule.id}"]`);
      await row.waitFor();
      expect(await row.getAttribute('data-state')).toBe('active');
      expect(await row.textContent()).toContain('every 2 s');
      await page.locator('tr[data-tool="heartbeat"][data-state="RUNNING"]').waitFor();
      await screenshot(page, 'autonomy');
      expect(errors).toEqual([]);
    } finally {
      rmSync(bootDir, { recursive: true, force: true });
    }
  }, 120_000);
});
