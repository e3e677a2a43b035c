// MCP over Streamable HTTP at `/mcp` on the admin port (stateful: one SDK server + transport per
// session, keyed by `Mcp-Session-Id`).
//
// Gate: the admin port's access guard has already checked the Host (without a token: only this
// port's own names, against DNS rebinding), the Origin (present and not this port's own → 403, as
// the MCP spec asks) and the token. Here again, before the SDK sees a request: with an admin token,
// `Authorization: Bearer <token>` (constant-time compare; else 401 + WWW-Authenticate); a browser
// `Origin` other than the server's own → 403. And the SDK's own DNS-rebinding protection is on,
// with the guard's exact allow-lists of Host values and Origins (when no token is set). Sessions: POST without a
// session id starts one (the SDK accepts only `initialize` there); an unknown id → 404 (the client
// re-initialises); at most MAX_SESSIONS live sessions, the least recently used is closed to make
// room; a session idle for IDLE_MS is closed.

import { randomUUID, timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Logger } from '../logger.js';
import type { McpBridge } from './bridge.js';
import { discoverRequestId, discoverResult } from './discover.js';
import { createMcpSession, IDENTITY } from './server.js';

/** Most concurrent sessions. */
export const MAX_SESSIONS = 256;
/** A session unused this long is closed. */
export const IDLE_MS = 30 * 60_000;

export interface McpHttpOptions {
  bridge: McpBridge;
  logger: Logger;
  progressMs: number;
  /** Bearer token required on every request when set. */
  token?: string;
}

/** The exact Host values and Origins the admin port allows without a token (AdminRouteContext). */
export interface McpAllowList {
  hosts: string[];
  origins: string[];
}

export interface McpHttpHandler {
  /** Serves one request; `allowList` switches the SDK's DNS-rebinding protection on with those values. */
  handle(req: IncomingMessage, res: ServerResponse, allowList?: McpAllowList): Promise<void>;
  /** Live sessions. */
  sessions(): number;
  close(): Promise<void>;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  lastUsed: number;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function jsonRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  res
    .writeHead(status, { 'content-type': 'application/json', ...headers })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Writes a refusal of the admin port's guard as MCP clients expect it (JSON-RPC error; 401 with a Bearer challenge). */
export function refuseMcp(res: ServerResponse, refusal: { status: number; message: string }): void {
  jsonRpcError(
    res,
    refusal.status,
    refusal.status === 401 ? -32001 : -32000,
    refusal.message,
    refusal.status === 401 ? { 'www-authenticate': 'Bearer realm="tools-runner"' } : {},
  );
}

/** Whether a browser Origin is the server itself (same host:port as the request's Host). */
function sameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false;
  }
}

/** Largest body a session-less POST may have (it is read before the SDK sees it). */
const MAX_START_BODY = 1024 * 1024;

/** Reads and parses a JSON body of at most MAX_START_BODY bytes. */
async function readJsonBody(
  req: IncomingMessage,
): Promise<{ ok: true; value: unknown } | { ok: false; status: number; message: string }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_START_BODY)
      return { ok: false, status: 413, message: `request body is larger than ${MAX_START_BODY} bytes` };
    chunks.push(chunk);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch (error) {
    return { ok: false, status: 400, message: `Parse error: ${(error as Error).message}` };
  }
}

/** Creates the `/mcp` handler. */
export function createMcpHttpHandler(options: McpHttpOptions): McpHttpHandler {
  const { bridge, logger, progressMs } = options;
  const tokenDigest = options.token !== undefined ? digest(`Bearer ${options.token}`) : undefined;
  const sessions = new Map<string, Session>();
  const log = logger.child({ component: 'mcp-http' });

  const closeSession = (id: string, why: string): void => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    log.info('MCP session closed', { session: id, why });
    void session.transport.close().catch(() => undefined);
  };

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, session] of sessions) if (now - session.lastUsed > IDLE_MS) closeSession(id, 'idle');
  }, 60_000);
  sweep.unref();

  const start = async (
    req: IncomingMessage,
    res: ServerResponse,
    allowList: McpAllowList | undefined,
    body: unknown,
  ): Promise<void> => {
    if (sessions.size >= MAX_SESSIONS) {
      let oldest: [string, Session] | undefined;
      for (const entry of sessions) if (!oldest || entry[1].lastUsed < oldest[1].lastUsed) oldest = entry;
      if (oldest) closeSession(oldest[0], 'session limit');
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // Belt and braces behind the admin guard: the SDK checks every request of the session itself.
      // (Without a token only; with one, any Host that brings the token is fine.)
      ...(allowList
        ? { enableDnsRebindingProtection: true, allowedHosts: allowList.hosts, allowedOrigins: allowList.origins }
        : {}),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, lastUsed: Date.now() });
        log.info('MCP session started', { session: id });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    const server = createMcpSession({ bridge, logger: log, progressMs });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    // Anything but a successful initialize leaves no session: drop the server again.
    if (transport.sessionId === undefined || !sessions.has(transport.sessionId)) await server.close();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, allowList?: McpAllowList): Promise<void> => {
    if (tokenDigest) {
      const given = req.headers.authorization;
      if (given === undefined || !timingSafeEqual(digest(given), tokenDigest)) {
        jsonRpcError(
          res,
          401,
          -32001,
          given === undefined
            ? 'the MCP endpoint requires "Authorization: Bearer <admin token>"'
            : 'the bearer token is not the admin token',
          { 'www-authenticate': 'Bearer realm="tools-runner"' },
        );
        return;
      }
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !sameOrigin(origin, req.headers.host)) {
      jsonRpcError(
        res,
        403,
        -32000,
        `requests from the web origin ${JSON.stringify(origin.slice(0, 200))} are not allowed`,
      );
      return;
    }
    const header = req.headers['mcp-session-id'];
    const id = Array.isArray(header) ? header[0] : header;
    if (id === undefined) {
      if (req.method !== 'POST') {
        jsonRpcError(
          res,
          400,
          -32000,
          `${req.method} /mcp needs an Mcp-Session-Id header (start a session with POST initialize)`,
        );
        return;
      }
      const body = await readJsonBody(req);
      if (!body.ok) {
        jsonRpcError(res, body.status, body.status === 413 ? -32600 : -32700, body.message);
        return;
      }
      // server/discover needs no session (revision 2026-07-28 clients send it first).
      const discoverId = discoverRequestId(body.value);
      if (discoverId !== undefined) {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: discoverId, result: discoverResult(IDENTITY) }));
        return;
      }
      await start(req, res, allowList, body.value);
      return;
    }
    const session = sessions.get(id);
    if (!session) {
      jsonRpcError(
        res,
        404,
        -32001,
        `no MCP session ${JSON.stringify(id.slice(0, 100))} (expired or closed); initialize a new one`,
      );
      return;
    }
    session.lastUsed = Date.now();
    await session.transport.handleRequest(req, res);
  };

  return {
    handle,
    sessions: () => sessions.size,
    async close() {
      clearInterval(sweep);
      for (const id of [...sessions.keys()]) closeSession(id, 'server stopping');
    },
  };
}
