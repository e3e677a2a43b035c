// The embedded store's worker thread (`start --store-thread`; main side in thread.ts): it owns the
// database, group commit, the HTTP server and the SSE hub, and serves the runner's in-process calls
// and event subscriptions from messages. Everything it sends in one turn of its event loop leaves
// as one message (an array), so a group commit's replies and events cross the thread boundary once.

import { parentPort, workerData } from 'node:worker_threads';
import { coerceError } from '../errors.js';
import { createLogger } from '../logger.js';
import { createStore, type Store } from './store.js';
import type { FromWorker, ThreadData, ToWorker } from './thread.js';

const port = parentPort;
if (port === null) throw new Error('thread-worker.js runs only as a worker thread (see store/thread.ts)');
const data = workerData as ThreadData;
const logger = createLogger({ level: data.log.level, format: data.log.format, bindings: data.log.bindings });

const outbox: FromWorker[] = [];
let scheduled = false;
const flush = (): void => {
  scheduled = false;
  const batch = outbox.splice(0);
  try {
    port.postMessage(batch);
  } catch (error) {
    // A reply that cannot be sent (not cloneable) fails its call instead of leaving it waiting.
    const failure = failureOf(new Error(`a store thread message was not sent: ${String(error)}`));
    port.postMessage(
      batch.map(
        (message): FromWorker => (message.t === 'reply' ? { t: 'reply', id: message.id, error: failure } : message),
      ),
    );
  }
};
const send = (message: FromWorker): void => {
  outbox.push(message);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
};

const failureOf = (error: unknown): { message: string; code: string } => {
  const e = coerceError(error);
  return { message: e.message, code: e.code };
};

let store: Store;
try {
  store = await createStore({ ...data.options, logger });
} catch (error) {
  port.postMessage([{ t: 'failed', error: failureOf(error) }] satisfies FromWorker[]);
  process.exit(1);
}

const streams = new Map<number, { close(): void } | null>();
const sendSizes = (): void => {
  const sizes = store.retention?.sizes();
  if (sizes) send({ t: 'sizes', sizes });
};

const handle = (message: ToWorker): void => {
  switch (message.t) {
    case 'call': {
      const { id, method, path, query, headers, body, token } = message;
      let value: unknown;
      try {
        value = body === undefined ? undefined : JSON.parse(body);
      } catch (error) {
        send({ t: 'reply', id, error: failureOf(error) });
        return;
      }
      store.local.call(method, path, { query: new URLSearchParams(query), headers, body: value, token }).then(
        (reply) => send({ t: 'reply', id, reply }),
        (error: unknown) => send({ t: 'reply', id, error: failureOf(error) }),
      );
      return;
    }
    case 'stream': {
      const { id } = message;
      streams.set(id, null);
      store.local
        .stream(new URLSearchParams(message.query), message.token, message.lastEventId, {
          frame: (frame, eventId) => send({ t: 'frame', id, data: frame, eventId }),
          end: () => {
            streams.delete(id);
            send({ t: 'end', id });
          },
        })
        .then(
          (handle) => {
            // Closed by the main thread before it opened: close it now.
            if (!streams.has(id)) return handle.close();
            streams.set(id, handle);
            send({ t: 'opened', id });
          },
          (failure: unknown) => {
            streams.delete(id);
            if (failure !== null && typeof failure === 'object' && 'status' in failure)
              send({ t: 'refused', id, reply: failure as { status: number; error: Record<string, unknown> } });
            else send({ t: 'refused', id, error: failureOf(failure) });
          },
        );
      return;
    }
    case 'unstream': {
      const handle = streams.get(message.id);
      streams.delete(message.id);
      handle?.close();
      return;
    }
    case 'sizes':
      sendSizes();
      return;
    case 'close':
      store.close().then(
        () => port.postMessage([...outbox.splice(0), { t: 'closed' }] satisfies FromWorker[]),
        (error: unknown) =>
          port.postMessage([...outbox.splice(0), { t: 'closed', error: failureOf(error) }] satisfies FromWorker[]),
      );
      return;
  }
};

port.on('message', (batch: ToWorker[]) => {
  for (const message of batch) handle(message);
});
port.postMessage([{ t: 'ready', url: store.url, port: store.port }] satisfies FromWorker[]);
sendSizes();

// Fault injection for the test of a dying store thread (test/e2e/store-thread.test.ts): an uncaught
// error in this thread this many ms after it is ready, as a bug in the store would raise.
const fault = Number(process.env['TOOLS_RUNNER_TEST_STORE_THREAD_FAULT_MS'] ?? '');
if (Number.isInteger(fault) && fault > 0)
  setTimeout(() => {
    throw new Error('injected store thread fault (TOOLS_RUNNER_TEST_STORE_THREAD_FAULT_MS)');
  }, fault);
