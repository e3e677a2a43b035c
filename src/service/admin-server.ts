// The admin port: `/health` (JSON; 503 unless RUNNING), `/metrics` (Prometheus text) and `/live`
// (WebSocket: one JSON message per execution start/finish, for `tools-runner tail`), plus the
// routes service extensions add (e.g. `/mcp`), which handle every method themselves.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../logger.js';
import type { Metrics } from './metrics.js';

export interface LiveMessage {
  type: 'execution:started' | 'execution:finished';
  ts: string;
  [key: string]: unknown;
}

/** A route an extension serves on the admin port (any method; it writes the whole response). */
export type AdminRoute = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface AdminServerOptions {
  host: string;
  port: number;
  logger: Logger;
  metrics: Metrics;
  /** Health document; `ok` decides 200 vs 503. */
  health(): { ok: boolean; [key: string]: unknown };
  /** Extra routes by exact path. */
  routes?: ReadonlyMap<string, AdminRoute>;
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
  const wss = new WebSocketServer({ noServer: true });
  const clients = new Set<WebSocket>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = options.routes?.get(path);
    if (route) {
      await route(req, res);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'application/json', allow: 'GET' }).end(JSON.stringify({ error: `method ${req.method} not allowed`, code: 'method_not_allowed' }));
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
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `no route ${path}`, code: 'not_found' }));
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.error('admin request failed', { error });
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'internal error', code: 'internal' }));
    });
  });
  server.on('upgrade', (req, socket, head) => {
    if ((req.url ?? '').split('?')[0] !== '/live') {
      socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      clients.add(ws);
      ws.on('close', () => clients.delete(ws));
      ws.on('error', () => clients.delete(ws));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}`,
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
