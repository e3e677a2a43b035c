// What a first run meets when things are not as expected: a log reader that goes away (the service
// neither spins nor refuses to stop), output into a closed pipe (`--help | head`), a store URL
// nobody listens on (start waits --store-wait-ms, then fails naming it), and requests that will
// never be answered (logged with the reason and a hint, and counted on /metrics).

import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import { until } from '../support/waits.js';
import { answer, cleanupAll, client, FAST, request, runCli, startRunnerWithStore, WS } from './harness.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');

afterAll(cleanupAll);

/** A port that was free a moment ago and has no listener now. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The JSON log lines of a process's stderr so far. */
function jsonLines(stderr: string[]): Array<Record<string, unknown>> {
  return stderr
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function metricsOf(admin: string): Promise<string> {
  return (await fetch(`${admin}/metrics`)).text();
}

describe('a reader of the logs that goes away', () => {
  it('the service keeps answering, counts the lost lines, and exits 0 on SIGTERM within its drain grace', async () => {
    const { runner, url } = await startRunnerWithStore(['--admin-port', '0'], { TOOLS_RUNNER_LOG_LEVEL: 'info' });
    const admin = jsonLines(runner.stderr).find((l) => l['msg'] === 'admin port listening')?.['url'] as string;
    expect(admin).toMatch(/^http:\/\//);
    // the reader of stdout and stderr is gone (a `| head` that finished, a log shipper restarting)
    runner.proc.stdout?.destroy();
    runner.proc.stderr?.destroy();
    const c = client(url);
    // requests log lines (info), each write now fails with EPIPE; the service goes on answering
    for (let i = 0; i < 3; i++) {
      const response = await answer(c, await request(c, 'no-such-tool', {}));
      expect(response.error?.code).toBe('tool.not_found');
    }
    const dropped = await until(
      'dropped log lines counted',
      async () => {
        const match = /^tools_runner_log_lines_dropped_total (\d+)/m.exec(await metricsOf(admin));
        return match && Number(match[1]) > 0 ? Number(match[1]) : undefined;
      },
      60_000,
    );
    expect(dropped).toBeGreaterThan(0);
    expect(await metricsOf(admin)).toMatch(/^tools_runner_uncaught_errors_total 0$/m);
    runner.signal('SIGTERM');
    // FAST's drain grace is 5 s; the bound here only catches a process that never exits
    const code = await Promise.race([runner.exited, new Promise((r) => setTimeout(() => r('still running'), 60_000))]);
    expect(code).toBe(0);
  }, 180_000);
});

describe('CLI output into a closed pipe', () => {
  it.each([['--help'], ['help', 'start'], ['config', 'markdown']])(
    '`tools-runner %s | true` exits 0 without an EPIPE crash',
    (...args) => {
      // `true` exits at once, so the CLI writes into a pipe nobody reads (EPIPE)
      const quoted = args.map((a) => `'${a}'`).join(' ');
      const run = spawnSync(
        'bash',
        [
          '-c',
          `'${process.execPath}' '${cli}' ${quoted} 2>"$ERRFILE" | true; echo "\${PIPESTATUS[0]}"; cat "$ERRFILE"`,
        ],
        {
          encoding: 'utf8',
          env: {
            PATH: process.env['PATH'] ?? '/usr/bin:/bin',
            ERRFILE: join(process.env['TMPDIR'] ?? '/tmp', `tr-epipe-${process.pid}-${args.join('-')}.txt`),
          },
        },
      );
      const [status, ...stderr] = run.stdout.split('\n');
      expect(status).toBe('0');
      expect(stderr.join('\n')).not.toMatch(/EPIPE|Error/);
    },
  );
});

describe('start with a store URL nobody listens on', () => {
  it('waits --store-wait-ms, then exits 1 naming the URL', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const started = Date.now();
    const runner = runCli(['start', '--store-url', url, '--store-wait-ms', '3000', ...FAST], {
      TOOLS_RUNNER_LOG_LEVEL: 'info',
    });
    expect(await runner.exited).toBe(1);
    // a lower bound only: it must not give up before the wait is over
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
    const stderr = runner.stderr.join('');
    expect(stderr).toContain(
      `tools-runner start: dependency.unavailable: store at ${url} is not reachable after 3000 ms (--store-wait-ms)`,
    );
    expect(jsonLines(runner.stderr).filter((l) => l['msg'] === 'store not reachable yet').length).toBeGreaterThan(1);
    expect(runner.stdout).not.toContain('runner ready');
  }, 120_000);

  it('Ctrl-C (SIGINT) while it waits gives up at once: exit 1, naming the URL', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const runner = runCli(['start', '--store-url', url, '--store-wait-ms', '600000', ...FAST], {
      TOOLS_RUNNER_LOG_LEVEL: 'info',
    });
    await until(
      'a first "store not reachable yet"',
      () => (jsonLines(runner.stderr).some((l) => l['msg'] === 'store not reachable yet') ? true : undefined),
      60_000,
    );
    runner.signal('SIGINT');
    expect(await runner.exited).toBe(1);
    expect(runner.stderr.join('')).toContain(
      `tools-runner start: dependency.unavailable: interrupted while waiting for the store at ${url}`,
    );
  }, 120_000);
});

