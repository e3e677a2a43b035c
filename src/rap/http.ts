// Small HTTP helpers of the RAP listener: JSON replies, a capped JSON body reader, and the error
// type routes throw to answer a 4xx with `{error, code}`.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, readBody } from '../store/http-util.js';

/** An answer other than 200: status, stable code, message naming the offending value. */
export class RapHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'RapHttpError';
  }
}

/** Writes a JSON reply. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

/** Reads the body (at most `maxBytes`, with the store's reader) and parses it as JSON; RapHttpError 413/400 otherwise. */
export async function readJson(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<unknown> {
  let text: string;
  try {
    text = await readBody(req, res, maxBytes);
  } catch (error) {
    if (error instanceof HttpError) throw new RapHttpError(error.status, error.code, error.message);
    throw error;
  }
  if (text.trim() === '') throw new RapHttpError(400, 'input.invalid', 'request body is empty; expected a JSON object');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new RapHttpError(400, 'input.invalid', `request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** Whether `host` (a URL hostname, brackets allowed) is a loopback name or address. */
export function isLoopback(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h) || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(h);
}
