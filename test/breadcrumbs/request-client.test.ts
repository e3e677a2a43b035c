// The one request client against the real embedded store: it writes a tool.request.v1 and settles
// only on the runner's answer (answer tag, workspace, rid and request breadcrumb all match) — by
// poll or by a fed event —, times out, is cancelled by its signal, and withdraws a request.

import { describe, expect, it } from 'vitest';
import {
  createRequestClient,
  createRequestKeys,
  createStoreClient,
  openEventStream,
  SCHEMA,
  TAG,
  type StoreClient,
} from '../../src/breadcrumbs/index.js';
import { silentLogger } from '../../src/logger.js';
import { onCleanup, startStore } from '../store/helpers.js';
import { until } from '../support/waits.js';

const WS = 'workspace:tools';
const keys = createRequestKeys(Buffer.alloc(32, 7));

async function setup(): Promise<{ store: StoreClient }> {
  const { url } = await startStore();
  const store = createStoreClient({
    baseUrl: url,
    logger: silentLogger(),
    auth: { mint: { owner_id: '00000000-0000-0000-0000-000000000001', agent_id: 'rc-test' } },
  });
  onCleanup(() => store.close());
  return { store };
}

/**
 * `store` with its listings (the request client's polls, one at a time) counted as they start and
 * held at the start while `hold` is set; `inFlight` counts those started and not yet returned.
 */
function watchedPolls(store: StoreClient): {
  client: StoreClient;
  started: () => number;
  inFlight: () => number;
  hold(on: boolean): void;
} {
  let started = 0;
  let inFlight = 0;
  let held: Promise<void> | undefined;
  let release = (): void => {};
  const client: StoreClient = {
    ...store,
    listBreadcrumbs: async (...args) => {
      while (held) await held;
      started++;
      inFlight++;
      try {
        return await store.listBreadcrumbs(...args);
      } finally {
        inFlight--;
      }
    },
  };
  const hold = (on: boolean): void => {
    if (on && !held) held = new Promise<void>((resolve) => (release = resolve));
    if (!on && held) {
      held = undefined;
      release();
    }
  };
  return { client, started: () => started, inFlight: () => inFlight, hold };
}

/** Writes an answer for `request` as the runner would (answer tag) or as a forger (none). */
async function answer(
  store: StoreClient,
  request: { rid: string; breadcrumbId: string },
  output: unknown,
  options: { genuine: boolean; rid?: string; breadcrumbId?: string; workspace?: string } = { genuine: true },
): Promise<string> {
  const tags = [
    options.workspace ?? WS,
    TAG.Response,
    TAG.request(request.rid),
    ...(options.genuine ? [keys.answerTag(request.breadcrumbId)] : []),
  ];
  const context = {
    request_id: options.rid ?? request.rid,
    tool: 't',
    status: 'success',
    output,
    execution_time_ms: 1,
    metadata: { request_breadcrumb_id: options.breadcrumbId ?? request.breadcrumbId },
    timestamp: new Date().toISOString(),
  };
  return (await store.createBreadcrumb({ title: 'Response: t', schema_name: SCHEMA.ToolResponse, tags, context })).id;
}

describe('request client', () => {
  it('writes the request with its tags and context, and settles on the genuine answer only (by poll)', async () => {
    const { store } = await setup();
    const watched = watchedPolls(store);
    const requests = createRequestClient({ client: watched.client, keys, workspace: WS, pollMaxMs: 50 });
    const written = await requests.write({
      tool: 't',
      input: { a: 1 },
      requestedBy: 'me',
      tags: ['agent:mcp:x'],
      context: { version: '^1', tool: 'not-this' },
    });
    const full = await store.getBreadcrumbFull(written.breadcrumbId);
    expect(full.tags).toEqual([TAG.Request, WS, 'agent:mcp:x']);
    expect(full.context).toEqual({
      version: '^1',
      tool: 't',
      input: { a: 1 },
      requestId: written.rid,
      requestedBy: 'me',
    });
    const waiting = requests.wait(written, { timeoutMs: 20_000 });
    // Forgeries: no answer tag; another rid in the body; another request breadcrumb; another workspace.
    await answer(store, written, 'forged', { genuine: false });
    await answer(store, written, 'wrong rid', { genuine: true, rid: 'other' });
    await answer(store, written, 'wrong breadcrumb', { genuine: true, breadcrumbId: 'other' });
    await answer(store, written, 'wrong workspace', { genuine: true, workspace: 'workspace:other' });
    // A whole poll after the forgeries, and the wait still open.
    // (Polls run one after another: once the second starts, the first has listed them and not settled.)
    let early: unknown;
    void waiting.then((outcome) => (early = outcome));
    const after = watched.started();
    await until('two polls after the forgeries', () => watched.started() >= after + 2 || early !== undefined);
    expect(early).toBeUndefined();
    const id = await answer(store, written, 'real', { genuine: true });
    const outcome = await waiting;
    expect(outcome).toMatchObject({ kind: 'answered', responseId: id, answer: { output: 'real' } });
    expect(await requests.find(written)).toMatchObject({ responseId: id });
  });

  it('settles from a fed event as well, times out, and ends as cancelled when its signal aborts', async () => {
    const { store } = await setup();
    const watched = watchedPolls(store);
    const requests = createRequestClient({ client: watched.client, keys, workspace: WS, pollMaxMs: 60_000 });
    const stop = new AbortController();
    onCleanup(() => stop.abort());
    const connected = new Promise<void>((resolve) =>
      openEventStream({
        client: store,
        signal: stop.signal,
        logger: silentLogger(),
        onEvent: (e) => requests.handleEvent(e),
        onConnected: () => resolve(),
      }),
    );
    await connected;
    const written = await requests.write({ tool: 't', input: {}, requestedBy: 'me' });
    const waiting = requests.wait(written, { timeoutMs: 20_000 });
    // After a first poll, polls are held (a stalled listing): only the event can settle it.
    await until('a first poll', () => watched.started() >= 1);
    watched.hold(true);
    await until('no poll in flight', () => watched.inFlight() === 0);
    const id = await answer(store, written, 'by event');
    expect(await waiting).toMatchObject({ kind: 'answered', responseId: id });
    watched.hold(false);

    const lonely = await requests.write({ tool: 't', input: {}, requestedBy: 'me' });
    expect(await requests.wait(lonely, { timeoutMs: 300 })).toEqual({ kind: 'timeout' });
    const cancel = new AbortController();
    const cancelled = requests.wait(lonely, { timeoutMs: 20_000, signal: cancel.signal });
    cancel.abort();
    expect(await cancelled).toEqual({ kind: 'cancelled' });
    expect(await requests.withdraw(lonely)).toBe(true);
    expect(await requests.withdraw(lonely)).toBe(false);
    const closing = requests.wait(written, { timeoutMs: 20_000 });
    requests.close();
    expect(await closing).toEqual({ kind: 'cancelled' });
  });
});
