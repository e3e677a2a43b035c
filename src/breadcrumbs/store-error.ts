// The error every store-client call throws, for the embedded store (JSON `{error, code}` bodies)
// and the upstream server (plain-text bodies) alike, mapped onto the runner's error codes.

import { ErrorCode, RunnerError } from '../errors.js';

/** A failed store call: HTTP `status` (0 for network/timeout/abort) and the store's own `storeCode`. */
export class StoreError extends RunnerError {
  readonly status: number;
  readonly storeCode: string;

  constructor(options: {
    status: number;
    storeCode: string;
    message: string;
    cause?: unknown;
    details?: Record<string, unknown>;
    code?: ErrorCode;
  }) {
    const code = options.code ?? codeForStatus(options.status);
    super(code, options.message, {
      ...(options.cause === undefined ? {} : { cause: options.cause }),
      ...(options.details === undefined ? {} : { details: options.details }),
    });
    this.name = 'StoreError';
    this.status = options.status;
    this.storeCode = options.storeCode;
  }
}

/** The runner error code of an HTTP status: network/5xx → dependency.unavailable, 409/412 → conflict... */
export function codeForStatus(status: number): ErrorCode {
  if (status === 0 || status >= 500 || status === 408) return ErrorCode.DependencyUnavailable;
  if (status === 409 || status === 412) return ErrorCode.Conflict;
  if (status === 404) return ErrorCode.NotFound;
  if (status === 401 || status === 403) return ErrorCode.PermissionDenied;
  if (status === 429) return ErrorCode.RateExceeded;
  return ErrorCode.InputInvalid;
}

const CODE_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  412: 'version_mismatch',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'invalid_body',
  429: 'rate_limited',
};

/** The store code of a reply without a JSON `code` (upstream's plain-text bodies). */
export function storeCodeForStatus(status: number): string {
  return CODE_BY_STATUS[status] ?? (status >= 500 ? 'server_error' : `http_${status}`);
}

/** Builds the StoreError of a non-2xx reply from its status and body text. */
export function errorFromResponse(method: string, path: string, status: number, text: string): StoreError {
  const message = text.trim();
  if (message.startsWith('{')) {
    try {
      return errorFromBody(method, path, status, JSON.parse(message) as Record<string, unknown>, message);
    } catch {
      // Not JSON after all: keep the text.
    }
  }
  return errorFromBody(method, path, status, undefined, message);
}

/** Builds the StoreError of a non-2xx reply from its parsed JSON body (`{error|message, code, ...details}`), or from `text` without one. */
export function errorFromBody(
  method: string,
  path: string,
  status: number,
  body: Record<string, unknown> | undefined,
  text = '',
): StoreError {
  let message = text;
  let storeCode = storeCodeForStatus(status);
  let details: Record<string, unknown> | undefined;
  if (body !== undefined) {
    if (typeof body.code === 'string' && body.code !== '') storeCode = body.code;
    if (typeof body.error === 'string') message = body.error;
    else if (typeof body.message === 'string') message = body.message;
    const { error: _e, code: _c, message: _m, ...rest } = body;
    if (Object.keys(rest).length > 0) details = rest;
  }
  if (message.length > 500) message = message.slice(0, 500) + '…';
  return new StoreError({
    status,
    storeCode,
    message: `store ${method} ${path} answered ${status} ${storeCode}${message ? `: ${message}` : ''}`,
    ...(details ? { details } : {}),
  });
}

/** True for a 409 (e.g. an Idempotency-Key already used: someone else won the create). */
export function isConflict(error: unknown): error is StoreError {
  return (
    error instanceof StoreError &&
    (error.status === 409 || (error.status === 0 ? false : error.storeCode === 'conflict'))
  );
}

/** True for a 404 / `not_found`. */
export function isNotFound(error: unknown): error is StoreError {
  return error instanceof StoreError && (error.status === 404 || error.storeCode === 'not_found');
}

/** True for a 412 / `version_mismatch` (If-Match lost the compare-and-set). */
export function isVersionMismatch(error: unknown): error is StoreError {
  return error instanceof StoreError && (error.status === 412 || error.storeCode === 'version_mismatch');
}

/** The winner's id carried by the embedded store's 409 reply to a repeated Idempotency-Key (upstream: undefined). */
export function conflictId(error: unknown): string | undefined {
  return isConflict(error) && typeof error.details?.id === 'string' ? error.details.id : undefined;
}
