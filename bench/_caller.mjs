// A bench caller of one store: writes `tool.request.v1` breadcrumbs and resolves each call with the
// `tool.response.v1` event that answers it (matched by the `request:<rid>` tag on the store's event
// stream). Shared by bench/e2e.mjs, pg-replicas.mjs, retention-soak.mjs and store-calls.mjs.

import { performance } from 'node:perf_hooks';
import { createStoreClient, openEventStream } from '../dist/breadcrumbs/index.js';
import { silentLogger } from '../dist/logger.js';

/**
 * Connects to `url` and waits for its event stream. `call(tool, input)` resolves with
 * { rid, ms, context, request, answer, sentAt }: the answer's context and breadcrumb id are undefined
 * when no answer came within `giveUpMs`.
 */
export async function connectCaller(
  url,
  { ridPrefix = 'bench', giveUpMs = 60_000, workspace = 'workspace:tools' } = {},
) {
  const logger = silentLogger();
  const client = createStoreClient({ baseUrl: url, logger });
  const controller = new AbortController();
  const waiting = new Map();
  let connected;
  const ready = new Promise((resolve) => (connected = resolve));
  openEventStream({
    client,
    logger,
    signal: controller.signal,
    onConnected: () => connected(),
    onEvent(event) {
      if (event.schema_name !== 'tool.response.v1') return;
      const tag = event.tags?.find((t) => t.startsWith('request:'));
      if (tag) waiting.get(tag.slice('request:'.length))?.(event);
    },
  });
  await ready;
  let seq = 0;
  const call = async (tool = 'echo', input = { message: 'hi' }) => {
    const rid = `${ridPrefix}-${process.pid}-${seq++}`;
    let timer;
    const answered = new Promise((resolve) => {
      waiting.set(rid, resolve);
      timer = setTimeout(() => resolve(undefined), giveUpMs);
    });
    const sentAt = Date.now();
    const t0 = performance.now();
    const { id: request } = await client.createBreadcrumb({
      title: `Request: ${tool}`,
      schema_name: 'tool.request.v1',
      tags: ['tool:request', workspace],
      context: { tool, input, requestId: rid },
    });
    const event = await answered;
    const ms = performance.now() - t0;
    clearTimeout(timer);
    waiting.delete(rid);
    return { rid, ms, context: event?.context, request, answer: event?.breadcrumb_id, sentAt };
  };
  return {
    client,
    call,
    close: () => {
      controller.abort();
      client.close();
    },
  };
}
