// The route table of the embedded store: path pattern → method → handler, with the role each
// route needs. Handlers are synchronous against SQLite once the body is read, so a change and
// its event commit and publish in one tick (see event-log.ts).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import type { Need, Principal, StoreAuth } from './auth.js';
import type { BreadcrumbReads } from './breadcrumb-reads.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from './breadcrumb-reads.js';
import type { BreadcrumbWrites } from './breadcrumb-writes.js';
import { describe, httpErrors, parseJsonObject, readBody, sendJson } from './http-util.js';
import type { SecretsRepo } from './secrets.js';
import type { SseHub } from './sse.js';
import { boolParam, intParam, parseIfMatch, single, validateCreate, validatePatch } from './validate.js';

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

function listFilter(query: URLSearchParams, search: boolean) {
  const q = search ? single(query, 'q') : undefined;
  return {
    tag: single(query, 'tag'),
    schemaName: single(query, 'schema_name'),
    q: q === '' ? undefined : q,
    limit: intParam(query, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
    offset: intParam(query, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
    includeContext: search || boolParam(query, 'include_context'),
  };
}

/** Builds the route table. */
export function createRoutes(deps: RouteDeps): Route[] {
  const { auth, reads, writes, secrets, sse, logger } = deps;
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
        GET: { need: 'read', handle: ({ res, query, principal }) => sendJson(res, 200, reads.list(listFilter(query, false), principal)) },
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
      methods: { GET: { need: 'read', handle: ({ res, query, principal }) => sendJson(res, 200, reads.list(listFilter(query, true), principal)) } },
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
  ];
}

/** Reads and parses the JSON object body of `req` within `maxBytes`. */
export function bodyReader(req: IncomingMessage, res: ServerResponse, maxBytes: number): (optional?: boolean) => Promise<Record<string, unknown>> {
  return async (optional = false) => {
    const text = await readBody(req, res, maxBytes);
    return optional && text.trim() === '' ? {} : parseJsonObject(text);
  };
}
