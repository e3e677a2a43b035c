// One HTTP call of the store client: URL + query, bearer token, JSON body, timeout and caller
// cancellation, and the translation of every failure into a StoreError. A 401 with a minted token
// re-mints once and retries (the request was refused, so repeating it cannot duplicate anything).
// Transport: node:http(s) over a keep-alive agent — several times cheaper per call than fetch,
// which matters because the runner talks to the store for every request it serves.

import http from 'node:http';
import https from 'node:https';
import { ErrorCode } from '../errors.js';
import type { TokenSource } from './token-source.js';
import { StoreError, errorFromBody, errorFromResponse } from './store-error.js';

/** Query values; undefined ones are left out. */
export type QueryValues = Record<string, string | number | boolean | undefined>;

/** Options of one call. */
export interface CallOptions {
  query?: QueryValues;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Send the bearer token (default true). */
  auth?: boolean;
}

/** Performs store calls; resolves with the parsed JSON body (undefined when empty). */
export interface HttpCall {
  (method: string, path: string, options?: CallOptions): Promise<unknown>;
  /** Closes the keep-alive sockets. */
  close(): void;
}

/** A header value Node accepts: visible ASCII, spaces and tabs (Latin-1 is refused too: servers differ on it). */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/** Throws unless every header value is one HTTP can carry (both transports refuse the same values). */
export function checkHeaders(headers: Record<string, string | number> | undefined): void {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (typeof value === 'string' && !HEADER_VALUE.test(value))
      throw new Error(`header ${name} holds characters HTTP headers cannot carry`);
  }
}

/** Appends `query` to `path`. */
export function withQuery(path: string, query: QueryValues | undefined): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

function networkError(
  method: string,
  path: string,
  error: unknown,
  signal: AbortSignal | undefined,
  timeoutMs: number,
): StoreError {
  if (signal?.aborted) {
    return new StoreError({
      status: 0,
      storeCode: 'aborted',
      message: `store ${method} ${path} was cancelled`,
      cause: signal.reason,
    });
  }
  const name = (error as { name?: string } | null)?.name;
  if (name === 'TimeoutError') {
    return new StoreError({
      status: 0,
      storeCode: 'timeout',
      message: `store ${method} ${path} timed out after ${timeoutMs} ms`,
      cause: error,
    });
  }
  const e = error as { code?: string; message?: string } | null;
  const why = e?.code ?? e?.message ?? String(error);
  return new StoreError({
    status: 0,
    storeCode: 'network',
    message: `store ${method} ${path} failed: ${why}`,
    cause: error,
  });
}

/** Builds the call function for `baseUrl`. */
export function createHttpCall(options: { baseUrl: string; tokens: TokenSource; timeoutMs: number }): HttpCall {
  const { baseUrl, tokens, timeoutMs } = options;

  const secure = baseUrl.startsWith('https:');
  // Parsed once: handing http.request a URL string would re-parse it on every call.
  const target = new URL(baseUrl);
  const base = {
    protocol: target.protocol,
    hostname: target.hostname.replace(/^\[|\]$/g, ''),
    port: target.port,
    prefix: target.pathname.replace(/\/+$/, ''),
  };
  // Idle sockets are dropped after 4 s, before common server keep-alive timeouts (Node: 5 s) close them under us.
  const agentOptions = { keepAlive: true, maxSockets: 64, timeout: 4000 };
  const agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const request = secure ? https.request : http.request;

  // `retryStale`: a GET whose reused keep-alive socket turns out closed by the server (reset before
  // any reply) is sent once more on a fresh socket, as Node's docs advise. Writes never are: the
  // caller owns their retry semantics (Idempotency-Key, If-Match).
  const once = (
    method: string,
    path: string,
    call: CallOptions,
    token: string | undefined,
    retryStale: boolean,
  ): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { Accept: 'application/json', ...call.headers };
      if (token !== undefined) headers.Authorization = `Bearer ${token}`;
      let body: string | undefined;
      let req: http.ClientRequest;
      try {
        checkHeaders(headers);
        if (call.body !== undefined) {
          body = JSON.stringify(call.body);
          headers['Content-Type'] = 'application/json';
          headers['Content-Length'] = Buffer.byteLength(body);
        }
        const target = {
          protocol: base.protocol,
          hostname: base.hostname,
          port: base.port,
          path: base.prefix + withQuery(path, call.query),
          method,
          headers,
          agent,
        };
        req = request(target);
      } catch (error) {
        // Nothing was sent: a local refusal (unsendable header, unserialisable body), never retried.
        reject(
          new StoreError({
            status: 0,
            storeCode: 'unsendable',
            code: ErrorCode.InputInvalid,
            message: `store ${method} ${path} was not sent: ${(error as Error).message}`,
            cause: error,
          }),
        );
        return;
      }
      const signal = call.signal;
      let settled = false;
      let responded = false;
      const fail = (error: unknown): void => {
        if (settled) return;
        settled = true;
        cleanup();
        req.destroy();
        const code = (error as { code?: string } | null)?.code;
        if (retryStale && req.reusedSocket && !responded && (code === 'ECONNRESET' || code === 'EPIPE')) {
          resolve(once(method, path, call, token, false));
          return;
        }
        reject(networkError(method, path, error, signal, timeoutMs));
      };
      const onAbort = (): void => fail(signal?.reason);
      const timer = setTimeout(
        () => fail(Object.assign(new Error(`timed out after ${timeoutMs} ms`), { name: 'TimeoutError' })),
        timeoutMs,
      );
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      req.on('response', (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', fail);
        res.on('close', () => {
          if (!res.complete) fail(new Error('connection closed before the reply was complete'));
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          cleanup();
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.on('error', fail);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(body);
    });

  return withRetryOnRefusedToken(
    tokens,
    (method, path, call, token) => once(method, path, call, token, method === 'GET' || method === 'HEAD'),
    () => agent.destroy(),
  );
}

/** A reply: HTTP's status and body text, or the in-process transport's status with its value or `{error, code}` failure body. */
export type Reply =
  | { status: number; text: string }
  | { status: number; value: unknown }
  | { status: number; error: Record<string, unknown> };

/** One attempt of a call with a given token. */
export type SendOnce = (method: string, path: string, call: CallOptions, token: string | undefined) => Promise<Reply>;

/** Wraps `send` into a call: bearer token, one re-mint and retry after a 401, StoreError for non-2xx, JSON parsing. */
export function withRetryOnRefusedToken(tokens: TokenSource, send: SendOnce, close: () => void): HttpCall {
  const perform: HttpCall = Object.assign(
    async (method: string, path: string, call: CallOptions = {}): Promise<unknown> => {
      const useAuth = call.auth !== false;
      let token = useAuth ? await tokens.get() : undefined;
      let reply = await send(method, path, call, token);
      if (reply.status === 401 && token !== undefined && tokens.renewable) {
        tokens.invalidate(token);
        token = await tokens.get();
        reply = await send(method, path, call, token);
      }
      if ('error' in reply) throw errorFromBody(method, path, reply.status, reply.error);
      if ('value' in reply) return reply.value;
      if (reply.status < 200 || reply.status >= 300) throw errorFromResponse(method, path, reply.status, reply.text);
      if (reply.text.trim() === '') return undefined;
      try {
        return JSON.parse(reply.text) as unknown;
      } catch (error) {
        throw new StoreError({
          status: reply.status,
          storeCode: 'invalid_response',
          code: ErrorCode.DependencyUnavailable,
          message: `store ${method} ${path} answered ${reply.status} with a body that is not JSON`,
          cause: error,
        });
      }
    },
    { close },
  );
  return perform;
}
