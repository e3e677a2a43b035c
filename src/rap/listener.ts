// The RAP listener (its own address: `--rap-host`, `--rap-port`): the tool server's routes and the
// runtime's result callbacks.
//
//   GET  /.well-known/rap-toolset   the served toolset            (tool server)
//   POST /invoke                    an invocation; 200 = recorded (tool server)
//   POST /cancel_tool_call          200 once authenticated        (tool server)
//   POST /close_thread              200 once authenticated        (tool server)
//   POST /callback/<token>          a tool_result for one call    (runtime)
//
// The three POSTs of the tool server pass the gate of src/rap/auth.ts first (bearer token of
// --rap-tokens → the caller; without tokens: loopback Host, no Origin).
// Errors are `{error, code}` with a 4xx naming the offending value; a fault inside a route is a
// logged 500 and the listener keeps serving.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import { listenUrl } from '../store/server-util.js';
import type { RapAuth } from './auth.js';
import type { RapCaller } from './caller.js';
import { HttpError, readJson, sendError, sendJson, type BodyCodes } from '../http.js';
import type { RapToolServer } from './tool-server.js';
import { WELL_KNOWN_PATH } from './toolset.js';

/** Inputs of the listener; either part may be absent. */
export interface RapListenerOptions {
  host: string;
  port: number;
  logger: Logger;
  maxBodyBytes: number;
  toolServer?: () => RapToolServer | undefined;
  /** The gate of the tool server's POSTs (required when a tool server is given). */
  auth?: RapAuth;
  caller?: () => RapCaller | undefined;
}

/** A listening RAP listener. */
export interface RapListener {
  url: string;
  close(): Promise<void>;
}

/** RAP names a malformed body `input.invalid`. */
const RAP_BODY: BodyCodes = { invalidJson: 'input.invalid' };

const TOOL_SERVER_POSTS = new Set(['/invoke', '/cancel_tool_call', '/close_thread']);

/** Starts the listener; resolves once it listens. */
export async function startRapListener(options: RapListenerOptions): Promise<RapListener> {
  const { logger } = options;

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const server = options.toolServer?.();
    const caller = options.caller?.();
    const method = req.method ?? 'GET';
    const known =
      (server && (path === WELL_KNOWN_PATH || TOOL_SERVER_POSTS.has(path))) ||
      (caller && path.startsWith('/callback/'));
    if (!known) throw new HttpError(404, 'not_found', `no route ${path}`);
    const expected = path === WELL_KNOWN_PATH ? 'GET' : 'POST';
    if (method !== expected && !(expected === 'GET' && method === 'HEAD')) {
      res.setHeader('allow', expected);
      throw new HttpError(405, 'method_not_allowed', `method ${method} not allowed on ${path}; use ${expected}`);
    }
    if (server && path === WELL_KNOWN_PATH) return sendJson(res, 200, server.toolset());
    if (server && TOOL_SERVER_POSTS.has(path)) {
      if (!options.auth) throw new HttpError(500, 'internal', 'the RAP tool server has no gate');
      const principal = options.auth.authenticate(req);
      if (path === '/invoke')
        return sendJson(
          res,
          200,
          await server.invoke(await readJson(req, res, options.maxBodyBytes, RAP_BODY), principal),
        );
      // Always 200 (RAP): a malformed body cancels nothing.
      const body = await readJson(req, res, options.maxBodyBytes, RAP_BODY).catch(() => undefined);
      const outcome =
        path === '/cancel_tool_call' ? await server.cancel(body, principal) : await server.closeThread(body, principal);
      return sendJson(res, 200, { ok: true, ...outcome });
    }
    const token = path.slice('/callback/'.length);
    return sendJson(res, 200, caller!.callback(token, await readJson(req, res, options.maxBodyBytes, RAP_BODY)));
  };

  const server: Server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.end();
      if (error instanceof HttpError) {
        const challenge = error.status === 401 ? { 'WWW-Authenticate': 'Bearer realm="tools-runner-rap"' } : undefined;
        return sendError(res, error, challenge);
      }
      logger.error('rap request failed', { error, path: req.url });
      sendJson(res, 500, { error: 'internal error', code: 'internal' });
    });
  });
  server.requestTimeout = 60_000;
  const url = await listenUrl(server, options.port, options.host);
  options.auth?.setPort(Number(new URL(url).port));
  return {
    url,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
