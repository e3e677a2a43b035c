// The embedded store's in-process endpoint: the calls of the store client (breadcrumbs/client.ts)
// served without HTTP — same path table, roles, auth (the bearer token is checked exactly as the
// HTTP dispatcher checks it), operations (operations.ts) and `{error, code}` failures — and the
// event stream as an in-process subscription (sse.ts `subscribe`). Request bodies arrive already
// copied by the client; replies are objects built fresh per call from SQLite rows.

import type { LocalEndpoint, LocalReply, LocalRequest } from '../local-transport.js';
import type { Need, Principal, StoreAuth } from './auth.js';
import type { ItemCursor, LeasesPort } from './backend.js';
import { HttpError } from './http-util.js';
import { checkIdempotencyKey, type StoreOperations } from './operations.js';
import { LEASE_OPS, type LeaseOp } from './leases.js';
import type { SseHub } from './sse.js';
import { parseIfMatch } from './validate.js';

type Handler = (principal: Principal, params: string[], request: LocalRequest) => unknown;
interface LocalRoute {
  pattern: RegExp;
  methods: Record<string, { need: Need | null; run: Handler }>;
}

const YIELD_EVERY = 256;

// Reads a listing cursor to its end; like the HTTP route between chunks, it lets other work run
// every YIELD_EVERY rows, so a long listing does not hold the event loop.
const drain = async (cursor: ItemCursor): Promise<unknown[]> => {
  const out: unknown[] = [];
  try {
    for (;;) {
      let item = cursor.next();
      if (item instanceof Promise) item = await item;
      if (item === undefined) break;
      out.push(item);
      if (out.length % YIELD_EVERY === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } finally {
    cursor.close();
  }
  return out;
};

// A body the HTTP dispatcher would read as `body()`: the request's JSON object (400s as parseJsonObject words them).
function objectBody(request: LocalRequest, optional = false): Record<string, unknown> {
  const value = request.body;
  if (value === undefined) {
    if (optional) return {};
    throw new HttpError(400, 'invalid_json', 'request body is empty; expected a JSON object');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(
      400,
      'invalid_body',
      `request body must be a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}`,
    );
  }
  return value as Record<string, unknown>;
}

/** Builds the in-process endpoint; `running()` false answers 503 like the HTTP server while closing. */
export function createLocalEndpoint(deps: {
  url: string;
  auth: StoreAuth;
  ops: StoreOperations;
  sse: SseHub;
  running(): boolean;
  leases: LeasesPort;
  leaseGate(header: string | undefined): void;
  /** The HttpError an error answers as over HTTP (a full disk: 507, an unreachable PostgreSQL: 503), if any. */
  classify?: (error: unknown) => HttpError | undefined;
  /** A write succeeded (the store is not full). */
  wrote?: () => void;
}): LocalEndpoint {
  const { auth, ops, sse, leases } = deps;
  const id = '([^/]+)';
  const p0 = (params: string[]): string => params[0] as string;
  const routes: LocalRoute[] = [
    { pattern: /^\/health$/, methods: { GET: { need: null, run: () => ops.health() } } },
    {
      pattern: /^\/auth\/token$/,
      methods: { POST: { need: null, run: (_p, _a, r) => auth.mint(objectBody(r), r.headers['X-Admin-Key']) } },
    },
    {
      pattern: /^\/breadcrumbs$/,
      methods: {
        GET: { need: 'read', run: async (p, _a, r) => await drain(await ops.list(p, r.query)) },
        POST: {
          need: 'write',
          run: (p, _a, r) => {
            // Header checks first, as the HTTP route makes them before reading the body.
            checkIdempotencyKey(r.headers['Idempotency-Key']);
            return ops.create(p, objectBody(r), r.headers['Idempotency-Key']);
          },
        },
      },
    },
    {
      pattern: /^\/breadcrumbs\/search$/,
      methods: { GET: { need: 'read', run: async (p, _a, r) => await drain(await ops.search(p, r.query)) } },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}$`),
      methods: {
        GET: { need: 'read', run: (p, a) => ops.contextView(p, p0(a)) },
        PATCH: {
          need: 'write',
          run: (p, a, r) => {
            parseIfMatch(r.headers['If-Match']);
            return ops.update(p, p0(a), objectBody(r), r.headers['If-Match']);
          },
        },
        DELETE: { need: 'write', run: (p, a) => ops.remove(p, p0(a)) },
      },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}/full$`),
      methods: { GET: { need: 'read', run: (p, a) => ops.full(p, p0(a)) } },
    },
    {
      pattern: new RegExp(`^/breadcrumbs/${id}/history$`),
      methods: { GET: { need: 'read', run: (p, a) => ops.history(p, p0(a)) } },
    },
    {
      pattern: /^\/secrets$/,
      methods: {
        GET: { need: 'curator', run: (p, _a, r) => ops.listSecrets(p, r.query) },
        POST: { need: 'curator', run: (p, _a, r) => ops.createSecret(p, objectBody(r)) },
      },
    },
    {
      pattern: new RegExp(`^/secrets/${id}$`),
      methods: { DELETE: { need: 'curator', run: (p, a) => ops.removeSecret(p, p0(a)) } },
    },
    {
      pattern: /^\/x\/leases\/([a-z]+)$/,
      methods: {
        POST: {
          need: 'write',
          run: (_p, a, r) => {
            const op = p0(a);
            if (!(LEASE_OPS as readonly string[]).includes(op))
              throw new HttpError(
                404,
                'route_not_found',
                `no lease operation ${JSON.stringify(op)} (known: ${LEASE_OPS.join(', ')})`,
              );
            deps.leaseGate(r.headers['X-Lease-Key']);
            return leases[op as LeaseOp](objectBody(r));
          },
        },
      },
    },
    {
      pattern: new RegExp(`^/secrets/${id}/decrypt$`),
      methods: { POST: { need: 'curator', run: (p, a, r) => ops.decryptSecret(p, p0(a), objectBody(r, true)) } },
    },
  ];
  const OPEN: Principal = { ownerId: '', agentId: null, roles: [], scoped: false };

  const failure = (error: unknown): LocalReply => {
    if (error instanceof HttpError)
      return { status: error.status, error: { error: error.message, code: error.code, ...error.extra } };
    // As the HTTP server answers it (store.ts): a caller retrying store trouble (the runner's
    // answer and claim writes) retries this too, instead of failing a job whose tool already ran.
    const known = deps.classify?.(error);
    if (known) return failure(known);
    throw error;
  };

  return {
    url: deps.url,
    async call(method, path, request) {
      if (!deps.running()) return failure(new HttpError(503, 'unavailable', 'the store is shutting down'));
      try {
        let match: RegExpExecArray | null = null;
        const route = routes.find((candidate) => (match = candidate.pattern.exec(path)) !== null);
        if (!route || !match) throw new HttpError(404, 'route_not_found', `no route ${JSON.stringify(path)}`);
        const entry = route.methods[method];
        if (!entry)
          throw new HttpError(
            405,
            'method_not_allowed',
            `method ${method} is not allowed on ${path} (allowed: ${Object.keys(route.methods).join(', ')})`,
          );
        let params: string[];
        try {
          params = (match as RegExpExecArray).slice(1).map((part) => decodeURIComponent(part));
        } catch {
          throw new HttpError(404, 'not_found', `malformed path ${JSON.stringify(path)}`);
        }
        let principal = OPEN;
        if (entry.need !== null) {
          principal = await auth.principalOf(request.token);
          auth.authorize(principal, entry.need);
        }
        const value = await entry.run(principal, params, request);
        if (method !== 'GET') deps.wrote?.();
        return { status: method === 'POST' && path === '/breadcrumbs' ? 201 : 200, value };
      } catch (error) {
        return failure(error);
      }
    },
    async stream(query, token, lastEventId, sink) {
      if (!deps.running()) throw failure(new HttpError(503, 'unavailable', 'the store is shutting down'));
      let close: () => void;
      try {
        const principal = await auth.principalOf(token);
        auth.authorize(principal, 'read');
        const withIds = (query.get('x_ext') ?? '').split(',').some((name) => name.trim() === 'ids');
        // Live events arrive inside the writer's call: hand them over on a later microtask, in order.
        const queue: Array<[string, string | undefined]> = [];
        let scheduled = false;
        let open = true;
        const flush = (): void => {
          scheduled = false;
          for (const [data, eventId] of queue.splice(0)) if (open) sink.frame(data, eventId);
        };
        const push = (data: string, eventId: string | undefined): void => {
          queue.push([data, eventId]);
          if (!scheduled) {
            scheduled = true;
            queueMicrotask(flush);
          }
        };
        const stop = sse.subscribe(principal, query, withIds ? lastEventId : undefined, {
          event: (event) => push(event.data, withIds ? String(event.seq) : undefined),
          gap: (data) => push(data, undefined),
          buffered: () => queue.length,
          onDrain: (resume) => setImmediate(resume),
          destroyed: () => !open,
          fail: () => {
            close();
            sink.end();
          },
        });
        const detach = sse.track(() => {
          close();
          sink.end();
        });
        close = () => {
          if (!open) return;
          open = false;
          stop();
          detach();
          queue.length = 0;
        };
      } catch (error) {
        throw failure(error);
      }
      return { close: () => close() };
    },
  };
}

export type { LocalEndpoint, LocalReply, LocalRequest, LocalStreamSink } from '../local-transport.js';
