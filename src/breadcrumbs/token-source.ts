// Where the store client's bearer token comes from: nothing, a fixed token, or minted at
// `POST /auth/token` on first use and re-minted shortly before it expires (or after a 401).
//
// States of a minting source: EMPTY (no token yet) → MINTING (one shared in-flight request, so
// concurrent callers mint once) → HELD (token + expiry) → back to MINTING when near expiry or
// invalidated. A failed mint returns to EMPTY and the error goes to every waiting caller.

import { decodeJwt } from 'jose/jwt/decode';
import type { Logger } from '../logger.js';

/** How the client authenticates. */
export type StoreAuth =
  | { token: string }
  | { mint: { owner_id: string; agent_id: string; roles?: string[]; adminKey?: string; ttl_sec?: number } };

/** Yields the current token. */
export interface TokenSource {
  get(): Promise<string | undefined>;
  /** Whether `invalidate` + retry can help after a 401 (only for minted tokens). */
  renewable: boolean;
  /** Forgets `token` so the next `get` mints a new one. */
  invalidate(token: string): void;
}

/** Performs the raw mint request; supplied by the client so errors are StoreErrors. */
export type MintFn = (body: Record<string, unknown>, adminKey: string | undefined) => Promise<unknown>;

const FALLBACK_LIFETIME_MS = 15 * 60 * 1000;
const MAX_EARLY_MS = 60_000;

function expiryMs(reply: Record<string, unknown>, token: string): number {
  if (typeof reply.exp === 'number') return reply.exp * 1000;
  try {
    const exp = decodeJwt(token).exp;
    if (typeof exp === 'number') return exp * 1000;
  } catch {
    // An opaque token: assume a short lifetime and re-mint early.
  }
  return Date.now() + FALLBACK_LIFETIME_MS;
}

/** Builds the token source for `auth`. */
export function createTokenSource(auth: StoreAuth | undefined, mint: MintFn, logger: Logger): TokenSource {
  if (auth === undefined) return { get: async () => undefined, renewable: false, invalidate: () => {} };
  if ('token' in auth) {
    logger.redact(auth.token);
    return { get: async () => auth.token, renewable: false, invalidate: () => {} };
  }
  const { adminKey, ...claims } = auth.mint;
  if (adminKey) logger.redact(adminKey);
  let held: { token: string; refreshAtMs: number } | undefined;
  let inflight: Promise<string> | undefined;

  // Not tied to any one caller's signal: the mint is shared by every caller waiting on it.
  const mintNow = async (): Promise<string> => {
    const startedMs = Date.now();
    const reply = (await mint(claims, adminKey)) as Record<string, unknown> | undefined;
    const token = reply?.token;
    if (typeof token !== 'string' || token === '') throw new TypeError('POST /auth/token answered without a token');
    logger.redact(token);
    const expMs = expiryMs(reply as Record<string, unknown>, token);
    const early = Math.min(MAX_EARLY_MS, Math.max(0, (expMs - startedMs) / 5));
    held = { token, refreshAtMs: expMs - early };
    logger.debug('store token minted', { agentId: claims.agent_id, expiresInMs: expMs - Date.now() });
    return token;
  };

  return {
    renewable: true,
    get() {
      if (held && Date.now() < held.refreshAtMs) return Promise.resolve(held.token);
      inflight ??= mintNow().finally(() => {
        inflight = undefined;
      });
      return inflight;
    },
    invalidate(token) {
      if (held?.token === token) held = undefined;
    },
  };
}
