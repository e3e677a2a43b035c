// One HTTP call of the store client: URL + query, bearer token, JSON body, timeout and caller
// cancellation, and the translation of every failure into a StoreError. A 401 with a minted token
// re-mints once and retries (the request was refused, so repeating it cannot duplicate anything).

import { ErrorCode } from '../errors.js';
import type { TokenSource } from './token-source.js';
import { StoreError, errorFromResponse } from './store-error.js';

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
export type HttpCall = (method: string, path: string, options?: CallOptions) => Promise<unknown>;

/** Appends `query` to `path`. */
export function withQuery(path: string, query: QueryValues | undefined): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

function networkError(method: string, path: string, error: unknown, signal: AbortSignal | undefined, timeoutMs: number): StoreError {
  if (signal?.aborted) {
    return new StoreError({ status: 0, storeCode: 'aborted', message: `store ${method} ${path} was cancelled`, cause: signal.reason });
  }
  const name = (error as { name?: string } | null)?.name;
  if (name === 'TimeoutError') {
    return new StoreError({ status: 0, storeCode: 'timeout', message: `store ${method} ${path} timed out after ${timeoutMs} ms`, cause: error });
  }
  const cause = (error as { cause?: { code?: string; message?: string } } | null)?.cause;
  const why = cause?.code ?? cause?.message ?? (error as Error | null)?.message ?? String(error);
  return new StoreError({ status: 0, storeCode: 'network', message: `store ${method} ${path} failed: ${why}`, cause: error });
}

/** Builds the call function for `baseUrl`. */
export function createHttpCall(options: { baseUrl: string; tokens: TokenSource; timeoutMs: number }): HttpCall {
  const { baseUrl, tokens, timeoutMs } = options;

  const once = async (method: string, path: string, call: CallOptions, token: string | undefined): Promise<{ status: number; text: string }> => {
    const headers: Record<string, string> = { Accept: 'application/json', ...call.headers };
    if (token !== undefined) headers.Authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers['Content-Type'] = 'application/json';
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    try {
      const response = await fetch(baseUrl + withQuery(path, call.query), { method, headers, body, signal });
      return { status: response.status, text: await response.text() };
    } catch (error) {
      throw networkError(method, path, error, call.signal, timeoutMs);
    }
  };

  return async (method, path, call = {}) => {
    const useAuth = call.auth !== false;
    let token = useAuth ? await tokens.get() : undefined;
    let reply = await once(method, path, call, token);
    if (reply.status === 401 && token !== undefined && tokens.renewable) {
      tokens.invalidate(token);
      token = await tokens.get();
      reply = await once(method, path, call, token);
    }
    if (reply.status < 200 || reply.status >= 300) throw errorFromResponse(method, path, reply.status, reply.text);
    if (reply.text.trim() === '') return undefined;
    try {
      return JSON.parse(reply.text) as unknown;
    } catch (error) {
      throw new StoreError({ status: reply.status, storeCode: 'invalid_response', code: ErrorCode.DependencyUnavailable, message: `store ${method} ${path} answered ${reply.status} with a body that is not JSON`, cause: error });
    }
  };
}
