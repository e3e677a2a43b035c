// The in-process transport of the store client: calls go straight to the embedded store's local
// endpoint (store/local.ts) — no socket, no HTTP, no reply parsing — through the same wrapper as
// HTTP (token, 401 re-mint, StoreError building), so both transports fail with the same errors.
// Bodies are copied as JSON would carry them (undefined fields dropped, toJSON applied), so
// neither side can touch the other's objects; replies are fresh objects built by the store.
// The protocol types live in src/local-transport.ts: breadcrumbs/ does not import store/.

import { ErrorCode } from '../errors.js';
import {
  checkHeaders,
  withQuery,
  withRetryOnRefusedToken,
  type CallOptions,
  type HttpCall,
  type QueryValues,
} from './client-http.js';
import { StoreError } from './store-error.js';
import type { LocalEndpoint } from '../local-transport.js';
import type { TokenSource } from './token-source.js';

/** Copies `value` exactly as JSON.stringify + JSON.parse would carry it; undefined for undefined. */
export function jsonCopy(value: unknown): unknown {
  if (value === undefined) return undefined;
  const text = JSON.stringify(value);
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}

/** The query of `query` as the store parses it from a URL. */
export function searchParams(query: QueryValues | undefined): URLSearchParams {
  const path = withQuery('', query);
  return new URLSearchParams(path.startsWith('?') ? path.slice(1) : '');
}

/** Builds the call function over `endpoint`. */
export function createLocalCall(endpoint: LocalEndpoint, tokens: TokenSource): HttpCall {
  return withRetryOnRefusedToken(
    tokens,
    async (method: string, path: string, call: CallOptions, token: string | undefined) => {
      let body: unknown;
      try {
        checkHeaders(call.headers);
        body = jsonCopy(call.body);
      } catch (error) {
        throw new StoreError({
          status: 0,
          storeCode: 'unsendable',
          code: ErrorCode.InputInvalid,
          message: `store ${method} ${path} was not sent: ${(error as Error).message}`,
          cause: error,
        });
      }
      if (call.signal?.aborted) {
        throw new StoreError({
          status: 0,
          storeCode: 'aborted',
          message: `store ${method} ${path} was cancelled`,
          cause: call.signal.reason,
        });
      }
      return endpoint.call(method, path, {
        query: searchParams(call.query),
        headers: { ...call.headers },
        body,
        token,
      });
    },
    () => {},
  );
}

export type { LocalEndpoint, LocalReply, LocalRequest, LocalStreamSink } from '../local-transport.js';
