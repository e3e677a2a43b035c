// What the console shows of the schedules the shipped scheduler serves (bootstrap-breadcrumbs'
// scheduler.json): each `schedule.definition.v1`, its last tick (newest `due_ms` of its
// `schedule.tick.v1` records) and its next due time on the same grid the scheduler uses (periods since
// the epoch; hourly and daily in UTC). Weekly and monthly schedules show no next tick here.

import type { StoreClient } from '../breadcrumbs/index.js';

/** One schedule as the console shows it. */
export interface ScheduleStatus {
  id: string;
  title: string;
  labels: string[];
  enabled: boolean;
  last_tick_at?: string;
  next_tick_at?: string;
}

const MINUTE = 60_000;

/** The next due time after `after` of an interval the console can compute, else undefined. */
export function nextDueOf(interval: Record<string, unknown>, after: number): number | undefined {
  const grid = (period: number, offset = 0): number => (Math.floor((after - offset) / period) + 1) * period + offset;
  switch (interval['type']) {
    case 'seconds': {
      const s = Number(interval['every_seconds']);
      return Number.isFinite(s) && s >= 1 ? grid(Math.round(s * 1000)) : undefined;
    }
    case 'minutely':
      return grid(Math.max(1, Math.round(Number(interval['every_n_minutes'] ?? 1)) || 1) * MINUTE);
    case 'hourly':
      return grid(60 * MINUTE, Number(interval['minute'] ?? 0) * MINUTE);
    case 'daily': {
      const m = /^(\d{1,2}):(\d{2})$/.exec(String(interval['time'] ?? ''));
      return m ? grid(24 * 60 * MINUTE, (Number(m[1]) * 60 + Number(m[2])) * MINUTE) : undefined;
    }
    default:
      return undefined;
  }
}

/** Reads the schedules and their last ticks (at most 50 schedules). */
export async function readSchedules(client: StoreClient): Promise<ScheduleStatus[]> {
  const defs = await client.listBreadcrumbs({
    schema_name: 'schedule.definition.v1',
    limit: 50,
    include_context: true,
  });
  const out: ScheduleStatus[] = [];
  for (const def of defs) {
    const context = def.context ?? {};
    const interval =
      typeof context['interval'] === 'object' && context['interval'] !== null
        ? (context['interval'] as Record<string, unknown>)
        : {};
    const ticks = await client.listBreadcrumbs({
      schema_name: 'schedule.tick.v1',
      tag: `schedule:${def.id}`,
      limit: 100,
      include_context: true,
    });
    let last: number | undefined;
    for (const tick of ticks) {
      const due = Number(tick.context?.['due_ms']);
      if (Number.isSafeInteger(due) && (last === undefined || due > last)) last = due;
    }
    const next = nextDueOf(interval, Math.max(last ?? 0, Date.now()));
    out.push({
      id: def.id,
      title: def.title,
      labels: Array.isArray(context['labels'])
        ? context['labels'].filter((l): l is string => typeof l === 'string')
        : [],
      enabled: context['enabled'] !== false,
      ...(last !== undefined ? { last_tick_at: new Date(last).toISOString() } : {}),
      ...(next !== undefined ? { next_tick_at: new Date(next).toISOString() } : {}),
    });
  }
  return out;
}
