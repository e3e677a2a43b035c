// Claims: how several runner replicas share one store without running a request twice.
//
// A request is identified by its breadcrumb id (store-assigned; see request-keys.ts). A claim is a
// `tool.claim.v1` breadcrumb created with `Idempotency-Key: claimKey(id, attempt)`, a key derived
// with the runner secret: the store lets exactly one create per key succeed, so exactly one replica
// holds attempt N, and no other writer can take that key first. A claim is a lease: its holder
// renews `expires_at` (and the claim's MAC) while the job runs. When a lease expires without an
// answer, any replica may take over as attempt N+1 — the only way a request ever runs again.
//
// Hostile writers can create, edit or delete claim records (any agent may write to the store):
// - records without a valid MAC are ignored, so junk claims neither block nor fake a lease;
// - a taken key whose record is gone or edited (and no answer exists) is treated as a live lease of
//   an unknown holder for one TTL from when we first saw it so; the real holder re-creates its lease
//   record on its next renewal, so tampering can delay a takeover but never cause a second run
//   while the holder is alive;
// - this replica adopts its own live claim only if it never started running it (a create whose
//   reply was lost), so no path re-executes a run this replica started.
//
// Invariants: a replica executes a request only after it holds a claim AND, for a takeover, has
// re-checked after acquiring it that no answer exists (answers are written before claims are deleted).

import type { StoreClient } from '../breadcrumbs/index.js';
import { isConflict, isNotFound } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, ToolClaimContext, type ToolClaimContext as ClaimContext } from '../breadcrumbs/messages.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import type { Logger } from '../logger.js';
import { BoundedMap } from '../bounded.js';

export interface ClaimManagerOptions {
  client: StoreClient;
  workspace: string;
  /** Identity written into claims, e.g. `tools-runner@host#pid`. */
  holder: string;
  ttlMs: number;
  keys: RequestKeys;
  logger: Logger;
  now?: () => number;
}

/** The request a claim is for. */
export interface ClaimTarget {
  /** The tool.request.v1 breadcrumb's id. */
  breadcrumbId: string;
  /** The request id answers are tagged with (recorded in the claim for operators). */
  rid: string;
}

export type AcquireResult =
  | { kind: 'acquired'; claim: HeldClaim }
  | { kind: 'busy'; holder: string; expiresAt: number }
  | { kind: 'answered' };

/** A claim this replica holds. */
export interface HeldClaim {
  breadcrumbId: string;
  rid: string;
  attempt: number;
  /** Extends the lease (re-creating its record if someone deleted it); false once the request is answered elsewhere. */
  renew(): Promise<boolean>;
  /** Gives the request back without an answer (drain): the next replica takes it as attempt+1. */
  release(): Promise<void>;
  /**
   * Deletes this claim (once the answer exists). Best effort. `ride`: the caller does not wait for it,
   * so the store may commit it with its next write (lease claims: group-commit.ts, riders).
   */
  drop(options?: { ride?: boolean }): Promise<void>;
}

/** An expired or released lease: a candidate for takeover. */
export interface ExpiredClaim {
  requestBreadcrumbId: string;
  rid: string;
}

export interface ClaimManager {
  acquire(target: ClaimTarget): Promise<AcquireResult>;
  /** Whether the runner's answer to the request exists (found by its unforgeable answer tag; either kind of request). */
  hasResponse(requestBreadcrumbId: string): Promise<boolean>;
  /** Deletes every claim of the request (after its answer was written). Best effort. */
  cleanup(requestBreadcrumbId: string): Promise<void>;
  /** Requests of the workspace whose latest lease ran out or was released. */
  listExpired(): Promise<ExpiredClaim[]>;
}

interface ClaimRecord {
  id: string;
  context: ClaimContext;
}

const MAX_ATTEMPT_PROBES = 8;
/** Most remembered suspect keys / started claims (oldest forgotten first). */
const MEMORY = 10_000;

