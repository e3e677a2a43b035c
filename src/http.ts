// The one set of HTTP helpers of every listener we run (the embedded store, the admin port and its
// console, the RAP listener, MCP over HTTP): the error a route throws to answer `{error, code}`, JSON
// replies, and a request body reader that enforces the size cap while reading (never buffering more).

import type { IncomingMessage, ServerResponse } from 'node:http';

/** An expected request failure: becomes a JSON `{error, code}` reply with `status` (and `extra` fields, `headers`). */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    status: number,
    code: string,
    message: string,
    extra?: Record<string, unknown>,
    headers?: Record<string, string>,
  ) {
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
  unauthorized: (message: string) =>
    new HttpError(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer' }),
  forbidden: (message: string) => new HttpError(403, 'forbidden', message),
};

/** Writes a JSON reply with `status` (and extra `headers`: a listener's security headers, a challenge). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers?: Readonly<Record<string, string>>,
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Writes the JSON failure body of an HttpError (or drops the connection when a reply already started). */
export function sendError(res: ServerResponse, error: HttpError, headers?: Readonly<Record<string, string>>): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, error.status, { error: error.message, code: error.code, ...error.extra }, { ...headers, ...error.headers });
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

/** The codes a listener answers a malformed body with (its protocol's names). */
export interface BodyCodes {
  /** Empty or not JSON (default `invalid_json`). */
  readonly invalidJson?: string;
  /** JSON, but not an object where one is required (default `invalid_body`). */
  readonly notObject?: string;
}

/** Parses a request body as JSON; HttpError 400 (`codes.invalidJson`) when it is empty or not JSON. */
export function parseJson(text: string, codes: BodyCodes = {}): unknown {
  const code = codes.invalidJson ?? 'invalid_json';
  if (text.trim() === '') throw new HttpError(400, code, 'request body is empty; expected a JSON object');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError(400, code, `request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** Parses a request body that must be a JSON object; HttpError 400 otherwise. */
export function parseJsonObject(text: string, codes: BodyCodes = {}): Record<string, unknown> {
  const value = parseJson(text, codes);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(
      400,
      codes.notObject ?? 'invalid_body',
      `request body must be a JSON object, got ${describe(value)}`,
    );
  }
  return value as Record<string, unknown>;
}

/** Reads (at most `maxBytes`) and parses a JSON body; HttpError 413/400 otherwise. */
export async function readJson(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  codes: BodyCodes = {},
): Promise<unknown> {
  return parseJson(await readBody(req, res, maxBytes), codes);
}

/** A short description of a JSON value's type for messages (`array`, `null`, `string`...). */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * Whether `host` (a bind address or a URL hostname, brackets and a trailing dot allowed) is a
 * loopback name or address: `localhost` and its subdomains, 127/8, ::1, and IPv4-mapped 127/8.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  return (
    h === 'localhost' ||
    h.endsWith('.localhost') ||
    h === '::1' ||
    /^127(\.\d{1,3}){3}$/.test(h) ||
    /^::ffff:127(\.\d{1,3}){3}$/.test(h) ||
    /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(h)
  );
}
