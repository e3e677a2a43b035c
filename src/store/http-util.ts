// Small HTTP helpers of the embedded store: JSON replies, `{error, code}` failures, and a request
// body reader that enforces the size cap while reading (never buffering more than the cap).

import type { IncomingMessage, ServerResponse } from 'node:http';

/** An expected request failure: becomes a JSON `{error, code}` reply with `status`. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(status: number, code: string, message: string, extra?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.extra = extra;
    this.headers = headers;
  }
}

/** Shorthand constructors for the failures every route shares. */
export const httpErrors = {
  invalidBody: (message: string) => new HttpError(400, 'invalid_body', message),
  invalidQuery: (message: string) => new HttpError(400, 'invalid_query', message),
  notFound: (message: string) => new HttpError(404, 'not_found', message),
  unauthorized: (message: string) => new HttpError(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer' }),
  forbidden: (message: string) => new HttpError(403, 'forbidden', message),
};

/** Writes a JSON reply (status 200 unless given). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Writes the JSON failure body of an HttpError. */
export function sendError(res: ServerResponse, error: HttpError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, error.status, { error: error.message, code: error.code, ...error.extra }, error.headers);
}

/**
 * Reads the whole body as UTF-8, rejecting with 413 as soon as more than `maxBytes` arrive (or
 * when Content-Length already announces more). After a 413 the connection is marked to close, the
 * rest of the upload is discarded unread, so the client still gets the reply.
 */
export function readBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const tooLarge = (): void => {
      done = true;
      chunks.length = 0;
      res.shouldKeepAlive = false;
      req.removeListener('data', onData);
      req.resume();
      reject(new HttpError(413, 'payload_too_large', `request body exceeds the limit of ${maxBytes} bytes`));
    };
    const onData = (chunk: Buffer): void => {
      if (done) return;
      size += chunk.length;
      if (size > maxBytes) tooLarge();
      else chunks.push(chunk);
    };
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      tooLarge();
      return;
    }
    req.on('data', onData);
    req.once('end', () => {
      if (done) return;
      done = true;
      resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    req.once('close', () => {
      if (done) return;
      done = true;
      reject(new HttpError(400, 'request_aborted', 'request aborted by the client before its body was complete'));
    });
    req.once('error', (error) => {
      if (done) return;
      done = true;
      reject(error);
    });
  });
}

/** Parses a request body that must be a JSON object; 400 `invalid_json` / `invalid_body` otherwise. */
export function parseJsonObject(text: string): Record<string, unknown> {
  if (text.trim() === '') throw new HttpError(400, 'invalid_json', 'request body is empty; expected a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'invalid_json', `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw httpErrors.invalidBody(`request body must be a JSON object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/** A short description of a JSON value's type for messages (`array`, `null`, `string`...). */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Whether `host` is a loopback address (auth may be off only there). */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h);
}
