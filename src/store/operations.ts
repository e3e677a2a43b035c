// The store's operations below the HTTP layer: every breadcrumb and secret route's business logic
// (input validation, auth scope, the reply's JSON shape), called by the HTTP routes (routes.ts) and
// by the in-process transport (local.ts) alike, so both answer the same values and errors.

import type { Logger } from '../logger.js';
import type { Principal, StoreAuth } from './auth.js';
import type { ItemCursor, ReadsPort, SearchPort, SecretsPort, WritesPort } from './backend.js';
import { describe, httpErrors } from './http-util.js';
import { DEFAULT_NN } from './search.js';
import type { SecretInfo } from './secrets.js';
import {
  MAX_EMBEDDING_DIM,
  boolParam,
  clampedInt,
  parseIfMatch,
  single,
  validateCreate,
  validatePatch,
} from './validate.js';

/** What the operations use. */
export interface OperationDeps {
  auth: StoreAuth;
  reads: ReadsPort;
  writes: WritesPort;
  search: SearchPort;
  secrets: SecretsPort;
  logger: Logger;
  startedMs: number;
  /** Open event streams (for /health). */
  streams(): number;
  /** Whether the lease routes are on (advertised in /health as `x_leases`). */
  leases: boolean;
  /** Why the store is degraded now (a full disk), if it is: /health answers 503 with it. */
  degraded?: () => string | undefined;
}

/** The store's operations; each throws (rejects with) HttpError (status, code, message, extra) on failure. */
export interface StoreOperations {
  health(): Record<string, unknown>;
  create(
    principal: Principal,
    body: Record<string, unknown>,
    idempotencyKey: string | undefined,
  ): Promise<{ id: string }>;
  contextView(principal: Principal, id: string): Promise<Record<string, unknown>>;
  full(principal: Principal, id: string): Promise<Record<string, unknown>>;
  history(principal: Principal, id: string): Promise<Array<Record<string, unknown>>>;
  /** `ifMatch`: the raw If-Match header value. */
  update(
    principal: Principal,
    id: string,
    body: Record<string, unknown>,
    ifMatch: string | string[] | undefined,
  ): Promise<{ ok: true; version: number }>;
  remove(principal: Principal, id: string): Promise<{ ok: true }>;
  list(principal: Principal, query: URLSearchParams): Promise<ItemCursor>;
  search(principal: Principal, query: URLSearchParams): Promise<ItemCursor>;
  listSecrets(principal: Principal, query: URLSearchParams): Promise<SecretInfo[]>;
  createSecret(principal: Principal, body: Record<string, unknown>): Promise<{ id: string }>;
  updateSecret(principal: Principal, id: string, body: Record<string, unknown>): Promise<{ ok: true }>;
  decryptSecret(principal: Principal, id: string, body: Record<string, unknown>): Promise<{ value: string }>;
  removeSecret(principal: Principal, id: string): Promise<{ ok: true }>;
}

// Upstream's listing parameters: no default limit, `limit` clamped up to 1, `offset` up to 0.
function listFilter(query: URLSearchParams) {
  const limit = clampedInt(query, 'limit', 1);
  return {
    ...(single(query, 'tag') !== undefined ? { tag: single(query, 'tag') as string } : {}),
    ...(single(query, 'schema_name') !== undefined ? { schemaName: single(query, 'schema_name') as string } : {}),
    ...(limit !== undefined ? { limit } : {}),
    offset: clampedInt(query, 'offset', 0) ?? 0,
    includeContext: boolParam(query, 'include_context'),
  };
}

