// What bounds autonomy (issues 38, 39): a continuous run's budgets are a rate, not a total; once and
// continuous tools cannot be requested and are not offered to callers; no writer pre-empts or forges
// a schedule tick; each writer has a cap on schedules; due times from croner.

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { dueTimesOf } from '../../src/autonomy/due.js';
import { answer, request, tempDir } from '../e2e/harness.js';
import { cleanupConsole, startConsoleService, toolContext, WS } from '../console/helpers.js';

afterAll(cleanupConsole);

const bootTool = (name: string, source: string, extra: Record<string, unknown>) => ({
  name,
  description: `test tool ${name}`,
  version: '1.0.0',
  code: { language: 'typescript', source },
  input_schema: { type: 'object', properties: {} },
  output_schema: { type: 'object' },
  limits: { timeout_ms: 5000, memory_mb: 64 },
  examples: [{ description: 'runs on its own', input: {}, output: {}, match: 'schema' }],
  ...extra,
});

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  ms = 90_000,
  explain?: () => Promise<unknown>,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}: ${explain ? JSON.stringify(await explain()) : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('autonomy guards', () => {
  it('a continuous run keeps going past one call’s budgets; a burst is refused, counted, and the next window serves', async () => {
    const bootDir = tempDir('tr-boot-');
    mkdirSync(join(bootDir, 'tools'));
    const write = (schema: string, i: string) =>
      `context.api.createBreadcrumb({ title: 'b', schema_name: '${schema}', tags: ['e2e'], context: { i: ${i} } })`;
    // 220 calls over ~35 s: past 100 calls and 200 frames of one execution, ~65 per 10-s window.
    writeFileSync(
      join(bootDir, 'tools', 'steady.json'),
      JSON.stringify(
        bootTool(
          'steady',
          `export async function execute(input, context) {
            for (let i = 0; i < 220; i++) { await ${write('e2e.beat.v1', 'i')}; await new Promise((r) => setTimeout(r, 150)); }
            await new Promise(() => setInterval(() => {}, 1000));
          }`,
          {
            permissions: { net: false, breadcrumbs: { write: ['e2e.beat.v1'] } },
            bootstrap: { enabled: true, mode: 'continuous' },
          },
        ),
      ),
    );
    // 150 calls at once: 100 pass, 50 are refused; 11 s later a new window serves it again.
    writeFileSync(
      join(bootDir, 'tools', 'bursty.json'),
      JSON.stringify(
        bootTool(
          'bursty',
          `export async function execute(input, context) {
            const all = await Promise.allSettled(Array.from({ length: 150 }, (_, i) => ${write('e2e.burst.v1', 'i')}));
            const refused = all.filter((r) => r.status === 'rejected').length;
            await new Promise((r) => setTimeout(r, 11_000));
            await context.api.createBreadcrumb({ title: 'after', schema_name: 'e2e.after.v1', tags: ['e2e'], context: { refused } });
            await new Promise(() => setInterval(() => {}, 1000));
          }`,
          {
            permissions: { net: false, breadcrumbs: { write: ['e2e.burst.v1', 'e2e.after.v1'] } },
            bootstrap: { enabled: true, mode: 'continuous' },
          },
        ),
      ),
    );
    const { adminUrl, client } = await startConsoleService({
      bootstrap: true,
      bootstrapDir: bootDir,
      continuousLeaseMs: 3000,
    });
    const after = await until('the write after the burst', async () => {
      const found = await client.listBreadcrumbs({ schema_name: 'e2e.after.v1', include_context: true });
      return found[0];
    });
    expect(after.context?.['refused']).toBe(50);
    await until('220 beats', async () => (await client.listAll({ schema_name: 'e2e.beat.v1' })).length >= 220);
    const status: any = await (await fetch(`${adminUrl}/api/extensions/autonomy`)).json();
    const steady = status.continuous.find((c: { tool: string }) => c.tool === 'steady');
    const bursty = status.continuous.find((c: { tool: string }) => c.tool === 'bursty');
    expect(steady).toMatchObject({ state: 'RUNNING', runs: 1, api_refusals: 0, failing: false });
    expect(bursty).toMatchObject({ state: 'RUNNING', runs: 1, api_refusals: 50 });
    const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
    expect(metrics).toContain('tools_runner_continuous_api_refusals{tool="bursty"} 50');
  }, 180_000);

  it('once and continuous tools cannot be requested and are not in the published catalog; an operator "scheduler" replaces the built-in one', async () => {
    const bootDir = tempDir('tr-boot-');
    mkdirSync(join(bootDir, 'tools'));
    writeFileSync(
      join(bootDir, 'tools', 'scheduler.json'),
      JSON.stringify(
        bootTool(
          'scheduler',
          'export async function execute() { await new Promise(() => setInterval(() => {}, 1000)); }',
          {
            permissions: { net: false },
            bootstrap: { enabled: true, mode: 'continuous' },
          },
        ),
      ),
    );
    writeFileSync(
      join(bootDir, 'tools', 'warm.json'),
      JSON.stringify(
        bootTool('warm', 'export async function execute() { return { warmed: true }; }', {
          permissions: { net: false },
          bootstrap: { enabled: true, mode: 'once' },
        }),
      ),
    );
    writeFileSync(
      join(bootDir, 'tools', 'plain.json'),
      JSON.stringify(
        bootTool('plain', 'export async function execute() { return {}; }', { permissions: { net: false } }),
      ),
    );
    const { adminUrl, client } = await startConsoleService({
      bootstrap: true,
      bootstrapDir: bootDir,
      continuousLeaseMs: 3000,
    });
    await until('the three tools in the catalog', async () => {
      const c: any = await (await fetch(`${adminUrl}/api/catalog`)).json();
      return c.tools.filter((t: { state: string }) => t.state === 'runnable').length === 3;
    });
    // The runner's own once run is answered with success.
    await until('the once run', async () => {
      const answers = await client.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true });
      return answers.find((a) => a.context?.['tool'] === 'warm' && a.context?.['status'] === 'success');
    });
    for (const tool of ['scheduler', 'warm']) {
      const got = await answer(client, await request(client, tool, {}));
      expect(got.status).toBe('error');
      expect(got.error?.code, got.error?.message).toBe('permission.denied');
      expect(got.error?.message).toContain(`tool "${tool}" runs on its own`);
    }
    const catalog = await until('the published catalog', async () => {
      const found = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, include_context: true });
      const tools = found[0]?.context?.['tools'] as Array<{ name: string }> | undefined;
      return tools?.some((t) => t.name === 'plain') ? tools : undefined;
    });
    const names = catalog.map((t) => t.name);
    expect(names).not.toContain('scheduler');
    expect(names).not.toContain('warm');
    // The operator's continuous "scheduler" runs; the built-in one publishes nothing meanwhile.
    const def = await client.createBreadcrumb({
      title: 'every second',
      schema_name: 'schedule.definition.v1',
      tags: ['schedule:definition'],
      context: { interval: { type: 'seconds', every_seconds: 1 } },
    });
    const status: any = await until('the definition in the table', async () => {
      const s: any = await (await fetch(`${adminUrl}/api/extensions/autonomy`)).json();
      return s.scheduler.schedules.some((x: { id: string }) => x.id === def.id) ? s : undefined;
    });
    expect(status.scheduler.replaced_by).toContain('"scheduler"');
    expect(status.continuous).toMatchObject([{ tool: 'scheduler', state: 'RUNNING' }]);
    const seen = Date.now();
    await until('two due times to pass', async () => Date.now() > seen + 2_000);
    expect(await client.listBreadcrumbs({ schema_name: 'schedule.tick.v1' })).toEqual([]);
  }, 120_000);

  it('no writer pre-empts or forges a tick; a writer over its cap is refused', async () => {
    const { adminUrl, client } = await startConsoleService({ continuousLeaseMs: 3000, scheduleMaxPerOwner: 2 });
    const def = await client.createBreadcrumb({
      title: 'every second',
      schema_name: 'schedule.definition.v1',
      tags: ['schedule:definition'],
      context: { interval: { type: 'seconds', every_seconds: 1 }, labels: ['guard:1s'] },
    });
    // Forged ticks for the next 20 due times (the old scheduler skipped any due time with a tick under
    // its key tag) and one far in the future (it resumed after the newest due time it found).
    const now = Date.now();
    const forged = (due: number, tags: string[] = []) =>
      client.createBreadcrumb({
        title: 'forged',
        schema_name: 'schedule.tick.v1',
        tags: ['schedule:tick', `schedule:${def.id}`, `schedule-due:${def.id}:${due}`, ...tags],
        context: { schedule_id: def.id, due_ms: due, seal: 'x'.repeat(32) },
      });
    for (let k = 1; k <= 20; k++) await forged((Math.floor(now / 1000) + k) * 1000);
    await forged(now + 3_600_000, ['forged:only']);
    // A tool subscribed to forged ticks' tag, and one to the real ones.
    for (const [name, tag] of [
      ['on-forged', 'forged:only'],
      ['on-guard', 'guard:1s'],
    ] as const)
      await client.createBreadcrumb({
        title: name,
        schema_name: SCHEMA.ToolCode,
        tags: [TAG.Tool, TAG.tool(name), WS],
        context: toolContext(name, 'export async function execute() { return { ran: true }; }', {
          input_schema: { type: 'object', properties: {} },
          output_schema: { type: 'object' },
          examples: [{ description: 'runs', input: {}, output: { ran: true } }],
          permissions: { net: false, breadcrumbs: { read: ['schedule.tick.v1'] } },
          subscriptions: [{ schema_name: 'schedule.tick.v1', tag }],
        }),
      });
    const sealed = async () =>
      (await client.listAll({ schema_name: 'schedule.tick.v1', tag: `schedule:${def.id}`, include_context: true }))
        .filter((t) => t.context?.['seal'] !== 'x'.repeat(32))
        .map((t) => Number(t.context?.['due_ms']))
        .sort((a, b) => a - b);
    // Five consecutive due times inside the forged range, each published once.
    const autonomy = async () => (await fetch(`${adminUrl}/api/extensions/autonomy`)).json();
    const dues = await until(
      'five sealed ticks',
      async () => {
        const got = await sealed();
        return got.length >= 5 ? got : undefined;
      },
      60_000,
      autonomy,
    );
    expect(new Set(dues).size).toBe(dues.length);
    for (let i = 1; i < dues.length; i++) expect((dues[i] as number) - (dues[i - 1] as number)).toBe(1000);
    // The real ticks trigger their subscriber; the forged one never triggers its own.
    const runsOf = async (tool: string) =>
      (await client.listAll({ schema_name: SCHEMA.ToolResponse, tag: WS, include_context: true })).filter(
        (a) => a.context?.['tool'] === tool,
      ).length;
    await until('a run on a real tick', async () => (await runsOf('on-guard')) > 0, 60_000, autonomy);
    const status: any = await until('the subscriptions caught up', async () => {
      const s: any = await (await fetch(`${adminUrl}/api/extensions/autonomy`)).json();
      return s.subscriptions.length === 2 ? s : undefined;
    });
    expect(status.subscriptions.find((s: { tool: string }) => s.tool === 'on-forged').triggered).toBe(0);
    expect(await runsOf('on-forged')).toBe(0);
    // A third enabled schedule of the same writer is over the cap of 2.
    for (const title of ['second', 'third'])
      await client.createBreadcrumb({
        title,
        schema_name: 'schedule.definition.v1',
        tags: ['schedule:definition'],
        context: { interval: { type: 'cron', expression: '0 9 * * mon', timezone: 'Europe/Berlin' } },
      });
    const schedules = await until('the third schedule refused', async () => {
      const s: any = await (await fetch(`${adminUrl}/api/extensions/autonomy`)).json();
      const list = s.scheduler.schedules as Array<{ title: string; state: string; reason?: string }>;
      return list.some((x) => x.state === 'refused') ? list : undefined;
    });
    expect(schedules.find((x) => x.title === 'third')).toMatchObject({ state: 'refused' });
    expect(schedules.find((x) => x.title === 'third')?.reason).toContain('scheduleMaxPerOwner');
    expect(schedules.find((x) => x.title === 'second')).toMatchObject({ state: 'active' });
  }, 120_000);
});

