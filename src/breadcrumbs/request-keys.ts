// The runner's keys: every Idempotency-Key, claim tag and answer tag the runner writes is derived
// from the request's breadcrumb id (store-assigned, so no agent chooses it) with an HMAC under the
// runner secret shared by all replicas.
//
// Why: agent-chosen strings (a requestId) must never reach an HTTP header raw (a character outside
// Latin-1 made Node throw; 250 characters made the key too long), and keys other writers can
// predict can be squatted (junk posted under `response:<rid>` silenced a request; junk under
// `claim:<rid>:1..4` stalled it forever). A derived key is fixed-length base64url, safe in headers,
// and unknown to anyone without the secret. Claims also carry a MAC over their lease fields, so a
// copied or edited claim record is recognised as not ours.

import { createHmac, timingSafeEqual } from 'node:crypto';
import { BoundedMap } from '../bounded.js';

/** Everything the runner derives from the runner secret. */
export interface RequestKeys {
  /** Idempotency-Key of claim `attempt` of a request. */
  claimKey(requestBreadcrumbId: string, attempt: number): string;
  /** Idempotency-Key of the `n`th answer slot of a request (1 normally; >1 only if slot 1 was squatted). */
  responseKey(requestBreadcrumbId: string, slot?: number): string;
  /** Idempotency-Key of the answer to a tool.create.request.v1. */
  createResponseKey(requestBreadcrumbId: string, slot?: number): string;
  /** Idempotency-Key of the tool.code.v1 a tool.create.request.v1 deploys. */
  toolCreateKey(requestBreadcrumbId: string): string;
  /** Tag carried by the runner's answer to a request: nobody can write it before the runner does. */
  answerTag(requestBreadcrumbId: string): string;
  /** Tag of a request's claims. */
  claimTag(requestBreadcrumbId: string): string;
  /** MAC over a claim's lease fields. */
  claimMac(fields: ClaimMacFields): string;
  /** Whether `mac` is the MAC of `fields`. */
  verifyClaimMac(fields: ClaimMacFields, mac: unknown): boolean;
  /** MAC of a runner state record (`label` names what it is). */
  stateMac(label: string, value: string): string;
  /** Idempotency-Key of the one tool.approval.request.v1 of a request. */
  approvalKey(requestBreadcrumbId: string): string;
  /** Idempotency-Key of the operator's decision on an approval request (one per approval and `--as` name). */
  approvalDecisionKey(approvalBreadcrumbId: string, decidedBy?: string): string;
  /** MAC over the canonical text of an approval record's fields (`kind`: `request` or `decision`). */
  approvalMac(kind: 'request' | 'decision', canonical: string): string;
  /** Idempotency-Key of the tool.idempotency.v1 record binding a caller's idempotency key (agent, tool, key). */
  idempotencyKey(binding: IdempotencyBinding): string;
  /** Tag of that record (found by it after a restart, or when the store's 409 names no record). */
  idempotencyTag(binding: IdempotencyBinding): string;
}

/** What a caller's idempotency key is bound to: the calling agent ('' when none), the tool name and the key. */
export interface IdempotencyBinding {
  agent: string;
  tool: string;
  key: string;
}

/** The lease fields a claim MAC covers. */
export interface ClaimMacFields {
  requestBreadcrumbId: string;
  attempt: number;
  holder: string;
  expiresAt: string;
  released: boolean;
}

/** Prefix of answer tags (`answer:<mac>`). */
export const ANSWER_TAG_PREFIX = 'answer:';

/** Constant-time comparison of an expected MAC with an untrusted value. */
export function sameText(expected: string, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Derived keys remembered per runner secret (a few per request in flight or recently answered). */
const KEY_MEMO_MAX = 8192;

/** Builds the key derivation of one runner secret. */
export function createRequestKeys(secret: Buffer): RequestKeys {
  const mac = (...parts: Array<string | number>): string => {
    // Length-prefixed parts: no two different part lists can produce the same input. One update of
    // the joined text (the same bytes as one update per part) crosses into the native hash once.
    let input = '';
    for (const part of parts) {
      const text = String(part);
      input += `${Buffer.byteLength(text)}:${text};`;
    }
    return createHmac('sha256', secret).update(input).digest('base64url');
  };
  const short = (value: string): string => value.slice(0, 32);
  const claimMac = (f: ClaimMacFields): string =>
    mac('claim-mac', f.requestBreadcrumbId, f.attempt, f.holder, f.expiresAt, f.released ? 1 : 0);
  // One call derives the same few keys of its request several times (intake, claim, answer, drop):
  // each derivation is computed once and kept in a bounded memo (oldest entries leave first).
  const memo = new BoundedMap<string, string>(KEY_MEMO_MAX);
  const derived = (kind: string, id: string, n: number | undefined, derive: () => string): string => {
    const memoKey = n === undefined ? `${kind}\u0000${id}` : `${kind}\u0000${id}\u0000${n}`;
    let value = memo.get(memoKey);
    if (value === undefined) {
      value = derive();
      memo.set(memoKey, value);
    }
    return value;
  };

  return {
    claimKey: (id, attempt) => derived('claim', id, attempt, () => `claim-${short(mac('claim', id, attempt))}`),
    responseKey: (id, slot = 1) => derived('response', id, slot, () => `response-${short(mac('response', id, slot))}`),
    createResponseKey: (id, slot = 1) => `create-response-${short(mac('create-response', id, slot))}`,
    toolCreateKey: (id) => `tool-create-${short(mac('tool-create', id))}`,
    answerTag: (id) => derived('answer', id, undefined, () => `${ANSWER_TAG_PREFIX}${short(mac('answer', id))}`),
    claimTag: (id) => derived('claim-tag', id, undefined, () => `claim:${short(mac('claim-tag', id))}`),
    claimMac,
    verifyClaimMac: (fields, given) => sameText(claimMac(fields), given),
    stateMac: (label, value) => mac('state', label, value),
    // The length-prefixed parts keep ("a", "b:c") and ("a:b", "c") apart; agent strings never reach a header raw.
    idempotencyKey: (b) => `idempotency-${short(mac('idempotency', b.agent, b.tool, b.key))}`,
    idempotencyTag: (b) => `idempotency:${short(mac('idempotency-tag', b.agent, b.tool, b.key))}`,
    approvalKey: (id) => `approval-${short(mac('approval', id))}`,
    approvalDecisionKey: (id, decidedBy) =>
      `approval-decision-${short(decidedBy === undefined ? mac('approval-decision', id) : mac('approval-decision', id, decidedBy))}`,
    approvalMac: (kind, canonical) => mac('approval-mac', kind, canonical),
  };
}
