// Why a request exists when no agent wrote it: the runner wrote it for a nested call
// (`context.tools.call`), a subscription's trigger or a bootstrap run (docs/autonomy.md). The
// request carries that as `context.origin`, sealed with a MAC under the runner secret over every
// field that changes what runs, as whom or how often — the rid, tool, version, input, idempotency
// key, isolation and the origin's fields (agent, depth, chain, parent, deadline, the runner's own
// store identity) — so an agent can neither forge an origin (to act as another agent, to reset a
// depth or a chain) nor replay a genuine one changed in any way (a dropped idempotency key runs the
// call again). A request whose `context.origin` is not the seal of that very request is refused
// (`permission.denied`); with store auth on, so is a sealed request another writer stored.
//
// `depth` counts the links since an agent's request (1 = called by, or triggered by, a top-level
// run); `chain` lists the tools of the nested calls above, outermost first (cycle detection);
// `seed` names the breadcrumb that started a causal chain of subscription triggers (chains.ts).

import { canonicalJson } from '../contract/canonical.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { sameText } from '../breadcrumbs/request-keys.js';

/** The verified origin of a runner-written request. */
export interface RequestOrigin {
  kind: 'call' | 'subscription' | 'bootstrap';
  /** The agent the chain started with (absent: none, e.g. a bootstrap run); the request runs as this agent. */
  agent?: string;
  depth: number;
  /** Tools of the nested calls above this request, outermost first. */
  chain: string[];
  /** `call`: the calling tool, its request's rid and breadcrumb id. */
  parent_tool?: string;
  parent_rid?: string;
  parent_breadcrumb_id?: string;
  /** Epoch ms the answer is needed by (the parent's deadline). */
  deadline_at?: number;
  /** `subscription`: its name (`<tool>#<index>`) and the trigger breadcrumb's id; the event reaches the tool. */
  subscription?: string;
  trigger_id?: string;
  trigger_event?: unknown;
  /** The breadcrumb that started this chain of triggered runs (the first trigger); nested calls keep it. */
  seed?: string;
  /** The store identity the runner wrote the request as (its token's subject); `created_by` must match with auth on. */
  writer?: string;
}

/** The fields of a sealed request besides its origin: what runs and how often (`context.*` as written). */
export interface SealedCall {
  rid: string;
  tool: string;
  input: unknown;
  version?: unknown;
  idempotency_key?: unknown;
  isolation?: unknown;
}

/** What a request record's `context.origin` comes to. */
export type OriginCheck =
  | { kind: 'none' }
  | { kind: 'sealed'; origin: RequestOrigin }
  | { kind: 'refused'; problem: string };

/** Tag a tool's writes carry while it runs at depth `n` (a provenance mark: tools can neither set nor remove it). */
export const DEPTH_TAG_PREFIX = 'created-by:depth:';

/** The depth a breadcrumb's tags record (0 when none). */
export function depthOfTags(tags: readonly string[]): number {
  let depth = 0;
  for (const tag of tags) {
    if (!tag.startsWith(DEPTH_TAG_PREFIX)) continue;
    const n = Number(tag.slice(DEPTH_TAG_PREFIX.length));
    if (Number.isSafeInteger(n) && n > depth) depth = n;
  }
  return depth;
}

/** Tag a triggered run's writes carry: the seed of its chain (a provenance mark, like the depth). */
export const CHAIN_TAG_PREFIX = 'created-by:chain:';

/** The seed a breadcrumb's tags name (the first chain mark), if any. */
export function seedOfTags(tags: readonly string[]): string | undefined {
  const tag = tags.find((t) => t.startsWith(CHAIN_TAG_PREFIX) && t.length > CHAIN_TAG_PREFIX.length);
  return tag?.slice(CHAIN_TAG_PREFIX.length);
}

const sealed = (keys: Pick<RequestKeys, 'stateMac'>, call: SealedCall, origin: RequestOrigin): string =>
  keys.stateMac(
    'request-origin',
    canonicalJson({
      rid: call.rid,
      tool: call.tool,
      input: call.input ?? null,
      version: call.version ?? null,
      idempotency_key: call.idempotency_key ?? null,
      isolation: call.isolation ?? null,
      origin,
    }),
  );

/** `context.origin` of a request the runner writes: the origin and its MAC over `call` and the origin. */
export function sealOrigin(
  keys: Pick<RequestKeys, 'stateMac'>,
  call: SealedCall,
  origin: RequestOrigin,
): Record<string, unknown> {
  return { ...origin, mac: sealed(keys, call, origin) };
}

const quoted = (value: unknown): string => JSON.stringify(value) ?? String(value);

/**
 * The origin of a request record: none, the runner's seal of this very request (and, when the store
 * authenticates writers, stored by the identity the seal names), or refused with the reason.
 */
export function checkOrigin(
  keys: Pick<RequestKeys, 'stateMac'>,
  record: { context?: Record<string, unknown> | undefined; created_by?: string | null | undefined },
  rid: string,
  authenticated: boolean,
): OriginCheck {
  const context = record.context;
  const raw = context?.['origin'];
  if (raw === undefined) return { kind: 'none' };
  const refused: OriginCheck = {
    kind: 'refused',
    problem: `context.origin of request ${quoted(rid)} is not the runner's seal of this request: a sealed request runs only exactly as the runner wrote it (tool, version, input, idempotency_key, isolation, requestId and origin)`,
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return refused;
  const { mac, ...rest } = raw as Record<string, unknown>;
  const origin = rest as unknown as RequestOrigin;
  const tool = context?.['tool'];
  if (
    typeof tool !== 'string' ||
    typeof mac !== 'string' ||
    !['call', 'subscription', 'bootstrap'].includes(origin.kind) ||
    !Number.isSafeInteger(origin.depth) ||
    !Array.isArray(origin.chain)
  )
    return refused;
  const call: SealedCall = {
    rid,
    tool,
    input: context?.['input'],
    version: context?.['version'],
    idempotency_key: context?.['idempotency_key'],
    isolation: context?.['isolation'],
  };
  try {
    if (!sameText(sealed(keys, call, origin), mac)) return refused;
  } catch {
    return refused; // not JSON: not ours
  }
  if (authenticated && (origin.writer === undefined || record.created_by !== origin.writer))
    return {
      kind: 'refused',
      problem: `the sealed request ${quoted(rid)} was stored by ${quoted(record.created_by ?? null)}, not by the runner's own identity (${quoted(origin.writer ?? null)}): only the runner writes sealed requests`,
    };
  return { kind: 'sealed', origin };
}
