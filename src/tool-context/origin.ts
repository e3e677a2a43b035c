// Why a request exists when no agent wrote it: the runner wrote it for a nested call
// (`context.tools.call`), a subscription's trigger or a bootstrap run (docs/autonomy.md). The
// request carries that as `context.origin`, sealed with a MAC under the runner secret over the
// request's rid, tool, input and the origin's fields, so an agent cannot forge an origin (to act as
// another agent, to reset a depth or a chain) nor move a genuine one onto a different call. A
// request whose origin does not verify runs as an ordinary request of its writer.
//
// `depth` counts the links since an agent's request (1 = called by, or triggered by, a top-level
// run); `chain` lists the tools of the nested calls above, outermost first (cycle detection).

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
}

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

const sealed = (
  keys: Pick<RequestKeys, 'stateMac'>,
  call: { rid: string; tool: string; input: unknown },
  origin: RequestOrigin,
): string =>
  keys.stateMac('request-origin', canonicalJson({ rid: call.rid, tool: call.tool, input: call.input ?? null, origin }));

/** `context.origin` of a request the runner writes: the origin and its MAC. */
export function sealOrigin(
  keys: Pick<RequestKeys, 'stateMac'>,
  call: { rid: string; tool: string; input: unknown },
  origin: RequestOrigin,
): Record<string, unknown> {
  return { ...origin, mac: sealed(keys, call, origin) };
}

/** The origin of a request record when its `context.origin` is the runner's seal of this very call; else undefined. */
export function verifiedOrigin(
  keys: Pick<RequestKeys, 'stateMac'>,
  context: Record<string, unknown> | undefined,
  rid: string,
): RequestOrigin | undefined {
  const raw = context?.['origin'];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const { mac, ...origin } = raw as Record<string, unknown>;
  const tool = context?.['tool'];
  if (typeof tool !== 'string' || typeof mac !== 'string') return undefined;
  const o = origin as unknown as RequestOrigin;
  if (
    !['call', 'subscription', 'bootstrap'].includes(o.kind) ||
    !Number.isSafeInteger(o.depth) ||
    !Array.isArray(o.chain)
  )
    return undefined;
  try {
    return sameText(sealed(keys, { rid, tool, input: context?.['input'] }, o), mac) ? o : undefined;
  } catch {
    return undefined; // not JSON: not ours
  }
}
