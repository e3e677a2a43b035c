// Claims: how several runner replicas share one store without running a request twice.
//
// A claim is a `tool.claim.v1` breadcrumb (tags [WS, tool:claim, claim:<rid>]) created with
// `Idempotency-Key: claim:<rid>:<attempt>`; the store lets exactly one create per key succeed, so
// exactly one replica holds attempt N. A claim is a lease: its holder renews `expires_at` while the
// job runs. When a lease expires without a response, any replica may take over as attempt N+1.
//
// Invariants:
// - A replica executes a request only after it holds a claim AND has re-checked, after acquiring it,
//   that no response exists (a response is always written before claims are deleted, so this
//   re-check closes the race with a replica that just finished).
// - Responses are written with `Idempotency-Key: response:<rid>` (see responder), so even a lease
//   lost to a network partition can never produce a second response.
// - Claims are deleted once the response exists; a claim released without a response (drain) is
//   marked `released` so the next attempt number stays discoverable.

import type { StoreClient } from '../breadcrumbs/index.js';
import { isConflict, isNotFound, isVersionMismatch } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, ToolClaimContext, type ToolClaimContext as ClaimContext } from '../breadcrumbs/messages.js';
import type { Logger } from '../logger.js';

export interface ClaimManagerOptions {
  client: StoreClient;
  workspace: string;
  /** Identity written into claims, e.g. `tools-runner@host#pid`. */
  holder: string;
  ttlMs: number;
  logger: Logger;
  now?: () => number;
}

export type AcquireResult =
  | { kind: 'acquired'; claim: HeldClaim }
  | { kind: 'busy'; holder: string; expiresAt: number }
  | { kind: 'answered' };

/** A claim this replica holds. */
export interface HeldClaim {
  rid: string;
  attempt: number;
  breadcrumbId: string;
  /** Extends the lease; false when the claim was lost (deleted or changed by someone else). */
  renew(): Promise<boolean>;
  /** Gives the request back without a response (drain): the next replica takes it as attempt+1. */
  release(): Promise<void>;
  /** Deletes this claim (once the response exists). Best effort. */
  drop(): Promise<void>;
}

export interface ClaimManager {
  acquire(rid: string, requestBreadcrumbId: string): Promise<AcquireResult>;
  /** Whether a tool.response.v1 for `rid` exists. */
  hasResponse(rid: string): Promise<boolean>;
  /** Deletes every claim of `rid` (after its response was written). Best effort. */
  cleanup(rid: string): Promise<void>;
  /** Claims of the workspace whose lease ran out: candidates for takeover or cleanup. */
  listExpired(): Promise<Array<{ rid: string; requestBreadcrumbId?: string; breadcrumbId: string }>>;
}

interface ClaimRecord {
  id: string;
  version: number;
  context: ClaimContext;
}

const MAX_ATTEMPT_PROBES = 4;

