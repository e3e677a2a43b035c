// The scheduler's table of `schedule.definition.v1` records (docs/autonomy.md "The scheduler"):
// read in pages, each new or changed version read in full for its writer (`created_by`); an invalid
// one is kept with the reason; beyond `scheduleMaxPerOwner` enabled schedules of one writer the
// newer ones are refused. Every replica keeps it (the console shows it); the lease holder publishes.

import { isNotFound, type StoreClient } from '../breadcrumbs/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';
import { dueTimesOf, type DueTimes } from './due.js';

/** One schedule as /autonomy and the console show it. */
export interface ScheduleStatus {
  id: string;
  title: string;
  owner: string;
  labels: string[];
  enabled: boolean;
  /** `active`, `disabled`, `refused` (over its writer's cap) or `invalid` (see `reason`). */
  state: 'active' | 'disabled' | 'refused' | 'invalid';
  reason?: string;
  last_tick_at?: string;
  next_tick_at?: string;
  /** How late the last tick was written (ms after its due time). */
  lag_ms?: number;
  /** p99 of the last 1000 on-time ticks' lag. */
  lag_p99_ms?: number;
  /** The last tick was later than the schedule's period (or 60 s for calendar schedules). */
  lagging: boolean;
  published: number;
  late: number;
  missed: number;
}

/** One definition and what the scheduler knows of it. */
export interface Entry {
  status: ScheduleStatus;
  version: number;
  createdAt: string;
  interval: Record<string, unknown>;
  due?: DueTimes;
  /** The newest due time published (or skipped); undefined until recovered from the ticks. */
  last?: number;
  next?: number;
  lags: number[];
}

export const DEFINITION = 'schedule.definition.v1';
/** Definitions are re-read this often even without events (a missed event heals). */
const RESYNC_MS = 60_000;
const MAX_PENDING = 1000;
const MAX_LABELS = 16;
const LABEL = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$/;

function labelsOf(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_LABELS)
    throw new Error(`labels must be a list of at most ${MAX_LABELS} strings`);
  for (const label of value)
    if (typeof label !== 'string' || !LABEL.test(label) || label.startsWith('schedule:'))
      throw new Error(
        `label ${JSON.stringify(label)?.slice(0, 80)} is not allowed (letters, digits, _.:/-; not schedule:)`,
      );
  return value as string[];
}

/** The table; `reload` when `stale()` (a definition event or RESYNC_MS since the last read). */
export function createScheduleTable(options: {
  client: StoreClient;
  config: Pick<Config, 'scheduleMaxPerOwner'>;
  log: Logger;
  signal: AbortSignal;
}) {
  const { client, config, log, signal } = options;
  const entries = new Map<string, Entry>();
  let dirty = true;
  let loadedAt = 0;

  /** Definitions an event named since the last read (read one by one; past MAX_PENDING, all). */
  const pending = new Set<string>();

  const reload = async (): Promise<void> => {
    if (!dirty && Date.now() - loadedAt < RESYNC_MS) return readPending();
    dirty = false;
    pending.clear();
    loadedAt = Date.now();
    const found = await client.listAll({ schema_name: DEFINITION, include_context: true }, { signal });
    const seen = new Set<string>();
    for (const item of found) {
      seen.add(item.id);
      const known = entries.get(item.id);
      if (known && known.version === item.version) continue;
      const full = await client.getBreadcrumbFull(item.id, { signal }).catch(() => undefined);
      if (!full) continue; // deleted meanwhile
      entries.set(item.id, define(full.id, full, known));
    }
    for (const id of entries.keys()) if (!seen.has(id)) entries.delete(id);
    applyOwnerCaps();
  };

  /** Reads the definitions events named: an event costs one read, not a read of every definition. */
  const readPending = async (): Promise<void> => {
    for (const id of [...pending]) {
      pending.delete(id);
      const full = await client.getBreadcrumbFull(id, { signal }).catch((error: unknown) => {
        if (isNotFound(error)) return undefined;
        pending.add(id);
        throw error;
      });
      const known = entries.get(id);
      if (full?.schema_name !== DEFINITION) entries.delete(id);
      else if (known?.version !== full.version) entries.set(id, define(id, full, known));
    }
    applyOwnerCaps();
  };

  const define = (
    id: string,
    full: {
      title: string;
      version: number;
      context: Record<string, unknown>;
      created_by?: string | null;
      created_at?: string;
    },
    known: Entry | undefined,
  ): Entry => {
    const c = full.context;
    const interval = (typeof c['interval'] === 'object' && c['interval'] !== null ? c['interval'] : {}) as Record<
      string,
      unknown
    >;
    const status: ScheduleStatus = {
      id,
      title: full.title,
      owner: full.created_by ?? 'anonymous',
      labels: [],
      enabled: c['enabled'] !== false,
      state: c['enabled'] === false ? 'disabled' : 'active',
      lagging: false,
      published: known?.status.published ?? 0,
      late: known?.status.late ?? 0,
      missed: known?.status.missed ?? 0,
      ...(known?.status.last_tick_at ? { last_tick_at: known.status.last_tick_at } : {}),
    };
    const entry: Entry = {
      status,
      version: full.version,
      createdAt: full.created_at ?? '',
      interval,
      lags: known?.lags ?? [],
      ...(known?.last !== undefined ? { last: known.last } : {}),
    };
    try {
      status.labels = labelsOf(c['labels']);
      entry.due = dueTimesOf(c['interval'], c['timezone'] ?? interval['timezone'] ?? 'UTC');
    } catch (error) {
      status.state = 'invalid';
      status.reason = (error as Error).message;
      log.warn('schedule definition refused', { schedule: id, owner: status.owner, reason: status.reason });
    }
    return entry;
  };

  /** Beyond `scheduleMaxPerOwner` enabled schedules of one writer, the newer ones are refused. */
  const applyOwnerCaps = (): void => {
    const byOwner = new Map<string, Entry[]>();
    for (const entry of entries.values()) {
      if (entry.status.state === 'refused') entry.status.state = 'active';
      if (entry.status.state !== 'active') continue;
      const list = byOwner.get(entry.status.owner) ?? [];
      list.push(entry);
      byOwner.set(entry.status.owner, list);
    }
    for (const [owner, list] of byOwner) {
      list.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.status.id.localeCompare(b.status.id));
      for (const entry of list.slice(config.scheduleMaxPerOwner)) {
        const first = entry.status.reason === undefined;
        entry.status.state = 'refused';
        entry.status.reason = `${owner} has ${list.length} enabled schedules; at most ${config.scheduleMaxPerOwner} are served (scheduleMaxPerOwner)`;
        if (first) log.warn('schedule refused: over its writer’s cap', { schedule: entry.status.id, owner });
      }
      for (const entry of list.slice(0, config.scheduleMaxPerOwner)) delete entry.status.reason;
    }
  };

  return {
    entries,
    reload,
    stale: () => dirty || pending.size > 0 || Date.now() - loadedAt >= RESYNC_MS,
    /** Definition `id` changed (or, without an id, anything may have): read it at the next chance. */
    touch(id?: string) {
      if (id === undefined || pending.size >= MAX_PENDING) dirty = true;
      else pending.add(id);
    },
  };
}
