// The route table of the embedded store: path pattern → method → handler, with the role each
// route needs. Handlers are synchronous against SQLite once the body is read, so a change and
// its event commit and publish in one tick (see event-log.ts).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import type { Need, Principal, StoreAuth } from './auth.js';
import type { BreadcrumbReads } from './breadcrumb-reads.js';
import type { BreadcrumbWrites } from './breadcrumb-writes.js';
import { describe, httpErrors, parseJsonObject, readBody, sendJson } from './http-util.js';
import type { Registry } from './registry.js';
import { createRegistryRoutes } from './registry-routes.js';
import { DEFAULT_NN, type BreadcrumbSearch } from './search.js';
import type { SecretsRepo } from './secrets.js';
import type { SseHub } from './sse.js';
import { sendJsonArray } from './stream-json.js';
import { MAX_EMBEDDING_DIM, boolParam, clampedInt, parseIfMatch, single, validateCreate, validatePatch } from './validate.js';

/** What a handler gets. */
export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  query: URLSearchParams;
  params: string[];
  principal: Principal;
  /** The JSON object body; with `optional`, an empty body reads as `{}`. */
  body(optional?: boolean): Promise<Record<string, unknown>>;
}

/** One method of one route: the role it needs (`null`: open) and its handler. */
export interface RouteMethod {
  need: Need | null;
  handle(ctx: RouteContext): Promise<void> | void;
}

/** A path pattern with its methods. */
export interface Route {
  pattern: RegExp;
  methods: Record<string, RouteMethod>;
}

/** Everything the handlers use. */
export interface RouteDeps {
  auth: StoreAuth;
  reads: BreadcrumbReads;
  writes: BreadcrumbWrites;
  search: BreadcrumbSearch;
  registry: Registry;
  secrets: SecretsRepo;
  sse: SseHub;
  logger: Logger;
  maxBodyBytes: number;
  startedMs: number;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
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
  const values = parts.map((part) => (/^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(part) ? Number(part) : Number.NaN));
  if (values.length === 0 || values.length > MAX_EMBEDDING_DIM || !values.every(Number.isFinite)) {
    throw httpErrors.invalidQuery(`qvec must be 1 to ${MAX_EMBEDDING_DIM} comma-separated numbers, got ${JSON.stringify(raw.length > 80 ? raw.slice(0, 80) + '…' : raw)}`);
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

/** Builds the route table. */
export function createRoutes(deps: RouteDeps): Route[] {
  const { auth, reads, writes, secrets, sse, logger, search, registry } = deps;
  const id = '([^/]+)';
  return [
    {
      pattern: /^\/health$/,
      methods: {
        GET: { need: null, handle: ({ res }) => sendJson(res, 200, { status: 'ok', auth: auth.enabled ? 'on' : 'off', streams: sse.count(), uptime_ms: Date.now() - deps.startedMs }) },
      },
    },
    {
      pattern: /^\/auth\/token$/,
      methods: {
        POST: { need: null, handle: async ({ req, res, body }) => sendJson(res, 200, await auth.mint(await body(), header(req, 'x-admin-key'))) },
      },
    },
    {
      pattern: /^\/breadcrumbs$/,
      methods: {
        GET: { need: 'read', handle: ({ res, query, principal }) => sendJsonArray(res, reads.list(listFilter(query), principal)) },
        POST: {
          need: 'write',
          async handle({ req, res, principal, body }) {
            const key = header(req, 'idempotency-key');
            if (key !== undefined && (key === '' || key.length > 256)) {
              throw httpErrors.invalidBody(`Idempotency-Key must be 1 to 256 characters, got ${key.length}`);
            }
            const fields = validateCreate(await body());
            sendJson(res, 201, writes.create(fields, principal, key));
          },
        },
      },
    },
    {
      pattern: /^\/breadcrumbs\/search$/,
      methods: { GET: { need: 'read', handle: async ({ res, query, principal }) => sendJsonArray(res, await search.search(searchQuery(query), principal)) } },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}$`),
      methods: {
        GET: { need: 'read', handle: ({ res, params, principal }) => sendJson(res, 200, reads.contextView(params[0] as string, principal)) },
        PATCH: {
          need: 'write',
          async handle({ req, res, params, principal, body }) {
            const ifMatch = parseIfMatch(req.headers['if-match']);
            const patch = validatePatch(await body());
            sendJson(res, 200, { ok: true, ...writes.update(params[0] as string, patch, principal, ifMatch) });
          },
        },
        DELETE: {
          need: 'write',
          handle({ res, params, principal }) {
            writes.remove(params[0] as string, principal);
            sendJson(res, 200, { ok: true });
          },
        },
      },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}/full$`),
      methods: { GET: { need: 'read', handle: ({ res, params, principal }) => sendJson(res, 200, reads.full(params[0] as string, principal)) } },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}/history$`),
      methods: { GET: { need: 'read', handle: ({ res, params, principal }) => sendJson(res, 200, reads.history(params[0] as string, principal)) } },
    },
    {
      pattern: /^\/events\/stream$/,
      methods: { GET: { need: 'read', handle: ({ req, res, query, principal }) => sse.open(req, res, principal, query) } },
    },
    {
      pattern: /^\/secrets$/,
      methods: {
        GET: {
          need: 'curator',
          handle: ({ res, query, principal }) => sendJson(res, 200, secrets.list(single(query, 'scope_type'), single(query, 'scope_id'), principal)),
        },
        POST: {
          need: 'curator',
          async handle({ res, principal, body }) {
            const created = secrets.create(await body(), principal);
            logger.redact(created.value);
            sendJson(res, 200, { id: created.id });
          },
        },
      },
    },
    {
      pattern: new RegExp(`^/secrets/${id}$`),
      methods: {
        PUT: {
          need: 'curator',
          async handle({ res, params, principal, body }) {
            const value = (await body()).value;
            if (typeof value !== 'string') throw httpErrors.invalidBody(`value must be a string, got ${describe(value)}`);
            logger.redact(value);
            secrets.update(params[0] as string, value, principal);
            sendJson(res, 200, { ok: true });
          },
        },
        DELETE: {
          need: 'curator',
          handle({ res, params, principal }) {
            secrets.remove(params[0] as string, principal);
            sendJson(res, 200, { ok: true });
          },
        },
      },
    },
    {
      pattern: new RegExp(`^/secrets/${id}/decrypt$`),
      methods: {
        POST: {
          need: 'curator',
          async handle({ res, params, principal, body }) {
            const input = await body(true);
            const reason = input.reason;
            if (reason !== undefined && reason !== null && typeof reason !== 'string') {
              throw httpErrors.invalidBody(`reason must be a string, got ${describe(reason)}`);
            }
            const value = secrets.decrypt(params[0] as string, (reason as string | null | undefined) ?? null, principal);
            logger.redact(value);
            sendJson(res, 200, { value });
          },
        },
      },
    },
    {
      pattern: /^\/admin\/purge$/,
      methods: {
        POST: {
          need: 'curator',
          handle({ res }) {
            const purged = writes.pruneExpired();
            sendJson(res, 200, { purged, ttl_purged: purged, health_checks_purged: 0, expired_purged: 0 });
          },
        },
      },
    },
    ...createRegistryRoutes({ auth, registry }),
  ];
}

/** Reads and parses the JSON object body of `req` within `maxBytes`. */
export function bodyReader(req: IncomingMessage, res: ServerResponse, maxBytes: number): (optional?: boolean) => Promise<Record<string, unknown>> {
  return async (optional = false) => {
    const text = await readBody(req, res, maxBytes);
    return optional && text.trim() === '' ? {} : parseJsonObject(text);
  };
}
