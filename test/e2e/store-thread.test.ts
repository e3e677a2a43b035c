// `start --store-thread`: the embedded store on its own worker thread. A tool call goes through it
// (its HTTP port served by the worker, the runner's calls and events through the message port),
// /metrics still reads the database's size, SIGTERM drains and exits 0 — and a store thread that
// dies ends the service: exit 1 with the reason in the log, never a hang on a dead store.

import { afterAll, describe, expect, it } from 'vitest';
import {
  answer,
  cleanupAll,
  client,
  putTool,
  request,
  runCli,
  startRunnerWithStore,
  tempDir,
  toolContext,
  FAST,
} from './harness.js';

afterAll(cleanupAll);

/** The JSON log lines of a process's stderr so far. */
function jsonLines(stderr: string[]): Array<Record<string, unknown>> {
  return stderr
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const ECHO = 'export async function execute(input) { return { echoed: input }; }';

describe('start --store-thread', () => {
  it('answers a call through the store thread, reports the database size on /metrics, and drains on SIGTERM (exit 0)', async () => {
    const { runner, url } = await startRunnerWithStore(['--store-thread', '--admin-port', '0'], {
      TOOLS_RUNNER_LOG_LEVEL: 'info',
    });
    const c = client(url);
    await putTool(c, toolContext('thread-echo', ECHO));
    const rid = await request(c, 'thread-echo', { n: 7 });
    const response = await answer(c, rid, 60_000);
    expect(response.status).toBe('success');
    expect(response.output).toEqual({ echoed: { n: 7 } });
    const admin = jsonLines(runner.stderr).find((l) => l['msg'] === 'admin port listening')?.['url'] as string;
    expect(admin).toMatch(/^http:\/\//);
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).toMatch(/^tools_runner_store_db_bytes\{file="db"\} [1-9]\d*/m);
    runner.signal('SIGTERM');
    expect(await runner.exited).toBe(0);
  }, 180_000);

  it('a store thread that dies ends the service: exit 1, the reason in the log', async () => {
    const runner = runCli(['start', '--port', '0', '--data-dir', tempDir(), '--store-thread', ...FAST], {
      TOOLS_RUNNER_LOG_LEVEL: 'info',
      TOOLS_RUNNER_TEST_STORE_THREAD_FAULT_MS: '1500',
    });
    await runner.line(/^store listening on /, 120_000);
    const code = await Promise.race([runner.exited, new Promise((r) => setTimeout(() => r('still running'), 120_000))]);
    expect(code).toBe(1);
    const died = jsonLines(runner.stderr).find((l) => l['msg'] === 'the store thread died; the service exits');
    expect(died).toBeDefined();
    expect(JSON.stringify(died)).toContain('injected store thread fault');
  }, 180_000);
});
