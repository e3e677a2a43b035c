// Idempotency keys end to end, with real runner processes, a real store and real Deno: the same
// key sent twice runs once (sequentially, concurrently, across a runner restart, and with two
// replicas racing), and the same key with a different input is a `conflict`.
//
// Executions are counted where they cannot be faked by a replay: the tool writes one `e2e-exec`
// breadcrumb per run through `context.api` (a replayed answer writes nothing), named by the rid
// that ran.

import { afterEach, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { inputHash } from '../../src/contract/canonical.js';
import {
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  startRunner,
  startRunnerWithStore,
  startStoreProcess,
  tempDir,
  toolContext,
  waitForResponses,
} from './harness.js';

afterEach(cleanupAll);

const MARKER = toolContext(
  'e2e-idem',
  `export async function execute(input, context) {
     if (input.sleepMs) await new Promise((r) => setTimeout(r, input.sleepMs));
     await context.api.createBreadcrumb({ title: 'exec', schema_name: 'e2e.exec.v1', tags: ['e2e-exec'], context: { rid: context.request.id } });
     return { ranAs: context.request.id, n: input.n ?? null };
   }`,
  { permissions: { net: false, api: 'write' }, limits: { timeout_ms: 10000, memory_mb: 64 } },
);

/** The rids that ran, one entry per execution. */
async function executions(c: StoreClient): Promise<string[]> {
  const items = await c.listAll({ tag: 'e2e-exec', include_context: true });
  return items.map((item) => String(item.context?.['rid']));
}

const keyed = (key: string, agent = 'agent-a') => ({ idempotency_key: key, requestedBy: agent });

describe('idempotency keys', () => {
  it('the same key twice runs once; the repeat gets the first result for its own rid; another input is a conflict', async () => {
    const { url } = await startRunnerWithStore();
    const c = client(url);
    await putTool(c, MARKER);
    const first = await request(c, 'e2e-idem', { n: 1 }, 'idem-first', keyed('order-42'));
    expect(await answer(c, first)).toMatchObject({ status: 'success', output: { ranAs: 'idem-first', n: 1 } });
    const again = await request(c, 'e2e-idem', { n: 1 }, 'idem-again', keyed('order-42'));
    const replayed = await answer(c, again);
    expect(replayed).toMatchObject({
      request_id: 'idem-again',
      status: 'success',
      output: { ranAs: 'idem-first', n: 1 },
    });
    expect(replayed.metadata['replayed_from']).toEqual({
      rid: 'idem-first',
      request_breadcrumb_id: expect.any(String),
    });
    const other = await request(c, 'e2e-idem', { n: 2 }, 'idem-other', keyed('order-42'));
    expect((await answer(c, other)).error).toEqual({
      code: 'conflict',
      message: `idempotency key "order-42" of tool "e2e-idem" was first used by request "idem-first" with a different payload: input hash ${inputHash({ n: 1 })} (this request: ${inputHash({ n: 2 })}); send a new key for a different call`,
      retryable: false,
      details: { first_request_id: 'idem-first', differs: ['input_hash'] },
    });
    // The same key from another agent is another call.
    expect(
      (await answer(c, await request(c, 'e2e-idem', { n: 1 }, 'idem-b', keyed('order-42', 'agent-b')))).output,
    ).toEqual({ ranAs: 'idem-b', n: 1 });
    expect((await executions(c)).sort()).toEqual(['idem-b', 'idem-first']);
  });

  it('a repeat sent while the first runs waits for its answer and replays it', async () => {
    const { url } = await startRunnerWithStore();
    const c = client(url);
    await putTool(c, MARKER);
    const rids = ['conc-1', 'conc-2', 'conc-3'];
    await Promise.all(rids.map((rid) => request(c, 'e2e-idem', { sleepMs: 1500 }, rid, keyed('concurrent'))));
    const responses = await waitForResponses(c, rids);
    const ran = await executions(c);
    expect(ran).toHaveLength(1);
    for (const rid of rids) {
      const list = responses.get(rid)!;
      expect(list).toHaveLength(1);
      expect(list[0]).toMatchObject({ request_id: rid, status: 'success', output: { ranAs: ran[0] } });
      if (rid !== ran[0]) expect(list[0]!.metadata['replayed_from']).toMatchObject({ rid: ran[0] });
    }
  });

  it('across a runner restart the key is still bound: the repeat is replayed, not run', async () => {
    const { url } = await startStoreProcess(tempDir());
    const c = client(url);
    await putTool(c, MARKER);
    const runner = await startRunner(url);
    await answer(c, await request(c, 'e2e-idem', { n: 7 }, 'restart-first', keyed('restart-key')));
    runner.signal('SIGTERM');
    await runner.exited;
    await startRunner(url);
    const again = await answer(c, await request(c, 'e2e-idem', { n: 7 }, 'restart-again', keyed('restart-key')));
    expect(again).toMatchObject({ status: 'success', output: { ranAs: 'restart-first', n: 7 } });
    expect(again.metadata['replayed_from']).toMatchObject({ rid: 'restart-first' });
    expect(await executions(c)).toEqual(['restart-first']);
  });

  it('two replicas racing on the same keys run each key once', async () => {
    const { url } = await startStoreProcess(tempDir());
    const c = client(url);
    await putTool(c, MARKER);
    await Promise.all([startRunner(url), startRunner(url)]);
    const keys = Array.from({ length: 8 }, (_, k) => `race-${k}`);
    const rids = keys.flatMap((key) => [0, 1, 2].map((copy) => `${key}-copy-${copy}`));
    await Promise.all(
      rids.map((rid) => request(c, 'e2e-idem', { sleepMs: 300 }, rid, keyed(rid.replace(/-copy-\d$/, '')))),
    );
    const responses = await waitForResponses(c, rids, 120_000);
    const ran = await executions(c);
    for (const key of keys) {
      const ranForKey = ran.filter((rid) => rid.startsWith(`${key}-copy-`));
      expect(ranForKey, `executions of ${key}`).toHaveLength(1);
      for (const copy of [0, 1, 2]) {
        const list = responses.get(`${key}-copy-${copy}`)!;
        expect(list).toHaveLength(1);
        expect(list[0]).toMatchObject({ status: 'success', output: { ranAs: ranForKey[0] } });
      }
    }
    expect(ran).toHaveLength(keys.length);
  });
});
