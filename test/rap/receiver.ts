// A callback receiver for the tool-server tests: records every POST (body parsed as JSON) and
// answers with the next status of a script (then 200). Real HTTP on 127.0.0.1, port 0.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onCleanup } from './helpers.js';

/** A running receiver. */
export interface Receiver {
  url: string;
  posts: Array<{ path: string; body: Record<string, unknown> }>;
  /** Statuses for the next POSTs, in order; 200 when empty. */
  statuses: number[];
  waitFor(count: number): Promise<void>;
}

/** Starts a receiver, closed after the test. */
export async function startReceiver(): Promise<Receiver> {
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      receiver.posts.push({
        path: req.url ?? '/',
        body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>,
      });
      const status = receiver.statuses.shift() ?? 200;
      res.writeHead(status, status >= 300 && status < 400 ? { location: `${receiver.url}/redirected` } : {}).end();
      for (const w of [...waiters]) {
        if (receiver.posts.length >= w.count) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const receiver: Receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    posts: [],
    statuses: [],
    waitFor: (count) =>
      new Promise((resolve) => {
        if (receiver.posts.length >= count) resolve();
        else waiters.push({ count, resolve });
      }),
  };
  return receiver;
}
