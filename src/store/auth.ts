// Bearer-token auth of the embedded store (HS256 JWTs via jose).
//
// Auth is ON when `authSecret` is set: every route but /health needs a valid token (SSE also reads
// `?access_token=` / `?token=`), minting needs the admin key — or, in the opt-in `open` mint mode
// (upstream's behaviour), nothing at all — and records are scoped to the token's owner. Auth is OFF otherwise: everything is open, minting signs with a random per-process key,
// and a presented token is only decoded (unverified) to learn the owner and agent.

import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { SignJWT, decodeJwt, jwtVerify } from 'jose';
import type { Actor } from './breadcrumb-writes.js';
import { HttpError, describe, httpErrors } from './http-util.js';

/** Owner of records written without a token while auth is off. */
export const DEFAULT_OWNER_ID = '00000000-0000-0000-0000-000000000001';
/** Roles a token may carry. */
export const ROLES = ['curator', 'emitter', 'subscriber'] as const;
/** What a route needs: any role, a writer role (emitter/curator), a subscriber role (subscriber/curator), or curator. */
export type Need = 'read' | 'write' | 'subscribe' | 'curator';

/** Who may mint tokens when auth is on: admin-key holders only, or anyone (upstream's behaviour). */
export type MintMode = 'admin-key' | 'open';

/** An authenticated caller: the record scope plus its roles. */
export interface Principal extends Actor {
  roles: readonly string[];
}

/** The store's token service. */
export interface StoreAuth {
  enabled: boolean;
  /** Handles `POST /auth/token` (body already parsed). */
  mint(body: Record<string, unknown>, adminKeyHeader: string | undefined): Promise<Record<string, unknown>>;
  /** The caller of `req`; throws 401 when auth is on and the token is missing or invalid. */
  authenticate(req: IncomingMessage, query: URLSearchParams | null): Promise<Principal>;
  /** The caller presenting `token` (undefined: none sent; '' : a malformed Authorization header), as `authenticate` decides it. */
  principalOf(token: string | undefined): Promise<Principal>;
  /** Throws 403 unless `principal` may do `need`. */
  authorize(principal: Principal, need: Need): void;
}

const DEFAULT_TTL_SEC = 3600;
const MAX_TTL_SEC = 7 * 24 * 3600;
const CACHE_MAX = 1024;

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function bearer(req: IncomingMessage, query: URLSearchParams | null): string | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match ? match[1] : header === '' ? undefined : '';
  }
  return query?.get('access_token') ?? query?.get('token') ?? undefined;
}

function claimsToPrincipal(claims: Record<string, unknown>): Principal {
  const { sub, owner_id: ownerId, roles } = claims;
  if (
    typeof sub !== 'string' ||
    typeof ownerId !== 'string' ||
    !Array.isArray(roles) ||
    !roles.every((r) => typeof r === 'string')
  ) {
    throw httpErrors.unauthorized('invalid bearer token: claims sub, owner_id and roles are required');
  }
  return { ownerId, agentId: sub, roles: roles as string[], scoped: true };
}

function validateMint(body: Record<string, unknown>): {
  ownerId: string;
  agentId: string;
  roles: string[];
  ttlSec: number;
} {
  const { owner_id: ownerId, agent_id: agentId, roles, ttl_sec: ttlSec } = body;
  if (typeof ownerId !== 'string' || ownerId === '')
    throw httpErrors.invalidBody(`owner_id must be a non-empty string, got ${describe(ownerId)}`);
  if (typeof agentId !== 'string' || agentId === '')
    throw httpErrors.invalidBody(`agent_id must be a non-empty string, got ${describe(agentId)}`);
  if (
    roles !== undefined &&
    (!Array.isArray(roles) || !roles.every((r) => (ROLES as readonly unknown[]).includes(r)))
  ) {
    throw httpErrors.invalidBody(`roles must be an array of ${ROLES.join(', ')}, got ${JSON.stringify(roles)}`);
  }
  if (
    ttlSec !== undefined &&
    (!Number.isInteger(ttlSec) || (ttlSec as number) < 1 || (ttlSec as number) > MAX_TTL_SEC)
  ) {
    throw httpErrors.invalidBody(`ttl_sec must be an integer from 1 to ${MAX_TTL_SEC}, got ${JSON.stringify(ttlSec)}`);
  }
  return {
    ownerId,
    agentId,
    roles: roles === undefined ? [...ROLES] : [...new Set(roles as string[])],
    ttlSec: (ttlSec as number | undefined) ?? DEFAULT_TTL_SEC,
  };
}