/** Creates the claim manager of one replica. */
export function createClaimManager(options: ClaimManagerOptions): ClaimManager {
  const { client, workspace, holder, ttlMs, logger } = options;
  const now = options.now ?? Date.now;

  const claimTag = (rid: string): string => `claim:${rid}`;

  const listClaims = async (rid: string): Promise<ClaimRecord[]> => {
    const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolClaim, tag: claimTag(rid), include_context: true, limit: 100 });
    const records: ClaimRecord[] = [];
    for (const item of items) {
      const parsed = ToolClaimContext.safeParse(item.context);
      if (parsed.success && parsed.data.request_id === rid) records.push({ id: item.id, version: item.version, context: parsed.data });
    }
    return records;
  };

  const hasResponse = async (rid: string): Promise<boolean> => {
    const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolResponse, tag: TAG.request(rid), limit: 1 });
    return items.length > 0;
  };

  const isLive = (claim: ClaimContext): boolean => !claim.released && Date.parse(claim.expires_at) > now();

  const hold = (rid: string, attempt: number, breadcrumbId: string, base: ClaimContext, initialVersion = 1): HeldClaim => {
    let version = initialVersion;
    const patch = async (changes: Partial<ClaimContext>): Promise<boolean> => {
      const context = { ...base, ...changes };
      try {
        const result = await client.updateBreadcrumb(breadcrumbId, { context }, { ifMatch: version });
        version = result.version ?? version + 1;
        Object.assign(base, changes);
        return true;
      } catch (error) {
        if (isNotFound(error) || isVersionMismatch(error)) {
          logger.warn('claim lost', { rid, attempt, error });
          return false;
        }
        throw error;
      }
    };
    return {
      rid,
      attempt,
      breadcrumbId,
      renew: () => patch({ expires_at: new Date(now() + ttlMs).toISOString() }),
      release: async () => {
        await patch({ released: true, expires_at: new Date(now()).toISOString() });
      },
      drop: async () => {
        try {
          await client.deleteBreadcrumb(breadcrumbId);
        } catch (error) {
          if (!isNotFound(error)) logger.warn('claim delete failed', { rid, error });
        }
      },
    };
  };

  const adopt = async (record: ClaimRecord): Promise<AcquireResult> => {
    const held = hold(record.context.request_id, record.context.attempt, record.id, { ...record.context }, record.version);
    if (await hasResponse(record.context.request_id)) {
      await cleanup(record.context.request_id);
      return { kind: 'answered' };
    }
    return { kind: 'acquired', claim: held };
  };

  /** Creates claim `attempt`; 'taken' when that attempt's key was used before (409). */
  const tryCreate = async (rid: string, requestBreadcrumbId: string, attempt: number): Promise<HeldClaim | 'taken'> => {
    const context: ClaimContext = {
      request_id: rid,
      request_breadcrumb_id: requestBreadcrumbId,
      attempt,
      holder,
      expires_at: new Date(now() + ttlMs).toISOString(),
    };
    try {
      const { id } = await client.createBreadcrumb(
        { title: `Claim: ${rid}`, schema_name: SCHEMA.ToolClaim, tags: [workspace, TAG.Claim, claimTag(rid)], context },
        { idempotencyKey: `claim:${rid}:${attempt}` },
      );
      return hold(rid, attempt, id, context);
    } catch (error) {
      if (isConflict(error)) return 'taken';
      throw error;
    }
  };

  // Fast path: a new request has no claim yet, so attempt 1 is tried straight away (one store
  // call); a 409 sends us to the slow path, which reads the request's claims.
  const acquire = async (rid: string, requestBreadcrumbId: string): Promise<AcquireResult> => {
    let attempt = 1;
    for (let probe = 0; probe < MAX_ATTEMPT_PROBES; probe++) {
      const created = await tryCreate(rid, requestBreadcrumbId, attempt);
      if (created !== 'taken') {
        // Re-check after acquiring: a replica that just answered deletes its claim only after
        // writing the response, so a response written before our claim is visible now.
        if (await hasResponse(rid)) {
          await created.drop();
          return { kind: 'answered' };
        }
        if (attempt > 1) logger.info('claim taken over', { rid, attempt });
        return { kind: 'acquired', claim: created };
      }
      const claims = await listClaims(rid);
      const latest = claims.reduce<ClaimRecord | undefined>((best, c) => (!best || c.context.attempt > best.context.attempt ? c : best), undefined);
      if (latest && isLive(latest.context)) {
        // Our own live claim (e.g. a create whose reply was lost to a network error): this replica
        // runs at most one job per request (the queue is keyed by rid), so adopting it is safe.
        if (latest.context.holder === holder) return adopt(latest);
        return { kind: 'busy', holder: latest.context.holder, expiresAt: Date.parse(latest.context.expires_at) };
      }
      // The claim of our attempt is gone (deleted after its response) or expired: answered, or take over.
      if ((!latest || latest.context.attempt < attempt) && (await hasResponse(rid))) return { kind: 'answered' };
      attempt = Math.max(attempt, latest?.context.attempt ?? 0) + 1;
    }
    throw new Error(`could not find a free claim attempt for request "${rid}" after ${MAX_ATTEMPT_PROBES} probes`);
  };

  const cleanup = async (rid: string): Promise<void> => {
    try {
      for (const claim of await listClaims(rid)) {
        await client.deleteBreadcrumb(claim.id).catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
      }
    } catch (error) {
      logger.warn('claim cleanup failed', { rid, error });
    }
  };

  const listExpired = async (): Promise<Array<{ rid: string; requestBreadcrumbId?: string; breadcrumbId: string }>> => {
    const items = await client.listAll({ schema_name: SCHEMA.ToolClaim, tag: workspace, include_context: true });
    const latest = new Map<string, { attempt: number; live: boolean; requestBreadcrumbId?: string; breadcrumbId: string }>();
    for (const item of items) {
      const parsed = ToolClaimContext.safeParse(item.context);
      if (!parsed.success) continue;
      const claim = parsed.data;
      const known = latest.get(claim.request_id);
      if (!known || claim.attempt > known.attempt) {
        latest.set(claim.request_id, {
          attempt: claim.attempt,
          live: isLive(claim),
          breadcrumbId: item.id,
          ...(claim.request_breadcrumb_id ? { requestBreadcrumbId: claim.request_breadcrumb_id } : {}),
        });
      }
    }
    return [...latest.entries()]
      .filter(([, claim]) => !claim.live)
      .map(([rid, claim]) => ({ rid, breadcrumbId: claim.breadcrumbId, ...(claim.requestBreadcrumbId ? { requestBreadcrumbId: claim.requestBreadcrumbId } : {}) }));
  };

  return { acquire, hasResponse, cleanup, listExpired };
}
