// The store client: typed REST calls against the embedded store AND the upstream RCRT server.
//
// Written to the subset upstream rcrt-server and the embedded store share (docs/compat.md):
// one `tag` per listing, PATCH replies that may lack `version`, plain-text or JSON error bodies.
// Every failure is a StoreError (see store-error.ts); replies are checked against the shapes of messages.ts.

import type { z } from 'zod';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { createHttpCall, type QueryValues } from './client-http.js';
import { createLocalCall, type LocalEndpoint } from './client-local.js';
import {
  BreadcrumbContextView,
  BreadcrumbFull,
  BreadcrumbHistoryEntry,
  BreadcrumbListItem,
  SecretInfo,
  type BreadcrumbCreate,
  type BreadcrumbPatch,
} from './messages.js';
import { StoreError } from './store-error.js';
import { createTokenSource, type StoreAuth } from './token-source.js';

/** Per-call options. */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** Query of `GET /breadcrumbs` (ONE tag: upstream rejects two). */
export interface ListQuery {
  schema_name?: string;
  tag?: string;
  limit?: number;
  offset?: number;
  include_context?: boolean;
}

/**
 * Query of `GET /breadcrumbs/search`: `nn` results (default 5) nearest to `qvec`, or to `q`
 * (embedded by the store's embedder; the embedded store without one ranks `q` by full-text
 * relevance). `limit` is kept for callers and sent as `nn` (upstream has no `limit` here).
 */
export interface SearchQuery {
  q?: string;
  qvec?: number[];
  nn?: number;
  tag?: string;
  schema_name?: string;
  include_context?: boolean;
  /** @deprecated alias of `nn`. */
  limit?: number;
}

/** Body of `POST /secrets`. */
export interface SecretCreate {
  name: string;
  scope_type: string;
  scope_id?: string | null;
  value: string;
}

/** Typed access to a breadcrumb store. */
export interface StoreClient {
  baseUrl: string;
  createBreadcrumb(
    body: BreadcrumbCreate,
    opts?: RequestOptions & { idempotencyKey?: string },
  ): Promise<{ id: string }>;
  getBreadcrumb(id: string, opts?: RequestOptions): Promise<BreadcrumbContextView>;
  getBreadcrumbFull(id: string, opts?: RequestOptions): Promise<BreadcrumbFull>;
  /** `version` is present on the embedded store only. */
  updateBreadcrumb(
    id: string,
    patch: BreadcrumbPatch,
    opts?: RequestOptions & { ifMatch?: number },
  ): Promise<{ ok: true; version?: number }>;
  deleteBreadcrumb(id: string, opts?: RequestOptions): Promise<void>;
  listBreadcrumbs(query: ListQuery, opts?: RequestOptions): Promise<BreadcrumbListItem[]>;
  /** Pages `listBreadcrumbs` with offset (page size `query.limit`, default 500) until a page brings nothing new. */
  listAll(query: Omit<ListQuery, 'offset'>, opts?: RequestOptions): Promise<BreadcrumbListItem[]>;
  history(id: string, opts?: RequestOptions): Promise<BreadcrumbHistoryEntry[]>;
  search(query: SearchQuery, opts?: RequestOptions): Promise<BreadcrumbListItem[]>;
  createSecret(secret: SecretCreate, opts?: RequestOptions): Promise<{ id: string }>;
  listSecrets(query?: { scope_type?: string; scope_id?: string }, opts?: RequestOptions): Promise<SecretInfo[]>;
  decryptSecret(id: string, reason?: string, opts?: RequestOptions): Promise<string>;
  deleteSecret(id: string, opts?: RequestOptions): Promise<void>;
  health(opts?: RequestOptions): Promise<unknown>;
  /** `POST /x/leases/<op>` of this project's store (docs/store.md "Leases"): the reply as the store sent it. */
  lease(op: string, body: Record<string, unknown>, leaseKey: string, opts?: RequestOptions): Promise<unknown>;
  /** The current bearer token (minted on first use), for the event stream; undefined without auth. */
  token(): Promise<string | undefined>;
  /** Forgets a minted `token` the store refused (401), so the next `token()` mints anew; no-op otherwise. */
  invalidateToken(token: string): void;
  /** Closes idle keep-alive connections (the client stays usable). */
  close(): void;
  /** Which transport the client uses. */
  transport: 'http' | 'in-process';
  /** The in-process endpoint (in-process transport only; the event stream subscribes through it). */
  local?: LocalEndpoint;
}

/** Options of `createStoreClient`. */
export interface StoreClientOptions {
  baseUrl: string;
  auth?: StoreAuth;
  logger: Logger;
  /** Per-call timeout; default 10 s (HTTP only). */
  timeoutMs?: number;
  /** The embedded store's in-process endpoint (`Store.local`): calls skip HTTP; `baseUrl` is then its URL. */
  local?: LocalEndpoint;
}

export type { StoreAuth } from './token-source.js';

const LIST_PAGE = 500;

function check<T>(schema: z.ZodType<T>, value: unknown, method: string, path: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new StoreError({
    status: 200,
    storeCode: 'invalid_response',
    code: ErrorCode.DependencyUnavailable,
    message: `store ${method} ${path} answered an unexpected shape: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}`,
  });
}

const pathId = (id: string): string => encodeURIComponent(id);
const CreatedReply = BreadcrumbListItem.pick({ id: true });
const SecretCreatedReply = SecretInfo.pick({ id: true });
const ListReply = BreadcrumbListItem.array();
const HistoryReply = BreadcrumbHistoryEntry.array();
const SecretsReply = SecretInfo.array();

