// Canonical JSON and its hash: the same value always gives the same text (object keys sorted by
// code unit, no whitespace, numbers as JSON.stringify writes them), so an input's hash binds
// idempotency keys and approvals to the arguments, not to how a client happened to order them.

import { createHash } from 'node:crypto';

/** Canonical JSON text of a JSON value (throws on non-JSON values: undefined, functions, BigInt, cycles). */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const write = (v: unknown): string => {
    if (v === null || typeof v === 'boolean' || typeof v === 'string') return JSON.stringify(v);
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new TypeError(`not a JSON number: ${v}`);
      return JSON.stringify(v);
    }
    if (typeof v !== 'object') throw new TypeError(`not a JSON value: ${typeof v}`);
    if (seen.has(v)) throw new TypeError('cyclic value');
    seen.add(v);
    const text = Array.isArray(v)
      ? `[${v.map(write).join(',')}]`
      : `{${Object.keys(v)
          .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${write((v as Record<string, unknown>)[k])}`)
          .join(',')}}`;
    seen.delete(v);
    return text;
  };
  return write(value);
}

/** `sha256:<hex>` of the canonical JSON of `value`. */
export function inputHash(value: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(value)).digest('hex')}`;
}