/** Creates the claim manager of one replica. */
export function createClaimManager(options: ClaimManagerOptions): ClaimManager {
  const { client, workspace, holder, ttlMs, keys, logger } = options;
  const now = options.now ?? Date.now;
  /** `<id>:<attempt>` keys taken with no valid record -> when we first saw that. */
  const suspects = new BoundedMap<string, number>(MEMORY);
  /** Claims this replica acquired (`<id>:<attempt>`): never adopted again. */
  const started = new BoundedMap<string, true>(MEMORY);

  const macFields = (c: ClaimContext) => ({
    requestBreadcrumbId: c.request_breadcrumb_id ?? '',
    attempt: c.attempt,
    holder: c.holder,
    expiresAt: c.expires_at,
    released: c.released === true,
  });
  const seal = (c: ClaimContext): ClaimContext => ({ ...c, mac: keys.claimMac(macFields(c)) });
  const claimTags = (id: string): string[] => [workspace, TAG.Claim, keys.claimTag(id)];

  const isValid = (c: ClaimContext, id: string): boolean =>
    c.request_breadcrumb_id === id && keys.verifyClaimMac(macFields(c), c.mac);
  const isLive = (c: ClaimContext): boolean => !c.released && Date.parse(c.expires_at) > now();

  const listClaims = async (id: string): Promise<ClaimRecord[]> => {
    const items = await client.listAll({
      schema_name: SCHEMA.ToolClaim,
      tag: keys.claimTag(id),
      include_context: true,
      limit: 100,
    });
    const records: ClaimRecord[] = [];
    for (const item of items) {
      const parsed = ToolClaimContext.safeParse(item.context);
      if (parsed.success && isValid(parsed.data, id)) records.push({ id: item.id, context: parsed.data });
    }
    return records;
  };

  const hasResponse = async (id: string): Promise<boolean> => {
    // Any record with the answer tag (a tool.response.v1 or a tool.create.response.v1): only the runner can write it.
    const items = await client.listBreadcrumbs({ tag: keys.answerTag(id), limit: 1 });
    return items.length > 0;
  };

  const hold = (target: ClaimTarget, attempt: number, recordId: string, initial: ClaimContext): HeldClaim => {
    let record = recordId;
    let lease = initial;
    const write = async (changes: Partial<ClaimContext>): Promise<boolean> => {
      const next = seal({ ...lease, ...changes });
      try {
        await client.updateBreadcrumb(record, { context: next, tags: claimTags(target.breadcrumbId) });
        lease = next;
        return true;
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      // The record is gone: deleted after an answer (then stop), or by someone else (re-create it).
      if (await hasResponse(target.breadcrumbId)) {
        logger.info('claim gone and the request is answered', { rid: target.rid, attempt });
        return false;
      }
      const { id } = await client.createBreadcrumb({
        title: `Claim: ${target.breadcrumbId}`,
        schema_name: SCHEMA.ToolClaim,
        tags: claimTags(target.breadcrumbId),
        context: next,
      });
      logger.warn('claim record was deleted by someone else; re-created it', { rid: target.rid, attempt });
      record = id;
      lease = next;
      return true;
    };
    return {
      breadcrumbId: target.breadcrumbId,
      rid: target.rid,
      attempt,
      renew: () => write({ expires_at: new Date(now() + ttlMs).toISOString() }),
      release: async () => {
        started.delete(`${target.breadcrumbId}:${attempt}`);
        await write({ released: true, expires_at: new Date(now()).toISOString() });
      },
      drop: async () => {
        started.delete(`${target.breadcrumbId}:${attempt}`);
        try {
          await client.deleteBreadcrumb(record);
        } catch (error) {
          if (!isNotFound(error)) logger.warn('claim delete failed', { rid: target.rid, error });
        }
      },
    };
  };

  /** Creates claim `attempt`; 'taken' when that attempt's key was used before (409). */
  const tryCreate = async (target: ClaimTarget, attempt: number): Promise<HeldClaim | 'taken'> => {
    const context = seal({
      request_id: target.rid,
      request_breadcrumb_id: target.breadcrumbId,
      attempt,
      holder,
      expires_at: new Date(now() + ttlMs).toISOString(),
    });
    try {
      const { id } = await client.createBreadcrumb(
        {
          title: `Claim: ${target.breadcrumbId}`,
          schema_name: SCHEMA.ToolClaim,
          tags: claimTags(target.breadcrumbId),
          context,
        },
        { idempotencyKey: keys.claimKey(target.breadcrumbId, attempt) },
      );
      return hold(target, attempt, id, context);
    } catch (error) {
      if (isConflict(error)) return 'taken';
      throw error;
    }
  };

  const acquired = (claim: HeldClaim): AcquireResult => {
    started.set(`${claim.breadcrumbId}:${claim.attempt}`, true);
    return { kind: 'acquired', claim };
  };

  // Fast path: a new request has no claim yet, so attempt 1 is tried straight away (one store
  // call); a 409 sends us to the slow path, which reads the request's claims.
  const acquire = async (target: ClaimTarget): Promise<AcquireResult> => {
    const id = target.breadcrumbId;
    let attempt = 1;
    for (let probe = 0; probe < MAX_ATTEMPT_PROBES; probe++) {
      const created = await tryCreate(target, attempt);
      if (created !== 'taken') {
        // Re-check after a takeover: a replica that just answered deletes its claim only after
        // writing the answer, so an answer written before our claim is visible now. Attempt 1
        // needs no re-check: its key was free, so nobody ever held the request, so nobody answered.
        if (attempt > 1 && (await hasResponse(id))) {
          await created.drop();
          return { kind: 'answered' };
        }
        if (attempt > 1) logger.info('claim taken over', { rid: target.rid, attempt });
        return acquired(created);
      }
      const claims = await listClaims(id);
      const latest = claims.reduce<ClaimRecord | undefined>((best, c) => {
        if (!best || c.context.attempt > best.context.attempt) return c;
        if (
          c.context.attempt === best.context.attempt &&
          Date.parse(c.context.expires_at) > Date.parse(best.context.expires_at)
        )
          return c;
        return best;
      }, undefined);
      if (latest && latest.context.attempt >= attempt) {
        // A valid record again: whatever we suspected of this attempt is over.
        suspects.delete(`${id}:${latest.context.attempt}`);
        if (isLive(latest.context)) {
          const key = `${id}:${latest.context.attempt}`;
          // Our own live claim that we never ran (its create reply was lost): adopt it.
          if (latest.context.holder === holder && !started.has(key)) {
            if (await hasResponse(id)) return { kind: 'answered' };
            return acquired(hold(target, latest.context.attempt, latest.id, latest.context));
          }
          return { kind: 'busy', holder: latest.context.holder, expiresAt: Date.parse(latest.context.expires_at) };
        }
        if (await hasResponse(id)) return { kind: 'answered' };
        attempt = latest.context.attempt + 1;
        continue;
      }
      // Key `attempt` is taken but no valid record of it exists: deleted after its answer, or
      // deleted/edited by someone else while its holder may still be running it.
      if (await hasResponse(id)) return { kind: 'answered' };
      const key = `${id}:${attempt}`;
      const firstSeen = suspects.get(key) ?? now();
      if (!suspects.has(key)) suspects.set(key, firstSeen);
      if (now() - firstSeen < ttlMs)
        return { kind: 'busy', holder: '(unknown: claim record missing or altered)', expiresAt: firstSeen + ttlMs };
      suspects.delete(key);
      attempt += 1;
    }
    throw new Error(
      `could not find a free claim attempt for request breadcrumb "${id}" after ${MAX_ATTEMPT_PROBES} probes`,
    );
  };

  const cleanup = async (id: string): Promise<void> => {
    try {
      for (const claim of await listClaims(id)) {
        await client.deleteBreadcrumb(claim.id).catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
      }
    } catch (error) {
      logger.warn('claim cleanup failed', { requestBreadcrumbId: id, error });
    }
  };

  const listExpired = async (): Promise<ExpiredClaim[]> => {
    const items = await client.listAll({ schema_name: SCHEMA.ToolClaim, tag: workspace, include_context: true });
    const latest = new Map<string, ClaimContext>();
    for (const item of items) {
      const parsed = ToolClaimContext.safeParse(item.context);
      if (!parsed.success || !parsed.data.request_breadcrumb_id) continue;
      const claim = parsed.data;
      const requestId = claim.request_breadcrumb_id as string;
      if (!isValid(claim, requestId)) continue;
      const known = latest.get(requestId);
      if (
        !known ||
        claim.attempt > known.attempt ||
        (claim.attempt === known.attempt && Date.parse(claim.expires_at) > Date.parse(known.expires_at))
      ) {
        latest.set(requestId, claim);
      }
    }
    return [...latest.entries()]
      .filter(([, claim]) => !isLive(claim))
      .map(([requestBreadcrumbId, claim]) => ({ requestBreadcrumbId, rid: claim.request_id }));
  };

  return { acquire, hasResponse, cleanup, listExpired };
}