/** Builds a client for the store at `baseUrl`. */
export function createStoreClient(options: StoreClientOptions): StoreClient {
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(options.baseUrl);
  } catch {
    throw new RunnerError(ErrorCode.ConfigInvalid, `store URL ${JSON.stringify(options.baseUrl)} is not a valid URL`);
  }
  if (parsedUrl.protocol !== 'http:' && parsedUrl.protocol !== 'https:') {
    throw new RunnerError(
      ErrorCode.ConfigInvalid,
      `store URL ${JSON.stringify(options.baseUrl)} must be http:// or https://`,
    );
  }
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const { logger } = options;
  let call: ReturnType<typeof createHttpCall>;
  const tokens = createTokenSource(
    options.auth,
    (body, adminKey) =>
      call('POST', '/auth/token', { body, auth: false, ...(adminKey ? { headers: { 'X-Admin-Key': adminKey } } : {}) }),
    logger,
  );
  call = options.local
    ? createLocalCall(options.local, tokens)
    : createHttpCall({ baseUrl, tokens, timeoutMs: options.timeoutMs ?? 10_000 });
  const get = async <T>(
    schema: z.ZodType<T>,
    path: string,
    query: QueryValues | undefined,
    opts: RequestOptions | undefined,
  ): Promise<T> => check(schema, await call('GET', path, { query, signal: opts?.signal }), 'GET', path);

  const client: StoreClient = {
    baseUrl,
    async createBreadcrumb(body, opts) {
      const headers = opts?.idempotencyKey !== undefined ? { 'Idempotency-Key': opts.idempotencyKey } : undefined;
      const reply = await call('POST', '/breadcrumbs', { body, signal: opts?.signal, ...(headers ? { headers } : {}) });
      return { id: check(CreatedReply, reply, 'POST', '/breadcrumbs').id };
    },
    getBreadcrumb: (id, opts) => get(BreadcrumbContextView, `/breadcrumbs/${pathId(id)}`, undefined, opts),
    getBreadcrumbFull: (id, opts) => get(BreadcrumbFull, `/breadcrumbs/${pathId(id)}/full`, undefined, opts),
    async updateBreadcrumb(id, patch, opts) {
      const headers = opts?.ifMatch !== undefined ? { 'If-Match': String(opts.ifMatch) } : undefined;
      const reply = (await call('PATCH', `/breadcrumbs/${pathId(id)}`, {
        body: patch,
        signal: opts?.signal,
        ...(headers ? { headers } : {}),
      })) as { version?: unknown } | undefined;
      return typeof reply?.version === 'number' ? { ok: true, version: reply.version } : { ok: true };
    },
    async deleteBreadcrumb(id, opts) {
      await call('DELETE', `/breadcrumbs/${pathId(id)}`, { signal: opts?.signal });
    },
    listBreadcrumbs: (query, opts) => get(ListReply, '/breadcrumbs', { ...query }, opts),
    async listAll(query, opts) {
      const limit = query.limit ?? LIST_PAGE;
      const seen = new Set<string>();
      const all: BreadcrumbListItem[] = [];
      for (let offset = 0; ; ) {
        const page = await client.listBreadcrumbs({ ...query, limit, offset }, opts);
        let fresh = 0;
        for (const item of page) {
          if (seen.has(item.id)) continue;
          seen.add(item.id);
          all.push(item);
          fresh++;
        }
        // Stop on an empty page, or when a server ignoring `offset` repeats what we have.
        if (page.length === 0 || fresh === 0) return all;
        offset += page.length;
      }
    },
    history: (id, opts) => get(HistoryReply, `/breadcrumbs/${pathId(id)}/history`, undefined, opts),
    search(query, opts) {
      const { limit, qvec, nn, ...rest } = query;
      const count = nn ?? limit;
      // Search results carry context only when asked; ours always ask so callers keep getting it.
      return get(
        ListReply,
        '/breadcrumbs/search',
        {
          include_context: true,
          ...rest,
          ...(count !== undefined ? { nn: count } : {}),
          ...(qvec !== undefined ? { qvec: qvec.join(',') } : {}),
        },
        opts,
      );
    },
    async createSecret(secret, opts) {
      if (secret.value.length >= 4) logger.redact(secret.value);
      const reply = await call('POST', '/secrets', { body: secret, signal: opts?.signal });
      return { id: check(SecretCreatedReply, reply, 'POST', '/secrets').id };
    },
    listSecrets: (query, opts) => get(SecretsReply, '/secrets', { ...query }, opts),
    async decryptSecret(id, reason, opts) {
      const path = `/secrets/${pathId(id)}/decrypt`;
      const reply = (await call('POST', path, {
        body: reason === undefined ? {} : { reason },
        signal: opts?.signal,
      })) as { value?: unknown } | undefined;
      if (typeof reply?.value !== 'string') {
        throw new StoreError({
          status: 200,
          storeCode: 'invalid_response',
          code: ErrorCode.DependencyUnavailable,
          message: `store POST ${path} answered without a string value`,
        });
      }
      logger.redact(reply.value);
      return reply.value;
    },
    async deleteSecret(id, opts) {
      await call('DELETE', `/secrets/${pathId(id)}`, { signal: opts?.signal });
    },
    health: (opts) => call('GET', '/health', { signal: opts?.signal, auth: false }),
    lease: (op, body, leaseKey, opts) =>
      call('POST', `/x/leases/${pathId(op)}`, { body, signal: opts?.signal, headers: { 'X-Lease-Key': leaseKey } }),
    token: () => tokens.get(),
    invalidateToken: (token) => tokens.invalidate(token),
    close: () => call.close(),
    transport: options.local ? 'in-process' : 'http',
    ...(options.local ? { local: options.local } : {}),
  };
  return client;
}
