// parseStoreEvent (src/breadcrumbs/store-shapes.ts) is the event stream's check without zod: it must
// accept and refuse exactly what the StoreEvent schema does for values parsed from JSON, and hand
// back the value itself.

import { describe, expect, it } from 'vitest';
import { parseStoreEvent, StoreEvent } from '../../src/breadcrumbs/store-shapes.js';

const valid: unknown[] = [
  { type: 'ping' },
  { type: 'breadcrumb.updated', breadcrumb_id: 'b1', owner_id: 'o', version: 3, tags: ['a', 'b'], schema_name: 'x' },
  { type: 'breadcrumb.updated', schema_name: null, updated_at: '2026-01-01T00:00:00Z', context: { a: [1, { b: 2 }] } },
  { type: 'breadcrumb.deleted', breadcrumb_id: 'b1', reason: 'expired', extra: { nested: true } },
  { type: 'stream.gap', ts: 1234 },
  { type: 'x', ts: '2026-01-01T00:00:00Z', tags: [] },
  { type: '', context: {} },
];
const invalid: unknown[] = [
  null,
  [],
  'ping',
  42,
  {},
  { type: 1 },
  { type: 'x', breadcrumb_id: 1 },
  { type: 'x', owner_id: null },
  { type: 'x', version: 1.5 },
  { type: 'x', version: '1' },
  { type: 'x', version: 2 ** 60 },
  { type: 'x', tags: 'a' },
  { type: 'x', tags: ['a', 1] },
  { type: 'x', schema_name: 1 },
  { type: 'x', updated_at: null },
  { type: 'x', context: [] },
  { type: 'x', context: 'text' },
  { type: 'x', context: null },
  { type: 'x', ts: null },
  { type: 'x', ts: true },
];

describe('parseStoreEvent', () => {
  it('accepts what StoreEvent accepts, returning the value itself', () => {
    for (const raw of valid) {
      const value = JSON.parse(JSON.stringify(raw)) as unknown;
      const zod = StoreEvent.safeParse(value);
      const ours = parseStoreEvent(value);
      expect(zod.success, JSON.stringify(raw)).toBe(true);
      expect(ours.success, JSON.stringify(raw)).toBe(true);
      if (ours.success) {
        expect(ours.data).toBe(value);
        expect(ours.data).toEqual(zod.data);
      }
    }
  });

  it('refuses what StoreEvent refuses, naming the field', () => {
    for (const raw of invalid) {
      const value = JSON.parse(JSON.stringify(raw)) as unknown;
      expect(StoreEvent.safeParse(value).success, JSON.stringify(raw)).toBe(false);
      const ours = parseStoreEvent(value);
      expect(ours.success, JSON.stringify(raw)).toBe(false);
      if (!ours.success)
        expect(ours.message).toMatch(
          /^(\(root\)|type|breadcrumb_id|owner_id|version|tags|schema_name|updated_at|context|ts): expected /,
        );
    }
  });
});
