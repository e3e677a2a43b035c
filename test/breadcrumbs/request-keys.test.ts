// The runner's derived keys (src/breadcrumbs/request-keys.ts) are shared by every replica of every
// version: the derivation (HMAC-SHA256 over length-prefixed parts, base64url, first 32 characters)
// is pinned here against an independent computation, so a faster implementation cannot change them.

import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRequestKeys } from '../../src/breadcrumbs/index.js';

const secret = Buffer.alloc(32, 7);

/** HMAC of the parts, one update per length-prefixed part (the original formulation). */
function reference(...parts: Array<string | number>): string {
  const h = createHmac('sha256', secret);
  for (const part of parts) {
    const text = String(part);
    h.update(`${Buffer.byteLength(text)}:${text};`);
  }
  return h.digest('base64url');
}

describe('request keys', () => {
  it('derive the same keys, tags and MACs as HMAC-SHA256 over length-prefixed parts (non-ASCII ids too)', () => {
    const keys = createRequestKeys(secret);
    for (const id of ['0193a2b4-1234-7abc-8def-000000000001', 'ünïcødé-id', '']) {
      expect(keys.responseKey(id)).toBe(`response-${reference('response', id, 1).slice(0, 32)}`);
      expect(keys.responseKey(id, 2)).toBe(`response-${reference('response', id, 2).slice(0, 32)}`);
      expect(keys.claimKey(id, 3)).toBe(`claim-${reference('claim', id, 3).slice(0, 32)}`);
      expect(keys.answerTag(id)).toBe(`answer:${reference('answer', id).slice(0, 32)}`);
      expect(keys.claimTag(id)).toBe(`claim:${reference('claim-tag', id).slice(0, 32)}`);
    }
    const fields = {
      requestBreadcrumbId: 'b1',
      attempt: 1,
      holder: 'h',
      expiresAt: '2026-01-01T00:00:00Z',
      released: false,
    };
    expect(keys.claimMac(fields)).toBe(reference('claim-mac', 'b1', 1, 'h', '2026-01-01T00:00:00Z', 0));
    expect(keys.verifyClaimMac(fields, reference('claim-mac', 'b1', 1, 'h', '2026-01-01T00:00:00Z', 0))).toBe(true);
    expect(keys.verifyClaimMac({ ...fields, released: true }, keys.claimMac(fields))).toBe(false);
    const binding = { agent: 'a', tool: 't', key: 'k:1' };
    expect(keys.idempotencyKey(binding)).toBe(`idempotency-${reference('idempotency', 'a', 't', 'k:1').slice(0, 32)}`);
    // the length prefixes keep ("a", "b:c") and ("a:b", "c") apart
    expect(keys.idempotencyKey({ agent: 'a', tool: 'b:c', key: 'd' })).not.toBe(
      keys.idempotencyKey({ agent: 'a:b', tool: 'c', key: 'd' }),
    );
  });
});
