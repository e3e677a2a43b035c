// Who asked for a call: the one rule for the caller identity of a tool.request.v1, used by every
// per-agent feature (idempotency key spaces, per-agent rate limits, an approval's `requested_by`,
// separation of duties, the audit line's `agent`, the sandbox's `context.request.agentId`).
//
// - A store that authenticates writers (its /health says `auth: "on"`: the embedded store with
//   --auth-secret): the caller IS the store's verified writer of the request record, `created_by` of
//   `/full` (set by the store from the token's subject; no PATCH can change it). The `agent:<id>` tag
//   and `context.requestedBy` are only a label then. A request edited by another writer after it was
//   written (`updated_by` differs) has no single author and is refused.
// - A store that does not (auth off, or a store whose /health does not say, like upstream's): the
//   store cannot tell writers apart, so the label is the identity — everyone is one principal.
//
// The probe asks /health once and then at most every `ttlMs`; a failed look keeps the last answer,
// and with no answer yet it throws (the request is retried later: never trust a label by accident).

import type { StoreClient } from './client.js';

/** The caller of one request, as the per-agent features see it. */
export interface Caller {
  /** The identity: the verified writer (auth on), else the label; absent = anonymous. */
  agentId?: string;
  /** Whether `agentId` is the store's authenticated writer of the request. */
  verified: boolean;
  /** What the request says about itself (`agent:<id>` tag, else `context.requestedBy`). */
  label?: string;
  /** Set when the request cannot be attributed (edited by another writer); answered permission.denied. */
  problem?: string;
}

/** The request's self-declared agent: its first non-empty `agent:<id>` tag, else a non-empty `context.requestedBy`. */
export function agentLabelOf(
  tags: readonly string[],
  context: Record<string, unknown> | undefined,
): string | undefined {
  const tag = tags.find((t) => t.startsWith('agent:') && t.length > 'agent:'.length);
  if (tag) return tag.slice('agent:'.length);
  const requestedBy = context?.['requestedBy'];
  return typeof requestedBy === 'string' && requestedBy !== '' ? requestedBy : undefined;
}

/** The caller of a request record (`/full` view); `authenticated`: the store verifies writers. */
export function callerOf(
  full: {
    tags: readonly string[];
    context?: Record<string, unknown> | undefined;
    created_by?: string | null | undefined;
    updated_by?: string | null | undefined;
  },
  authenticated: boolean,
): Caller {
  const label = agentLabelOf(full.tags, full.context);
  const labelled = label !== undefined ? { label } : {};
  if (!authenticated) return { ...(label !== undefined ? { agentId: label } : {}), verified: false, ...labelled };
  const writer = typeof full.created_by === 'string' && full.created_by !== '' ? full.created_by : undefined;
  if (writer === undefined) return { verified: true, ...labelled };
  const editor = full.updated_by ?? undefined;
  if (editor !== undefined && editor !== writer) {
    return {
      agentId: writer,
      verified: true,
      ...labelled,
      problem: `the request was written by ${JSON.stringify(writer)} and changed afterwards by ${JSON.stringify(editor)}; a request runs only as its writer sent it`,
    };
  }
  return { agentId: writer, verified: true, ...labelled };
}

/** Whether the store authenticates writers, asked of its /health and remembered. */
export interface StoreAuthProbe {
  /** True when the store's /health says `auth: "on"`; throws only when the store was never readable. */
  authenticates(): Promise<boolean>;
}

/** How long a /health answer about auth is reused. */
export const STORE_AUTH_TTL_MS = 30_000;

/** Creates the probe of `client`'s store. */
export function createStoreAuthProbe(
  client: Pick<StoreClient, 'health'>,
  options: { ttlMs?: number; now?: () => number } = {},
): StoreAuthProbe {
  const ttlMs = options.ttlMs ?? STORE_AUTH_TTL_MS;
  const now = options.now ?? Date.now;
  let known: { on: boolean; at: number } | undefined;
  let pending: Promise<boolean> | undefined;
  const look = async (): Promise<boolean> => {
    try {
      const health = (await client.health()) as { auth?: unknown } | undefined;
      known = { on: typeof health === 'object' && health !== null && health.auth === 'on', at: now() };
      return known.on;
    } catch (error) {
      if (known) return known.on;
      throw error;
    } finally {
      pending = undefined;
    }
  };
  return {
    authenticates() {
      if (known && now() - known.at < ttlMs) return Promise.resolve(known.on);
      return (pending ??= look());
    },
  };
}
