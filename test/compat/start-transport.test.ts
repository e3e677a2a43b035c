// `start` with its embedded store over both transports (`--store-transport auto` = in-process, and
// `http`): the same request answered the same way, exactly once, and the runner says which it used.
import { afterEach, describe, expect, it } from 'vitest';
import {
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  responsesByRid,
  startRunnerWithStore,
  toolContext,
} from '../e2e/harness.js';

afterEach(cleanupAll);

describe.each([
  ['auto', 'in-process'],
  ['http', 'http'],
] as const)('start --store-transport %s', (flag, transport) => {
  it('serves calls, secrets and errors exactly once over the chosen transport', async () => {
    const { runner, url } = await startRunnerWithStore(
      ['--store-transport', flag, '--share-secrets', 'TX_KEY=tx-echo'],
      {
        TOOLS_RUNNER_LOG_LEVEL: 'info',
        TOOLS_RUNNER_LOG_FORMAT: 'json',
      },
    );
    const ready = runner.stderr
      .join('')
      .split('\n')
      .filter((line) => line.includes('"runner ready"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(ready[0]).toMatchObject({ storeTransport: transport, store: url });
    const c = client(url);
    await putTool(
      c,
      toolContext(
        'tx-echo',
        'export async function execute(input, context) { return { got: input, key: context.secrets.TX_KEY.length }; }',
        { required_secrets: ['TX_KEY'] },
      ),
    );
    await c.createSecret({ name: 'TX_KEY', scope_type: 'global', value: 'transport-secret-value' });
    const ok = await request(c, 'tx-echo', { n: 1 });
    const missing = await request(c, 'no-such-tool', {});
    const same = await request(c, 'tx-echo', { n: 2 });
    await expect(answer(c, ok)).resolves.toMatchObject({ status: 'success', output: { got: { n: 1 }, key: 22 } });
    await expect(answer(c, missing)).resolves.toMatchObject({ status: 'error', error: { code: 'tool.not_found' } });
    await expect(answer(c, same)).resolves.toMatchObject({ status: 'success', output: { got: { n: 2 }, key: 22 } });
    const all = await responsesByRid(c);
    expect([ok, missing, same].map((rid) => all.get(rid)?.length)).toEqual([1, 1, 1]);
  });
});