/** Builds the token service; `authSecret` undefined means auth off. `onMint` sees every minted identity. */
export function createStoreAuth(options: {
  authSecret: string | undefined;
  adminKey: string | undefined;
  mintMode?: MintMode;
  onMint?: (ownerId: string, agentId: string, roles: string[]) => void | Promise<void>;
}): StoreAuth {
  const open = options.mintMode === 'open';
  const enabled = options.authSecret !== undefined;
  const key = enabled ? new TextEncoder().encode(options.authSecret) : new Uint8Array(randomBytes(32));
  const adminDigest = options.adminKey === undefined ? undefined : digest(options.adminKey);
  // Verified tokens, so a keep-alive client does not pay an HMAC per request; entries expire with the token.
  const cache = new Map<string, { principal: Principal; expMs: number }>();

  const verify = async (token: string): Promise<Principal> => {
    const hit = cache.get(token);
    if (hit && hit.expMs > Date.now()) return hit.principal;
    let payload;
    try {
      ({ payload } = await jwtVerify(token, key, { algorithms: ['HS256'] }));
    } catch (error) {
      throw httpErrors.unauthorized(`invalid token: ${(error as Error).message}`);
    }
    const principal = claimsToPrincipal(payload);
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(token, { principal, expMs: typeof payload.exp === 'number' ? payload.exp * 1000 : Date.now() + 60_000 });
    return principal;
  };

  // Decoded tokens while auth is off (a token's claims never change, so the decoding is kept).
  const decoded = new Map<string, Principal>();
  const unverified = (token: string | undefined): Principal => {
    const open: Principal = { ownerId: DEFAULT_OWNER_ID, agentId: null, roles: ROLES, scoped: false };
    if (!token) return open;
    const hit = decoded.get(token);
    if (hit) return hit;
    let principal = open;
    try {
      const claims = decodeJwt(token);
      principal = {
        ...open,
        ownerId: typeof claims.owner_id === 'string' && claims.owner_id !== '' ? claims.owner_id : DEFAULT_OWNER_ID,
        agentId: typeof claims.sub === 'string' ? claims.sub : null,
      };
    } catch {
      // not a JWT: the open principal
    }
    if (decoded.size >= CACHE_MAX) decoded.delete(decoded.keys().next().value as string);
    decoded.set(token, principal);
    return principal;
  };

  const principalOf = async (token: string | undefined): Promise<Principal> => {
    if (!enabled) return unverified(token);
    if (token === undefined)
      throw httpErrors.unauthorized('missing Authorization: send a bearer token (Authorization: Bearer <token>)');
    if (token === '') throw httpErrors.unauthorized('invalid Authorization header; expected "Bearer <token>"');
    return verify(token);
  };

  return {
    enabled,
    async mint(body, adminKeyHeader) {
      if (enabled && open) {
        // Upstream-compatible minting: no admin key; missing ids get upstream's usual defaults.
        body = { ...body, owner_id: body.owner_id ?? DEFAULT_OWNER_ID, agent_id: body.agent_id ?? randomUUID() };
      } else if (enabled) {
        if (adminDigest === undefined)
          throw httpErrors.forbidden('token minting is disabled: the store has no admin key configured');
        if (adminKeyHeader === undefined || adminKeyHeader === '')
          throw httpErrors.forbidden('token minting requires the X-Admin-Key header');
        if (!timingSafeEqual(digest(adminKeyHeader), adminDigest))
          throw httpErrors.forbidden('X-Admin-Key does not match the store admin key');
      }
      const request = validateMint(body);
      const iat = Math.floor(Date.now() / 1000);
      const exp = iat + request.ttlSec;
      const token = await new SignJWT({ owner_id: request.ownerId, roles: request.roles })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(request.agentId)
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .sign(key);
      await options.onMint?.(request.ownerId, request.agentId, request.roles);
      return { token, owner_id: request.ownerId, agent_id: request.agentId, roles: request.roles, exp };
    },
    authenticate(req, query) {
      return principalOf(bearer(req, query));
    },
    principalOf,
    authorize(principal, need) {
      if (!enabled) return;
      const has = (role: string): boolean => principal.roles.includes(role);
      const ok =
        need === 'curator'
          ? has('curator')
          : need === 'write'
            ? has('emitter') || has('curator')
            : need === 'subscribe'
              ? has('subscriber') || has('curator')
              : principal.roles.some((r) => (ROLES as readonly string[]).includes(r));
      if (!ok) {
        // Upstream's phrase first ("curator role required"), clients match on it.
        const phrase =
          need === 'curator'
            ? 'curator role required'
            : need === 'write'
              ? 'emitter role required'
              : need === 'subscribe'
                ? 'subscriber role required'
                : 'forbidden';
        const wanted =
          need === 'curator'
            ? 'curator'
            : need === 'write'
              ? 'emitter or curator'
              : need === 'subscribe'
                ? 'subscriber or curator'
                : 'curator, emitter or subscriber';
        throw new HttpError(
          403,
          'forbidden',
          `${phrase}: token of agent "${principal.agentId}" lacks a role (${wanted}) required for this route`,
        );
      }
    },
  };
}
