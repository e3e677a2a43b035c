// The route table of the embedded store: path pattern → method → handler, with the role each
// route needs. Handlers parse the HTTP request and call the store's operations (operations.ts,
// shared with the in-process transport) and await them (SQLite answers synchronously, so a change
// and its event still commit and publish in one tick there; see event-log.ts and backend.ts).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Need, Principal, StoreAuth } from './auth.js';
import { HttpError, parseJsonObject, readBody, sendJson } from './http-util.js';
import { checkIdempotencyKey, type StoreOperations } from './operations.js';
import { parseIfMatch } from './validate.js';
import { createRegistryRoutes } from './registry-routes.js';
import type { SseHub } from './sse.js';
import { sendJsonArray } from './stream-json.js';
import { LEASE_OPS, type LeaseOp } from './leases.js';
import type { LeasesPort, RegistryPort, WritesPort } from './backend.js';

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
  ops: StoreOperations;
  writes: WritesPort;
  registry: RegistryPort;
  sse: SseHub;
  leases: LeasesPort;
  /** Throws unless the `X-Lease-Key` header carries the store's lease key. */
  leaseGate(header: string | string[] | undefined): void;
  /** The Prometheus text of `GET /metrics`. */
  metrics(): string | Promise<string>;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Builds the route table. */
export function createRoutes(deps: RouteDeps): Route[] {
  const { auth, ops, writes, sse, registry, leases, leaseGate } = deps;
  const id = '([^/]+)';
  return [
    {
      pattern: /^\/health$/,
      methods: {
        GET: {
          need: null,
          handle: ({ res }) => {
            const health = ops.health();
            sendJson(res, health.status === 'degraded' ? 503 : 200, health);
          },
        },
      },
    },
    {
      pattern: /^\/auth\/token$/,
      methods: {
        POST: {
          need: null,
          handle: async ({ req, res, body }) =>
            sendJson(res, 200, await auth.mint(await body(), header(req, 'x-admin-key'))),
        },
      },
    },
    {
      pattern: /^\/breadcrumbs$/,
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res, query, principal }) => sendJsonArray(res, await ops.list(principal, query)),
        },
        POST: {
          need: 'write',
          async handle({ req, res, principal, body }) {
            // Header checks come before the body is read (a bad key is reported even with a bad body).
            const key = header(req, 'idempotency-key');
            checkIdempotencyKey(key);
            sendJson(res, 201, await ops.create(principal, await body(), key));
          },
        },
      },
    },
    {
      pattern: /^\/breadcrumbs\/search$/,
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res, query, principal }) => sendJsonArray(res, await ops.search(principal, query)),
        },
      },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}$`),
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res, params, principal }) =>
            sendJson(res, 200, await ops.contextView(principal, params[0] as string)),
        },
        PATCH: {
          need: 'write',
          handle: async ({ req, res, params, principal, body }) => {
            const ifMatch = req.headers['if-match'];
            parseIfMatch(ifMatch);
            sendJson(res, 200, await ops.update(principal, params[0] as string, await body(), ifMatch));
          },
        },
        DELETE: {
          need: 'write',
          handle: async ({ res, params, principal }) =>
            sendJson(res, 200, await ops.remove(principal, params[0] as string)),
        },
      },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}/full$`),
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res, params, principal }) =>
            sendJson(res, 200, await ops.full(principal, params[0] as string)),
        },
      },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}/history$`),
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res, params, principal }) =>
            sendJson(res, 200, await ops.history(principal, params[0] as string)),
        },
      },
    },
    {
      pattern: /^\/events\/stream$/,
      methods: {
        GET: { need: 'read', handle: ({ req, res, query, principal }) => sse.open(req, res, principal, query) },
      },
    },
    {
      pattern: /^\/secrets$/,
      methods: {
        GET: {
          need: 'curator',
          handle: async ({ res, query, principal }) => sendJson(res, 200, await ops.listSecrets(principal, query)),
        },
        POST: {
          need: 'curator',
          handle: async ({ res, principal, body }) =>
            sendJson(res, 200, await ops.createSecret(principal, await body())),
        },
      },
    },
    {
      pattern: new RegExp(`^/secrets/${id}$`),
      methods: {
        PUT: {
          need: 'curator',
          handle: async ({ res, params, principal, body }) =>
            sendJson(res, 200, await ops.updateSecret(principal, params[0] as string, await body())),
        },
        DELETE: {
          need: 'curator',
          handle: async ({ res, params, principal }) =>
            sendJson(res, 200, await ops.removeSecret(principal, params[0] as string)),
        },
      },
    },
    {
      pattern: new RegExp(`^/secrets/${id}/decrypt$`),
      methods: {
        POST: {
          need: 'curator',
          handle: async ({ res, params, principal, body }) =>
            sendJson(res, 200, await ops.decryptSecret(principal, params[0] as string, await body(true))),
        },
      },
    },
    {
      pattern: /^\/admin\/purge$/,
      methods: {
        POST: {
          need: 'curator',
          async handle({ res }) {
            const purged = await writes.pruneExpired();
            sendJson(res, 200, { purged, ttl_purged: purged, health_checks_purged: 0, expired_purged: 0 });
          },
        },
      },
    },
    {
      // The runner's claim leases (leases.ts): a write token AND the store's lease key.
      pattern: /^\/x\/leases\/([a-z]+)$/,
      methods: {
        POST: {
          need: 'write',
          handle: async ({ req, res, params, body }) => {
            const op = params[0] as string;
            if (!(LEASE_OPS as readonly string[]).includes(op))
              throw new HttpError(
                404,
                'route_not_found',
                `no lease operation ${JSON.stringify(op)} (known: ${LEASE_OPS.join(', ')})`,
              );
            leaseGate(req.headers['x-lease-key']);
            sendJson(res, 200, await leases[op as LeaseOp](await body()));
          },
        },
      },
    },
    {
      pattern: /^\/metrics$/,
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res }) => {
            const text = await deps.metrics();
            res.writeHead(200, {
              'Content-Type': 'text/plain; version=0.0.4; charset=utf-8',
              'Content-Length': Buffer.byteLength(text),
            });
            res.end(text);
          },
        },
      },
    },
    ...createRegistryRoutes({ auth, registry }),
  ];
}

/** Reads and parses the JSON object body of `req` within `maxBytes`. */
export function bodyReader(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
): (optional?: boolean) => Promise<Record<string, unknown>> {
  return async (optional = false) => {
    const text = await readBody(req, res, maxBytes);
    return optional && text.trim() === '' ? {} : parseJsonObject(text);
  };
}
