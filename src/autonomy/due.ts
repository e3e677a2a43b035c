// When a schedule is due (docs/autonomy.md "The scheduler"): upstream's interval shapes and cron
// expressions, computed by croner (time zones, DST). `seconds` and `minutely` lie on a grid of
// multiples of the period since the epoch, so every replica computes the same due times; calendar
// intervals and `cron` follow the schedule's time zone (IANA name, default UTC).

import { Cron } from 'croner';

/** The due times of one schedule. */
export interface DueTimes {
  /** The first due time strictly after `after` (epoch ms), or undefined when it never fires again. */
  next(after: number): number | undefined;
  /** The fixed period of a grid schedule (seconds, minutely); undefined for calendar ones. */
  periodMs?: number;
}

const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const MAX_SECONDS = 366 * 24 * 3600;

const show = (value: unknown): string => JSON.stringify(value)?.slice(0, 80) ?? String(value);

const intIn = (value: unknown, min: number, max: number, fallback: number, field: string): number => {
  const n = value === undefined ? fallback : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
    throw new Error(`interval.${field} must be an integer from ${min} to ${max}, got ${show(value)}`);
  return n;
};

/** `[hour, minute]` of an "HH:MM" time. */
function hhmm(time: unknown): [number, number] {
  const m = typeof time === 'string' ? /^(\d{1,2}):(\d{2})$/.exec(time) : null;
  if (!m || Number(m[1]) > 23 || Number(m[2]) > 59) throw new Error(`interval.time must be "HH:MM", got ${show(time)}`);
  return [Number(m[1]), Number(m[2])];
}

function grid(periodMs: number): DueTimes {
  return { next: (after) => (Math.floor(after / periodMs) + 1) * periodMs, periodMs };
}

function cron(pattern: string, timezone: string): DueTimes {
  let job: Cron;
  try {
    job = new Cron(pattern, { timezone, paused: true });
  } catch (error) {
    throw new Error(`cron expression ${show(pattern)} is not valid: ${(error as Error).message}`);
  }
  return { next: (after) => job.nextRun(new Date(after))?.getTime() };
}

/** The cron pattern of a calendar interval (hourly, daily, weekly, monthly). */
function calendarPattern(interval: Record<string, unknown>): string {
  const type = interval['type'];
  if (type === 'hourly') return `${intIn(interval['minute'], 0, 59, 0, 'minute')} * * * *`;
  const [h, m] = hhmm(interval['time']);
  if (type === 'daily') return `${m} ${h} * * *`;
  if (type === 'monthly') return `${m} ${h} ${intIn(interval['day_of_month'], 1, 31, 1, 'day_of_month')} * *`;
  const days = interval['weekdays'];
  const names = Array.isArray(days)
    ? days.map((d) => (typeof d === 'string' ? WEEKDAYS.indexOf(d.toLowerCase().slice(0, 3)) : -1))
    : [];
  if (names.length === 0 || names.includes(-1))
    throw new Error(`interval.weekdays must list days such as ["mon", "fri"], got ${show(days)}`);
  return `${m} ${h} * * ${[...new Set(names)].join(',')}`;
}

/**
 * The due times of a definition's `interval` in `timezone`; throws an Error naming the bad value.
 * Types: seconds (`every_seconds`), minutely (`every_n_minutes`), hourly (`minute`), daily (`time`),
 * weekly (`weekdays`, `time`), monthly (`day_of_month`, `time`), cron (`expression`, 5 or 6 fields).
 */
export function dueTimesOf(interval: unknown, timezone: unknown = 'UTC'): DueTimes {
  if (typeof interval !== 'object' || interval === null || Array.isArray(interval))
    throw new Error(`interval must be an object, got ${show(interval)}`);
  const i = interval as Record<string, unknown>;
  if (typeof timezone !== 'string' || timezone === '')
    throw new Error(`timezone must be an IANA name, got ${show(timezone)}`);
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw new Error(`timezone ${show(timezone)} is not a known IANA time zone`);
  }
  switch (i['type']) {
    case 'seconds': {
      const s = i['every_seconds'];
      if (typeof s !== 'number' || !Number.isFinite(s) || s < 1 || s > MAX_SECONDS)
        throw new Error(`interval.every_seconds must be a number from 1 to ${MAX_SECONDS}, got ${show(s)}`);
      return grid(Math.round(s * 1000));
    }
    case 'minutely':
      return grid(intIn(i['every_n_minutes'], 1, 7 * 24 * 60, 1, 'every_n_minutes') * 60_000);
    case 'hourly':
    case 'daily':
    case 'weekly':
    case 'monthly':
      return cron(calendarPattern(i), timezone);
    case 'cron': {
      const expression = i['expression'];
      if (typeof expression !== 'string' || expression.length > 200)
        throw new Error(`interval.expression must be a cron expression, got ${show(expression)}`);
      return cron(expression, timezone);
    }
    default:
      throw new Error(
        `interval.type must be seconds, minutely, hourly, daily, weekly, monthly or cron, got ${show(i['type'])}`,
      );
  }
}

/** Iterations of a calendar schedule's due times counted one by one after downtime. */
const MAX_COUNTED = 100_000;

/** The due times after `last` up to `now`: how many, and the newest `keep` of them. */
export function missedSince(
  due: DueTimes,
  last: number,
  now: number,
  keep: number,
): { count: number; newest: number[] } {
  if (due.periodMs !== undefined) {
    const count = Math.max(0, Math.floor(now / due.periodMs) - Math.floor(last / due.periodMs));
    const newest: number[] = [];
    for (let k = Math.floor(now / due.periodMs) - Math.min(count, keep) + 1; k <= Math.floor(now / due.periodMs); k++)
      newest.push(k * due.periodMs);
    return { count, newest };
  }
  let count = 0;
  const newest: number[] = [];
  for (let at = due.next(last); at !== undefined && at <= now && count < MAX_COUNTED; at = due.next(at)) {
    count++;
    newest.push(at);
    if (newest.length > keep) newest.shift();
  }
  return { count, newest };
}

/** The 99th percentile of `values`. */
export const p99 = (values: number[]): number | undefined => {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))];
};
