// Small HTTP helpers of the RAP listener: JSON replies, a capped JSON body reader, and the error
// type routes throw to answer a 4xx with `{error, code}`.

import type { IncomingMessage, ServerResponse } from 'node:http';

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

/** Reads the body (at most `maxBytes`) and parses it as JSON; RapHttpError 413/400 otherwise. */
export async function readJson(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<unknown> {
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const tooLarge = (): void => {
      done = true;
      chunks.length = 0;
      // Discard the rest unread (the client still gets the 413) and close the connection after it.
      res.shouldKeepAlive = false;
      req.removeListener('data', onData);
      req.resume();
      reject(new RapHttpError(413, 'payload_too_large', `request body exceeds the limit of ${maxBytes} bytes`));
    };
    const onData = (chunk: Buffer): void => {
      if (done) return;
      size += chunk.length;
      if (size > maxBytes) tooLarge();
      else chunks.push(chunk);
    };
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) return tooLarge();
    req.on('data', onData);
    req.once('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.once('error', (error) => {
      if (done) return;
      done = true;
      reject(error);
    });
  });
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