describe('due times', () => {
  const at = (iso: string) => Date.parse(iso);
  it('maps upstream’s interval shapes and cron onto croner, with time zones and DST', () => {
    expect(dueTimesOf({ type: 'seconds', every_seconds: 5 }).next(at('2026-01-01T00:00:03Z'))).toBe(
      at('2026-01-01T00:00:05Z'),
    );
    expect(dueTimesOf({ type: 'minutely', every_n_minutes: 15 }).next(at('2026-01-01T00:15:00Z'))).toBe(
      at('2026-01-01T00:30:00Z'),
    );
    expect(dueTimesOf({ type: 'hourly', minute: 30 }).next(at('2026-01-01T10:31:00Z'))).toBe(
      at('2026-01-01T11:30:00Z'),
    );
    expect(dueTimesOf({ type: 'daily', time: '09:00' }, 'Europe/Berlin').next(at('2026-07-01T12:00:00Z'))).toBe(
      at('2026-07-02T07:00:00Z'),
    );
    // Weekly and monthly schedules have a next tick (they had none before).
    expect(
      dueTimesOf({ type: 'weekly', weekdays: ['Monday', 'fri'], time: '08:15' }).next(at('2026-11-28T12:00:00Z')),
    ).toBe(at('2026-11-30T08:15:00Z'));
    expect(dueTimesOf({ type: 'monthly', day_of_month: 31, time: '00:00' }).next(at('2026-11-02T00:00:00Z'))).toBe(
      at('2026-12-31T00:00:00Z'),
    );
    // 02:30 does not exist in Berlin on the spring DST day: it fires at 03:00 local (01:00 UTC).
    expect(dueTimesOf({ type: 'daily', time: '02:30' }, 'Europe/Berlin').next(at('2026-03-29T00:00:00Z'))).toBe(
      at('2026-03-29T01:00:00Z'),
    );
    expect(dueTimesOf({ type: 'cron', expression: '*/10 * * * * *' }).next(at('2026-01-01T00:00:10Z'))).toBe(
      at('2026-01-01T00:00:20Z'),
    );
  });

  it('names the bad value', () => {
    expect(() => dueTimesOf({ type: 'seconds', every_seconds: 0 })).toThrow('every_seconds must be a number');
    expect(() => dueTimesOf({ type: 'daily', time: '25:00' })).toThrow('interval.time must be "HH:MM", got "25:00"');
    expect(() => dueTimesOf({ type: 'weekly', time: '08:00', weekdays: ['someday'] })).toThrow('weekdays');
    expect(() => dueTimesOf({ type: 'cron', expression: '61 * * * *' })).toThrow('cron expression "61 * * * *"');
    expect(() => dueTimesOf({ type: 'daily', time: '08:00' }, 'Mars/Base')).toThrow('timezone "Mars/Base"');
    expect(() => dueTimesOf({ type: 'fortnightly' })).toThrow('got "fortnightly"');
  });
});