describe('requests that will never be answered', () => {
  it('are logged at info with the reason (and a hint for a near miss) and counted by reason; unrelated records are not', async () => {
    const { runner, url } = await startRunnerWithStore(['--admin-port', '0'], { TOOLS_RUNNER_LOG_LEVEL: 'info' });
    const admin = jsonLines(runner.stderr).find((l) => l['msg'] === 'admin port listening')?.['url'] as string;
    const c = client(url);
    const write = async (schema: string, tags: string[]): Promise<string> =>
      (
        await c.createBreadcrumb({
          title: 'Request: echo',
          schema_name: schema,
          tags,
          context: { tool: 'echo', input: {} },
        })
      ).id;
    const cases = {
      noWorkspace: await write(SCHEMA.ToolRequest, [TAG.Request]),
      otherWorkspace: await write(SCHEMA.ToolRequest, [TAG.Request, 'workspace:billing']),
      nearWorkspace: await write(SCHEMA.ToolRequest, [TAG.Request, 'workspace:tool']),
      schemaTypo: await write('tool.reqest.v1', [TAG.Request, WS]),
      noRequestTag: await write(SCHEMA.ToolRequest, [WS]),
      unrelated: await write('note.v1', [WS]),
    };
    const ignored = (id: string) =>
      jsonLines(runner.stderr).find((l) => l['msg'] === 'request ignored' && l['breadcrumbId'] === id);
    await until(
      'every ignored request logged',
      () => (Object.entries(cases).every(([k, id]) => k === 'unrelated' || ignored(id)) ? true : undefined),
      60_000,
    );
    expect(ignored(cases.noWorkspace)).toMatchObject({
      level: 'info',
      reason: 'no-workspace',
      hint: `add the tag "${WS}"`,
      schema: SCHEMA.ToolRequest,
      tool: 'echo',
    });
    expect(ignored(cases.otherWorkspace)).toMatchObject({ reason: 'other-workspace', workspace: WS });
    expect(ignored(cases.otherWorkspace)?.['hint']).toBeUndefined();
    expect(ignored(cases.nearWorkspace)).toMatchObject({
      reason: 'other-workspace',
      hint: `tag "workspace:tool" is not this runner's "${WS}"`,
    });
    expect(ignored(cases.schemaTypo)).toMatchObject({
      reason: 'schema-typo',
      hint: 'schema_name must be "tool.request.v1"',
      schema: 'tool.reqest.v1',
    });
    expect(ignored(cases.noRequestTag)).toMatchObject({
      reason: 'no-request-tag',
      hint: `add the tag "${TAG.Request}"`,
    });
    // a real request still runs, and a record of another kind passes unlogged
    expect((await answer(c, await request(c, 'no-such-tool', {}))).error?.code).toBe('tool.not_found');
    expect(ignored(cases.unrelated)).toBeUndefined();
    const metrics = await metricsOf(admin);
    expect(metrics).toMatch(/^tools_runner_ignored_requests_total\{reason="no-workspace"\} 1$/m);
    expect(metrics).toMatch(/^tools_runner_ignored_requests_total\{reason="other-workspace"\} 2$/m);
    expect(metrics).toMatch(/^tools_runner_ignored_requests_total\{reason="schema-typo"\} 1$/m);
    expect(metrics).toMatch(/^tools_runner_ignored_requests_total\{reason="no-request-tag"\} 1$/m);
  }, 180_000);
});
