// Writes a listing cursor as one JSON array, progressively: rows are serialised into chunks of
// about CHUNK_BYTES, each chunk is written, and the next row is read only once the socket has
// room again ('drain') — so the store holds one chunk of a listing in memory, whatever its size.
// A listing that fits in one chunk is sent whole, with Content-Length.

import type { ServerResponse } from 'node:http';
import type { ItemCursor } from './backend.js';
import { sendJson } from './http-util.js';

const CHUNK_BYTES = 64 * 1024;

function waitWritable(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

// Serialises rows until about CHUNK_BYTES; `end` tells whether the cursor ran out. Awaits only a
// cursor that answers with a promise (PostgreSQL pages), so SQLite rows are read without yielding.
async function fill(cursor: ItemCursor): Promise<{ parts: string[]; end: boolean }> {
  const parts: string[] = [];
  let size = 0;
  while (size < CHUNK_BYTES) {
    let item = cursor.next();
    if (item instanceof Promise) item = await item;
    if (item === undefined) return { parts, end: true };
    const text = JSON.stringify(item);
    parts.push(text);
    size += text.length;
  }
  return { parts, end: false };
}

/** Sends `cursor` as a 200 JSON array and closes it (also when the client goes away or a read fails). */
export async function sendJsonArray(res: ServerResponse, cursor: ItemCursor): Promise<void> {
  try {
    let chunk = await fill(cursor);
    if (chunk.end) {
      const text = `[${chunk.parts.join(',')}]`;
      res.writeHead(200, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(text),
      });
      res.end(text);
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
    let first = true;
    for (;;) {
      const body = chunk.parts.join(',');
      const text = (first ? '[' : body === '' ? '' : ',') + body + (chunk.end ? ']' : '');
      first = false;
      if (chunk.end) {
        res.end(text);
        return;
      }
      if (!res.write(text) && !(await waitWritable(res))) return;
      if (res.destroyed) return;
      // Let other requests run between chunks even when the socket keeps up.
      await new Promise<void>((resolve) => setImmediate(resolve));
      chunk = await fill(cursor);
    }
  } catch (error) {
    if (!res.headersSent) throw error;
    res.destroy(error as Error);
  } finally {
    cursor.close();
  }
}

export { sendJson };