// `qvec`: comma-separated numbers; also accepts the `[a,b,c]` form upstream's own SDK sends
// (upstream's parser silently drops the bracketed first and last numbers of that form).
function parseQvec(raw: string): number[] {
  const text = raw.trim().replace(/^\[/, '').replace(/\]$/, '');
  const parts = text === '' ? [] : text.split(',');
  const values = parts.map((part) =>
    /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(part) ? Number(part) : Number.NaN,
  );
  if (values.length === 0 || values.length > MAX_EMBEDDING_DIM || !values.every(Number.isFinite)) {
    throw httpErrors.invalidQuery(
      `qvec must be 1 to ${MAX_EMBEDDING_DIM} comma-separated numbers, got ${JSON.stringify(raw.length > 80 ? raw.slice(0, 80) + '…' : raw)}`,
    );
  }
  return values;
}

function searchQuery(query: URLSearchParams) {
  const q = single(query, 'q');
  const qvec = single(query, 'qvec');
  return {
    ...(q !== undefined ? { q } : {}),
    ...(qvec !== undefined ? { qvec: parseQvec(qvec) } : {}),
    nn: clampedInt(query, 'nn', 1) ?? DEFAULT_NN,
    ...(single(query, 'tag') !== undefined ? { tag: single(query, 'tag') as string } : {}),
    ...(single(query, 'schema_name') !== undefined ? { schemaName: single(query, 'schema_name') as string } : {}),
    includeContext: boolParam(query, 'include_context'),
  };
}

/** Throws 400 unless an Idempotency-Key (when given) is 1 to 256 characters. */
export function checkIdempotencyKey(key: string | undefined): void {
  if (key !== undefined && (key === '' || key.length > 256)) {
    throw httpErrors.invalidBody(`Idempotency-Key must be 1 to 256 characters, got ${key.length}`);
  }
}

/** Builds the operations over the store's parts. */
export function createStoreOperations(deps: OperationDeps): StoreOperations {
  const { auth, reads, writes, secrets, logger, search } = deps;
  return {
    health: () => ({
      ...(deps.degraded?.() === undefined ? { status: 'ok' } : { status: 'degraded', reason: deps.degraded() }),
      auth: auth.enabled ? 'on' : 'off',
      streams: deps.streams(),
      uptime_ms: Date.now() - deps.startedMs,
      ...(deps.leases ? { x_leases: true } : {}),
    }),
    async create(principal, body, key) {
      checkIdempotencyKey(key);
      return await writes.create(validateCreate(body), principal, key);
    },
    contextView: async (principal, id) => await reads.contextView(id, principal),
    full: async (principal, id) => await reads.full(id, principal),
    history: async (principal, id) => await reads.history(id, principal),
    async update(principal, id, body, ifMatchHeader) {
      const ifMatch = parseIfMatch(ifMatchHeader);
      const patch = validatePatch(body);
      return { ok: true, ...(await writes.update(id, patch, principal, ifMatch)) };
    },
    async remove(principal, id) {
      await writes.remove(id, principal);
      return { ok: true };
    },
    list: async (principal, query) => await reads.list(listFilter(query), principal),
    search: (principal, query) => search.search(searchQuery(query), principal),
    listSecrets: async (principal, query) =>
      await secrets.list(single(query, 'scope_type'), single(query, 'scope_id'), principal),
    async createSecret(principal, body) {
      const created = await secrets.create(body, principal);
      logger.redact(created.value);
      return { id: created.id };
    },
    async updateSecret(principal, id, body) {
      const value = body.value;
      if (typeof value !== 'string') throw httpErrors.invalidBody(`value must be a string, got ${describe(value)}`);
      logger.redact(value);
      await secrets.update(id, value, principal);
      return { ok: true };
    },
    async decryptSecret(principal, id, body) {
      const reason = body.reason;
      if (reason !== undefined && reason !== null && typeof reason !== 'string') {
        throw httpErrors.invalidBody(`reason must be a string, got ${describe(reason)}`);
      }
      const value = await secrets.decrypt(id, (reason as string | null | undefined) ?? null, principal);
      logger.redact(value);
      return { value };
    },
    async removeSecret(principal, id) {
      await secrets.remove(id, principal);
      return { ok: true };
    },
  };
}
