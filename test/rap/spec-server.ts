// A small spec-faithful RAP tool server for the runtime's tests (seed 001, contracts.md P1-P10):
// serves a toolset at `/.well-known/rap-toolset` (or a configured failure), accepts invocations
// at `/invoke` (ack with a configured status; on 200 the result is POSTed to the invocation's
// callback_url as a `tool_result`), and records `/cancel_tool_call` and `/close_thread` (always
// 200). Real HTTP on 127.0.0.1, port 0. Written for these tests only.

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the server answers one invocation. */
export type InvokeBehaviour =
  | { status: number }
  | { status: 200; reply: (invocation: Record<string, unknown>) => string }
  | { status: 200; hold: true };

/** A running spec server. */
export interface SpecServer {
  url: string;
  /** `{url}/invoke`. */
  endpoint: string;
  /** The served document (JSON) or a failure (status + raw body). */
  toolset: { status: number; json?: unknown; body?: string };
  behaviour: InvokeBehaviour | ((invocation: Record<string, unknown>, n: number) => InvokeBehaviour);
  invocations: Array<Record<string, unknown>>;
  cancels: Array<Record<string, unknown>>;
  discoveries: number;
  /** Callback POST outcomes (status of the runtime's answer). */
  callbackStatuses: number[];
  /** Resolves once `count` items of `kind` have been recorded. */
  waitFor(kind: 'invocations' | 'cancels' | 'callbacks', count: number): Promise<void>;
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** Starts a spec server whose toolset is built by `toolset(endpoint)`. */
export async function startSpecServer(toolset: (endpoint: string) => unknown): Promise<SpecServer> {
  const waiters: Array<{ kind: 'invocations' | 'cancels' | 'callbacks'; count: number; resolve: () => void }> = [];
  const notify = (): void => {
    for (const w of [...waiters]) {
      const have = w.kind === 'callbacks' ? spec.callbackStatuses.length : spec[w.kind].length;
      if (have >= w.count) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      const text = await body(req);
      if (req.method === 'GET' && path === '/.well-known/rap-toolset') {
        spec.discoveries++;
        const t = spec.toolset;
        if (t.json !== undefined)
          res.writeHead(t.status, { 'content-type': 'application/json' }).end(JSON.stringify(t.json));
        else res.writeHead(t.status, { 'content-type': 'text/plain' }).end(t.body ?? '');
        return;
      }
      if (req.method === 'POST' && path === '/invoke') {
        const invocation = JSON.parse(text) as Record<string, unknown>;
        spec.invocations.push(invocation);
        notify();
        const b =
          typeof spec.behaviour === 'function' ? spec.behaviour(invocation, spec.invocations.length) : spec.behaviour;
        res
          .writeHead(b.status, { 'content-type': 'application/json' })
          .end(b.status === 200 ? '{}' : JSON.stringify({ error: `status ${b.status}` }));
        if ('reply' in b) {
          const message = {
            type: 'tool_result',
            group_id: invocation['group_id'],
            id: invocation['id'],
            call_id: invocation['call_id'],
            text: b.reply(invocation),
          };
          const answer = await fetch(String(invocation['callback_url']), {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(message),
          });
          await answer.body?.cancel();
          spec.callbackStatuses.push(answer.status);
          notify();
        }
        return;
      }
      if (req.method === 'POST' && (path === '/cancel_tool_call' || path === '/close_thread')) {
        spec.cancels.push({ path, ...(JSON.parse(text || '{}') as Record<string, unknown>) });
        notify();
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      res.writeHead(404).end();
    })().catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const spec: SpecServer = {
    url,
    endpoint: `${url}/invoke`,
    toolset: { status: 200, json: toolset(`${url}/invoke`) },
    behaviour: { status: 200, reply: () => 'ok' },
    invocations: [],
    cancels: [],
    discoveries: 0,
    callbackStatuses: [],
    waitFor(kind, count) {
      return new Promise((resolve) => {
        waiters.push({ kind, count, resolve });
        notify();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return spec;
}

/** A URL on 127.0.0.1 where nothing listens (a port just released). */
export async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
