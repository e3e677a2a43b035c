// The admin port: `/health` (JSON; 503 unless RUNNING), `/metrics` (Prometheus text) and `/live`
// (WebSocket: one JSON message per execution start/finish, for `tools-runner tail`), plus the
// routes service extensions add (e.g. `/mcp`), which handle every method themselves, and the web
// console (`/`, `/api/*`, src/console). EVERY request, extension routes and the `/live` upgrade
// included, passes the one access guard (src/console/access.ts) before anything else sees it: the
// Host must name this port when no token is set (DNS rebinding), a present Origin must be this
// port's own, and the admin token is required everywhere but `/health` when one is set; a
// non-loopback bind without a token is refused at start.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { createAccessGuard, validateAdminHosts, type Refusal } from '../console/access.js';
import { loginPage, nonLoopbackWithoutToken, SECURITY_HEADERS } from '../console/http.js';
import { HttpError, isLoopbackHost, readBody, sendError } from '../http.js';
import { listenUrl } from '../store/server-util.js';
import type { AdminRoute } from '../extension.js';
import type { Logger } from '../logger.js';
import type { Metrics } from './metrics.js';

export interface LiveMessage {
  type: 'execution:started' | 'execution:progress' | 'execution:finished' | 'execution:ended';
  ts: string;
  [key: string]: unknown;
}

export type { AdminRoute, AdminRouteContext } from '../extension.js';

export interface AdminServerOptions {
  host: string;
  port: number;
  logger: Logger;
  metrics: Metrics;
  /** Health document; `ok` decides 200 vs 503. */
  health(): { ok: boolean; [key: string]: unknown };
  /** Extra routes by exact path. */
  routes?: ReadonlyMap<string, AdminRoute>;
  /** When set, every route but `/health` requires it; without it only loopback binds are allowed. */
  adminToken?: string;
  /** Extra Host names the port answers to without a token (`--admin-hosts`: `name` or `name:port`). */
  adminHosts?: readonly string[];
  /** The web console (pages and /api); served behind the access guard. */
  console?: { handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> };
}

export interface AdminServer {
  url: string;
  /** Sends a message to every connected live client (slow clients are dropped). */
  broadcast(message: LiveMessage): void;
  close(): Promise<void>;
}

const MAX_CLIENT_BUFFER = 1024 * 1024;

/** Starts the admin server; resolves once it listens. */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const { logger, metrics } = options;
  if (!isLoopbackHost(options.host) && options.adminToken === undefined) throw nonLoopbackWithoutToken(options.host);
  if (options.adminToken !== undefined) logger.redact(options.adminToken);
  const guard = createAccessGuard({ token: options.adminToken, hosts: validateAdminHosts(options.adminHosts ?? []) });
  /** The console's paths. */
  const consolePath = (path: string): boolean =>
    path === '/' ||
    path === '/index.html' ||
    path === '/login' ||
    path.startsWith('/api/') ||
    path.startsWith('/assets/');
  const refuse = (req: IncomingMessage, res: ServerResponse, refusal: Refusal): void => {
    const wantsPage = req.method === 'GET' && (req.headers.accept ?? '').includes('text/html');
    if (wantsPage && refusal.status === 401) {
      res
        .writeHead(401, {
          ...SECURITY_HEADERS,
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
        })
        .end(loginPage(undefined));
      return;
    }
    const challenge = refusal.status === 401 ? { 'www-authenticate': 'Bearer realm="tools-runner"' } : {};
    res
      .writeHead(refusal.status, { ...SECURITY_HEADERS, ...challenge, 'content-type': 'application/json' })
      .end(JSON.stringify({ error: refusal.message, code: refusal.code }));
  };
  /** POST /login (form): the admin token in, a session cookie out. */
  const login = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const token = new URLSearchParams(await readBody(req, res, 4096)).get('token') ?? '';
    if (!guard.tokenMatches(token)) {
      logger.warn('console login refused', { remote: req.socket.remoteAddress });
      res
        .writeHead(401, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8' })
        .end(
          loginPage(
            guard.tokenRequired
              ? 'That is not the admin token.'
              : 'This admin port has no token configured; nothing to log in to.',
          ),
        );
      return;
    }
    res.writeHead(303, { ...SECURITY_HEADERS, 'set-cookie': guard.sessionCookie(), location: '/' }).end();
  };
  const wss = new WebSocketServer({ noServer: true });
  const clients = new Set<WebSocket>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const mutating = req.method !== 'GET' && req.method !== 'HEAD';
    // The login form checks the token itself; /health is open to probes (but not to other hosts or origins).
    const tokenFree = (path === '/login' && req.method === 'POST') || path === '/health';
    // An extension route may stream on GET (MCP's SSE): treat every method there as state-changing.
    const route = options.routes?.get(path);
    const refusal = guard.check(req, { mutating: mutating || route !== undefined, token: !tokenFree });
    if (refusal) return route?.refuse ? route.refuse(res, refusal) : refuse(req, res, refusal);
    if (route) {
      const allowList = guard.exactAllowList();
      await route(req, res, allowList ? { allowList } : {});
      return;
    }
    if (consolePath(path)) {
      if (path === '/login' && req.method === 'POST') return login(req, res);
      if (options.console && (await options.console.handle(req, res, path))) return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res
        .writeHead(405, { 'content-type': 'application/json', allow: 'GET' })
        .end(JSON.stringify({ error: `method ${req.method} not allowed`, code: 'method_not_allowed' }));
      return;
    }
    if (path === '/health') {
      const doc = options.health();
      res.writeHead(doc.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
      return;
    }
    if (path === '/metrics') {
      const text = await metrics.registry.metrics();
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text);
      return;
    }
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end(JSON.stringify({ error: `no route ${path}`, code: 'not_found' }));
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof HttpError) return sendError(res, error, SECURITY_HEADERS);
      logger.error('admin request failed', { error });
      sendError(res, new HttpError(500, 'internal', 'internal error'), SECURITY_HEADERS);
    });
  });
  server.on('upgrade', (req, socket, head) => {
    if ((req.url ?? '').split('?')[0] !== '/live') {
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
      return;
    }
    const refusal = guard.check(req, { mutating: true });
    if (refusal) {
      const body = JSON.stringify({ error: refusal.message, code: refusal.code });
      socket.end(
        `HTTP/1.1 ${refusal.status} ${refusal.status === 401 ? 'Unauthorized' : refusal.status === 403 ? 'Forbidden' : 'Bad Request'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      clients.add(ws);
      ws.on('close', () => clients.delete(ws));
      ws.on('error', () => clients.delete(ws));
    });
  });
  const url = await listenUrl(server, options.port, options.host);
  guard.setPort(Number(new URL(url).port));

  return {
    url,
    broadcast(message) {
      if (clients.size === 0) return;
      const text = JSON.stringify(message);
      for (const ws of clients) {
        if (ws.bufferedAmount > MAX_CLIENT_BUFFER) {
          ws.terminate();
          clients.delete(ws);
          continue;
        }
        ws.send(text);
      }
    },
    async close() {
      for (const ws of clients) ws.close(1001, 'runner stopping');
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
