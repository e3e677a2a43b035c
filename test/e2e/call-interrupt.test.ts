// Ctrl-C on `call` (SIGINT): the request goes on in the store, and `call` says so and keeps waiting;
// a second Ctrl-C withdraws the request (deletes it) and exits 130.

import { afterEach, describe, expect, it } from 'vitest';
import { SCHEMA } from '../../src/breadcrumbs/messages.js';
import { until } from '../support/waits.js';
import { cleanupAll, client, runCli, startRunnerWithStore } from './harness.js';

afterEach(cleanupAll);

describe('call interrupted', () => {
  it('a first SIGINT says the request goes on and keeps waiting; a second withdraws it and exits 130', async () => {
    const { url } = await startRunnerWithStore(['--bootstrap']);
    const c = client(url);
    const call = runCli(['call', 'timer', '{"ms":10000}', '--store-url', url]);
    const requests = async (): Promise<number> =>
      (await c.listBreadcrumbs({ schema_name: SCHEMA.ToolRequest, tag: 'tool:request' })).length;
    await until('the request is in the store', async () => (await requests()) > 0);

    call.signal('SIGINT');
    await until('call says the request goes on', () => /goes on/.test(call.stderr.join('')));
    expect(call.stderr.join('')).toMatch(/request \S+ goes on: .* Ctrl-C again withdraws it\./);
    expect(call.proc.exitCode, call.stderr.join('')).toBeNull();

    call.signal('SIGINT');
    expect(await call.exited).toBe(130);
    expect(call.stderr.join('')).toMatch(/request \S+ withdrawn \(deleted from the store\)/);
    expect(await requests()).toBe(0);
  }, 120_000);
});
