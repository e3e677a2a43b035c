// An answer never calls "safe to retry" a call that may have run: a tool writes its side effect and
// hangs, its runner is SIGKILLed, and the replica that takes the request over (attempt 2) sees the
// effect already there, writes nothing and times out. Attempt 2 counted no effect, but attempt 1
// wrote one: the answer must say it may have run (timeout.unknown-commit, retryable false,
// details.execution "may_have_run"), not timeout.before-submit.

import { afterEach, describe, expect, it } from 'vitest';
import {
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  startRunner,
  startStoreProcess,
  tempDir,
  toolContext,
} from './harness.js';

afterEach(cleanupAll);

const LEASE_KEY = 'e2e-lease-key-0123456789';

/** Writes its side effect unless it is already there, then hangs until its time limit. */
const WRITE_THEN_HANG = toolContext(
  'e2e-write-then-hang',
  `export async function execute(input, context) {
     const done = await context.api.searchBreadcrumbs({ tag: 'effect:' + input.mark });
     if (done.length === 0)
       await context.api.createBreadcrumb({ title: 'effect', schema_name: 'e2e.effect.v1', tags: ['effect:' + input.mark], context: {} });
     await new Promise(() => {});
   }`,
  {
    contract: { side_effect: 'irreversible' },
    permissions: { net: false, api: 'write' },
    limits: { timeout_ms: 1500, memory_mb: 64 },
  },
);

describe('answers after a takeover', () => {
  it('a call whose earlier attempt wrote its side effect is not answered as safe to retry', async () => {
    const { url } = await startStoreProcess(tempDir(), 0, ['--lease-key', LEASE_KEY]);
    const c = client(url);
    await putTool(c, WRITE_THEN_HANG);
    const runnerArgs = ['--lease-key', LEASE_KEY, '--claims', 'lease'];
    const first = await startRunner(url, runnerArgs);
    const mark = `m${Date.now()}`;
    const rid = await request(c, 'e2e-write-then-hang', { mark });
    // Attempt 1 wrote its effect (and hangs): its replica dies.
    for (let n = 0; (await c.listAll({ tag: `effect:${mark}` })).length === 0; n++) {
      if (n > 300) throw new Error('the tool never wrote its effect');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    first.signal('SIGKILL');
    await first.exited;
    await startRunner(url, runnerArgs);
    const response = await answer(c, rid, 60_000);
    expect(response.metadata['attempt']).toBe(2);
    expect(response.status).toBe('error');
    expect(response.error).toMatchObject({
      code: 'timeout.unknown-commit',
      retryable: false,
      details: { execution: 'may_have_run' },
    });
    expect(await c.listAll({ tag: `effect:${mark}` })).toHaveLength(1);
  });
});
