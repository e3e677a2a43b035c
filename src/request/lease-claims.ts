// Lease claims: the ClaimManager (claims.ts) over this project's store's lease routes
// (src/store/leases.ts, docs/store.md "Leases") — a claim costs one small row changed by
// compare-and-set, with no breadcrumb, no history, no event and no search-index row.
//
// A lease is named by the request's breadcrumb id within the workspace. Acquiring sends a fresh
// random token; only that token renews or releases the lease, so a replica whose lease ran out and
// was taken over can never extend or give back its successor's. A lease past its expiry (or
// released) is taken over as attempt N+1 in one compare-and-set statement, so exactly one replica
// wins each attempt. After the answer is written the lease is marked done (never deleted while its
// request exists), so a late event or scan for an answered request finds it finished.
//
// Guarantees as with breadcrumb claims: a replica executes a request only while it holds its lease
// and, after a takeover, only once it re-checked that no answer exists (answers are written before
// leases are finished). Agents cannot touch leases at all: every lease route needs the store's
// lease key, which only runner replicas hold.

import { randomFillSync } from 'node:crypto';
import type { StoreClient } from '../breadcrumbs/index.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { AcquireResult, ClaimManager, ClaimTarget, ExpiredClaim, HeldClaim } from './claims.js';

export interface LeaseClaimManagerOptions {
  client: StoreClient;
  workspace: string;
  /** Identity recorded as the lease holder, e.g. `tools-runner@host#pid`. */
  holder: string;
  ttlMs: number;
  keys: RequestKeys;
  /** The store's lease key (`X-Lease-Key`). */
  leaseKey: string;
  logger: Logger;
}

type AcquireReply =
  | { acquired: true; attempt: number; expires_ms: number; takeover: boolean }
  | { acquired: false; state: 'held' | 'done'; holder: string; attempt: number; expires_ms: number };

function invalid(op: string, reply: unknown): RunnerError {
  return new RunnerError(
    ErrorCode.DependencyUnavailable,
    `store lease ${op} answered an unexpected shape: ${JSON.stringify(reply)?.slice(0, 200)}`,
  );
}

function asAcquire(reply: unknown): AcquireReply {
  const r = reply as Partial<Record<string, unknown>> | null;
  if (
    r === null ||
    typeof r !== 'object' ||
    typeof r.acquired !== 'boolean' ||
    typeof r.attempt !== 'number' ||
    typeof r.expires_ms !== 'number'
  )
    throw invalid('acquire', reply);
  if (!r.acquired && (typeof r.holder !== 'string' || (r.state !== 'held' && r.state !== 'done')))
    throw invalid('acquire', reply);
  return r as AcquireReply;
}

/** Whether the store at the other end of `client` offers leases (its /health says `x_leases: true`). */
export async function storeOffersLeases(client: StoreClient): Promise<boolean> {
  const health = (await client.health()) as { x_leases?: unknown } | null;
  return health !== null && typeof health === 'object' && health.x_leases === true;
}

/** Checks that the store accepts `leaseKey` (a cheap listing); throws config.invalid when it refuses it. */
export async function checkLeaseKey(client: StoreClient, workspace: string, leaseKey: string): Promise<void> {
  try {
    await client.lease('expired', { scope: workspace, limit: 1 }, leaseKey);
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    if (status === 403 || status === 404) {
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `the store at ${client.baseUrl} offers leases but refused this runner's lease key (${(error as Error).message}); give the store and every replica the same --lease-key (or the same --runner-secret with the embedded store), or run every replica with --claims breadcrumb`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Bytes of one lease token (24 base64url characters). */
const TOKEN_BYTES = 18;
/** Tokens drawn per refill of the pool: one call into the CSPRNG per 256 claims instead of one each. */
const TOKENS_PER_DRAW = 256;
const tokenPool = Buffer.alloc(TOKEN_BYTES * TOKENS_PER_DRAW);
let tokenAt = tokenPool.length;

/** A fresh random lease token; every byte of the pool is used once. */
export function leaseToken(): string {
  if (tokenAt + TOKEN_BYTES > tokenPool.length) {
    randomFillSync(tokenPool);
    tokenAt = 0;
  }
  const token = tokenPool.toString('base64url', tokenAt, tokenAt + TOKEN_BYTES);
  tokenAt += TOKEN_BYTES;
  return token;
}

/** Creates the lease-based claim manager of one replica. */
export function createLeaseClaimManager(options: LeaseClaimManagerOptions): ClaimManager {
  const { client, workspace, holder, ttlMs, keys, leaseKey, logger } = options;
  const call = (op: string, body: Record<string, unknown>): Promise<unknown> =>
    client.lease(op, { scope: workspace, ...body }, leaseKey);

  const hasResponse = async (id: string): Promise<boolean> => {
    // Any record with the answer tag (a tool.response.v1 or a tool.create.response.v1): only the runner can write it.
    const items = await client.listBreadcrumbs({ tag: keys.answerTag(id), limit: 1 });
    return items.length > 0;
  };

  const finish = async (id: string, ride = false): Promise<void> => {
    await call('finish', ride ? { name: id, ride } : { name: id });
  };

  const hold = (target: ClaimTarget, attempt: number, token: string): HeldClaim => ({
    breadcrumbId: target.breadcrumbId,
    rid: target.rid,
    attempt,
    async renew() {
      const reply = (await call('renew', { name: target.breadcrumbId, token, ttl_ms: ttlMs })) as {
        ok?: unknown;
        state?: unknown;
      };
      if (reply?.ok === true) return true;
      logger.info('lease not renewed', { rid: target.rid, attempt, state: reply?.state });
      return false;
    },
    async release() {
      await call('release', { name: target.breadcrumbId, token });
    },
    async drop(options) {
      // After the answer (or once the request is gone): the lease is finished whoever holds it now.
      await finish(target.breadcrumbId, options?.ride === true).catch((error: unknown) =>
        logger.warn('lease finish failed', { rid: target.rid, error }),
      );
    },
  });

  const acquire = async (target: ClaimTarget): Promise<AcquireResult> => {
    const token = leaseToken();
    const reply = asAcquire(
      await call('acquire', { name: target.breadcrumbId, holder, token, ttl_ms: ttlMs, label: target.rid }),
    );
    if (!reply.acquired) {
      return reply.state === 'done'
        ? { kind: 'answered' }
        : { kind: 'busy', holder: reply.holder, expiresAt: reply.expires_ms };
    }
    const claim = hold(target, reply.attempt, token);
    if (reply.takeover) {
      // An earlier attempt existed: its holder may have answered just before its lease ran out.
      if (await hasResponse(target.breadcrumbId)) {
        await claim.drop();
        return { kind: 'answered' };
      }
      logger.info('claim taken over', { rid: target.rid, attempt: reply.attempt });
    }
    return { kind: 'acquired', claim };
  };

  const cleanup = async (id: string): Promise<void> => {
    await finish(id).catch((error: unknown) => logger.warn('lease cleanup failed', { requestBreadcrumbId: id, error }));
  };

  const listExpired = async (): Promise<ExpiredClaim[]> => {
    const reply = (await call('expired', {})) as { leases?: unknown };
    if (!Array.isArray(reply?.leases)) throw invalid('expired', reply);
    return (reply.leases as Array<{ name: string; label: string }>).map((lease) => ({
      requestBreadcrumbId: lease.name,
      rid: lease.label,
    }));
  };

  return { acquire, hasResponse, cleanup, listExpired };
}
