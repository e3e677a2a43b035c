// Log data as a bounded plain tree: what the logger (src/logger.ts) serialises instead of the
// values it is given. Every read of a given value is guarded (getters, toJSON, Proxy traps may throw),
// cycles and depth are cut, binary data is summarised (length, never bytes), BigInt and Symbol become
// strings, and all strings together stay within one line's budget; registered secrets are replaced
// in each string before it can be cut, so a cut never leaves a secret's prefix. The result is only
// strings, finite numbers, booleans, null, arrays and plain objects: JSON.stringify cannot throw on it.

import { redactLiterals } from './text.js';

/** What one line may still spend, and the secret forms to replace (longest first). */
export interface Budget {
  left: number;
  secrets: readonly string[];
}

const MAX_DEPTH = 8;
const MAX_ENTRIES = 100;
const MAX_STRING_CHARS = 16_384;
/** A longer string is cut to this before redaction (which then costs O(this), not O(string)). */
const MAX_SCAN_CHARS = 1_048_576;

/** `text` redacted and cut to the budget (and MAX_STRING_CHARS), marked with `…[N chars cut]`. */
function boundedString(text: string, budget: Budget): string {
  const scanned = text.length > MAX_SCAN_CHARS ? text.slice(0, MAX_SCAN_CHARS) : text;
  const redacted = budget.secrets.length > 0 ? redactLiterals(scanned, budget.secrets, '[REDACTED]') : scanned;
  const room = Math.max(0, Math.min(MAX_STRING_CHARS, budget.left));
  budget.left -= Math.min(redacted.length, room) + 2;
  if (redacted.length <= room) return redacted;
  // Never cut between the halves of a surrogate pair.
  let end = room;
  const code = redacted.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${redacted.slice(0, end)}…[${redacted.length - end + text.length - scanned.length} chars cut]`;
}

/** A message (or any value meant as text) as a bounded string; never throws. */
export function plainString(value: unknown, budget: Budget): string {
  if (typeof value === 'string') return boundedString(value, budget);
  const plain = plainValue(value, budget);
  return typeof plain === 'string' ? plain : JSON.stringify(plain ?? null);
}

/** The fields of a meta or bindings object as a plain object (a non-object becomes `{value}`); never throws. */
export function plainFields(value: unknown, budget: Budget): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  const plain = plainValue(value, budget);
  if (plain !== null && typeof plain === 'object' && !Array.isArray(plain)) return plain as Record<string, unknown>;
  return plain === undefined ? {} : { value: plain };
}

/** Any value as a plain tree (undefined stays undefined: a field of it is left out, like JSON does). */
export function plainValue(value: unknown, budget: Budget): unknown {
  return convert(value, budget, 0, new Set());
}

function guard<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

function convert(value: unknown, budget: Budget, depth: number, path: Set<object>): unknown {
  if (budget.left <= 0) return '…';
  switch (typeof value) {
    case 'string':
      return boundedString(value, budget);
    case 'number':
      budget.left -= 12;
      return Number.isFinite(value) ? value : String(value);
    case 'boolean':
      budget.left -= 5;
      return value;
    case 'undefined':
      return undefined;
    case 'bigint':
      return boundedString(value.toString(), budget);
    case 'symbol':
      return boundedString(
        guard(() => value.toString(), '[symbol]'),
        budget,
      );
    case 'function':
      return boundedString(`[function ${guard(() => String((value as { name?: unknown }).name ?? ''), '')}]`, budget);
    default:
      break;
  }
  if (value === null) return null;
  const object = value as object;
  if (path.has(object)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  path.add(object);
  try {
    return convertObject(object, budget, depth, path);
  } catch {
    // A Proxy whose traps throw, an exotic object that cannot be inspected.
    return '[unreadable]';
  } finally {
    path.delete(object);
  }
}

function convertObject(object: object, budget: Budget, depth: number, path: Set<object>): unknown {
  const next = (v: unknown): unknown => convert(v, budget, depth + 1, path);
  if (object instanceof Error) {
    const e = object as Error & { code?: unknown };
    const out: Record<string, unknown> = {
      name: next(guard(() => e.name, 'Error')),
      message: next(guard(() => e.message, '[unreadable message]')),
    };
    const code = guard(() => e.code, undefined);
    if (code !== undefined) out['code'] = next(code);
    return out;
  }
  if (ArrayBuffer.isView(object) || object instanceof ArrayBuffer || object instanceof SharedArrayBuffer) {
    const kind = guard(() => String(object.constructor.name), 'binary');
    return boundedString(`[${kind} ${guard(() => String(object.byteLength), '?')} bytes]`, budget);
  }
  if (object instanceof Date) return Number.isNaN(object.getTime()) ? 'Invalid Date' : object.toISOString();
  const toJSON = guard(() => (object as { toJSON?: unknown }).toJSON, undefined);
  if (typeof toJSON === 'function') {
    let json: unknown;
    try {
      json = (toJSON as () => unknown).call(object);
    } catch {
      return '[toJSON threw]';
    }
    return next(json);
  }
  if (object instanceof Map) return entries(firstOf(object.entries()), budget, next, object.size);
  if (object instanceof Set) return items(firstOf(object.values()), budget, next, object.size);
  if (Array.isArray(object)) return items(object.slice(0, MAX_ENTRIES + 1), budget, next, object.length);
  const out: Record<string, unknown> = {};
  const keys = Object.keys(object);
  let count = 0;
  for (const key of keys) {
    if (budget.left <= 0 || count >= MAX_ENTRIES) {
      setField(out, '…', `${keys.length - count} more keys`);
      break;
    }
    count += 1;
    budget.left -= key.length + 4;
    const field = next(guard(() => (object as Record<string, unknown>)[key], '[unreadable]'));
    if (field !== undefined) setField(out, boundedString(key, budget), field);
  }
  return out;
}

function items(list: unknown[], budget: Budget, next: (v: unknown) => unknown, total = list.length): unknown[] {
  const out: unknown[] = [];
  for (const item of list) {
    if (budget.left <= 0 || out.length >= MAX_ENTRIES) {
      out.push(`…${total - out.length} more items`);
      break;
    }
    out.push(next(item) ?? null);
  }
  return out;
}

function entries(
  list: Array<[unknown, unknown]>,
  budget: Budget,
  next: (v: unknown) => unknown,
  total: number,
): unknown[] {
  return items(
    list.map(([key, value]) => ({ key, value })),
    budget,
    next,
    total,
  );
}

/** The first MAX_ENTRIES + 1 values of an iterator (one more tells that some were left out). */
function firstOf<T>(iterator: Iterator<T>): T[] {
  const out: T[] = [];
  for (let step = iterator.next(); !step.done && out.length <= MAX_ENTRIES; step = iterator.next())
    out.push(step.value);
  return out;
}

/** Sets an own enumerable property, also for keys like `__proto__`. */
function setField(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
