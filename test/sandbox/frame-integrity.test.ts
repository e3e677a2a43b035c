// Issue 9 item 8: tool code shares the harness's heap and hooks whatever a harness might touch while it
// writes a frame (typed-array getters and species, String/Array/Promise/Object prototypes, encoders,
// JSON, Reflect, Deno's own stdio objects and internals, Error hooks). None of it may reveal the frame
// marker or change what the harness writes: the result is always the value the tool returned.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { codeOf, expectNoLeaks, isolateTmp, job, testConfig, tool } from './helpers.js';

let sandbox: Sandbox;
let reuse: Sandbox;
let tmp: ReturnType<typeof isolateTmp>;

beforeAll(async () => {
  tmp = isolateTmp();
  sandbox = await createSandbox({ config: testConfig({ poolSize: 2 }), logger: silentLogger() });
  reuse = await createSandbox({
    config: testConfig({ poolSize: 1, reuseTools: ['hook-nonce'] }),
    logger: silentLogger(),
  });
});

afterAll(async () => {
  await sandbox?.close();
  await reuse?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

const VARIANTS = [
  'typedarray-getters',
  'typedarray-methods',
  'species',
  'strings',
  'arrays',
  'encoding',
  'json',
  'promise',
  'object-setters',
  'functions',
  'deno-io',
  'deno-internal',
  'regexp',
  'errors',
  'numbers',
  'all',
];

describe('hooks installed by tool code never reveal the frame marker', () => {
  it.each(VARIANTS)('%s: the real result arrives, the api call was answered, nothing leaked', async (variant) => {
    const result = await sandbox.run(job(tool('hook-nonce'), { variant }));
    expect(result).toMatchObject({
      ok: true,
      output: { real: true, leaked: false, api: 'permission.denied', variant },
    });
    expect(result.logs.some((line) => line.startsWith('a log line'))).toBe(true);
    expect(await sandbox.run(job(tool('echo'), { after: variant }))).toMatchObject({
      ok: true,
      output: { input: { after: variant } },
    });
  });

  it('tampering with encoders, lengths and subarray does not change what the harness writes', async () => {
    const result = await sandbox.run(job(tool('hook-nonce'), { variant: 'tamper' }));
    expect(result).toMatchObject({
      ok: true,
      output: { real: true, leaked: false, api: 'permission.denied', variant: 'tamper' },
    });
  });

  it('in a reused process, hooks left by one call do not reveal the marker to the next', async () => {
    const first = await reuse.run(job(tool('hook-nonce'), { variant: 'all' }));
    expect(first).toMatchObject({ ok: true, output: { real: true, leaked: false } });
    const second = await reuse.run(job(tool('hook-nonce'), { variant: 'typedarray-getters' }));
    expect(second).toMatchObject({ ok: true, output: { real: true, leaked: false } });
    expect(codeOf(await reuse.run(job(tool('hook-nonce'), { variant: 'tamper' })))).toBe('ok');
  });
});
