// The CLI as users run it: `call` (exit codes and printed response), `tail` (live feed from the admin
// port), and the admin port's /health and /metrics.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import {
  cleanupAll,
  client,
  putTool,
  runCli,
  startRunnerWithStore,
  toolContext,
  WS,
  type CliProcess,
} from './harness.js';

let url: string;
let admin: string;
let runner: CliProcess;

beforeAll(async () => {
  ({ url, runner } = await startRunnerWithStore(['--admin-port', '0'], { TOOLS_RUNNER_LOG_LEVEL: 'info' }));
  const line = runner.stderr
    .join('')
    .split('\n')
    .find((l) => l.includes('"msg":"admin port listening"'));
  admin = (JSON.parse(line as string) as { url: string }).url;
  await putTool(
    client(url),
    toolContext('cli-echo', 'export async function execute(input) { return { got: input }; }'),
  );
  await putTool(
    client(url),
    toolContext(
      'cli-progress',
      "export async function execute(input, context) { context.progress({ text: 'step 1\\u001b[2J' }); context.progress({ text: 'step 2' }); context.progress({ stage: 'done', n: 3 }); return { ok: true }; }",
    ),
  );
  await putTool(
    client(url),
    toolContext(
      'cli-chatty',
      'export async function execute(input, context) { for (let i = 1; i <= 500; i++) context.progress({ text: "tick " + i }); return { ok: true }; }',
    ),
  );
  await putTool(
    client(url),
    toolContext(
      'cli-slow',
      'export async function execute() { await new Promise((r) => setTimeout(r, 1500)); return { genuine: true }; }',
    ),
  );
});

afterAll(cleanupAll);

async function call(args: string[]): Promise<{ code: number | string; out: string; err: string }> {
  const cli = runCli(['call', ...args, '--store-url', url]);
  const code = await cli.exited;
  return { code, out: cli.stdout.join('\n'), err: cli.stderr.join('') };
}

describe('tools-runner call', () => {
  it('prints the response and exits 0 on success, with nothing on stderr', async () => {
    const { code, out, err } = await call(['cli-echo', '{"n":1}']);
    expect(code).toBe(0);
    expect(err).toBe('');
    expect(JSON.parse(out)).toMatchObject({ tool: 'cli-echo', status: 'success', output: { got: { n: 1 } } });
  });

  it('exits 1 on an error response, 2 on bad usage', async () => {
    const failed = await call(['no-such-tool', '{}']);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.out)).toMatchObject({ status: 'error', error: { code: 'tool.not_found' } });
    const usage = await call(['cli-echo', '{not json']);
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/input is not valid JSON/);
  });
});

describe('tools-runner call ignores forged answers', () => {
  it("prints the runner's answer, not a tool.response.v1 another writer tagged with the request id first", async () => {
    const store = client(url);
    const cli = runCli(['call', 'cli-slow', '{}', '--store-url', url]);
    // The forger sees the request and answers it before the runner does (the tool takes 1.5 s).
    let rid: string | undefined;
    await expect
      .poll(
        async () => {
          const items = await store.listBreadcrumbs({
            schema_name: SCHEMA.ToolRequest,
            include_context: true,
            limit: 20,
          });
          rid = items
            .map((i) => i.context?.['requestId'])
            .find((r, n) => typeof r === 'string' && items[n]?.context?.['tool'] === 'cli-slow') as string | undefined;
          return rid;
        },
        { timeout: 20_000, interval: 20 },
      )
      .toBeDefined();
    await store.createBreadcrumb({
      title: 'Response: cli-slow',
      schema_name: SCHEMA.ToolResponse,
      tags: [WS, TAG.Response, TAG.request(rid as string)],
      context: {
        request_id: rid,
        tool: 'cli-slow',
        status: 'success',
        output: { genuine: false },
        execution_time_ms: 1,
        metadata: {},
        timestamp: new Date().toISOString(),
      },
    });
    expect(await cli.exited).toBe(0);
    expect(JSON.parse(cli.stdout.join('\n'))).toMatchObject({
      request_id: rid,
      status: 'success',
      output: { genuine: true },
    });
  });
});

describe('admin port', () => {
  it('serves /health and Prometheus /metrics', async () => {
    const health = (await (await fetch(`${admin}/health`)).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ ok: true, status: 'ok', lifecycle: 'RUNNING' });
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).toMatch(/^tools_runner_requests_total\{tool="cli-echo",status="success",code="ok"\} \d+$/m);
    expect(metrics).toMatch(/^tools_runner_queue_depth \d+$/m);
    expect(metrics).toMatch(/^tools_runner_pool_size\{state="warm"\} \d+$/m);
    // The embedded store's database size (retention keeps it bounded: docs/store.md).
    expect(metrics).toMatch(/^tools_runner_store_db_bytes\{file="db"\} [1-9]\d*$/m);
  });

  it('tools-runner tail prints executions as they happen', async () => {
    const port = new URL(admin).port;
    // tail's "tailing" line is a log line: client commands show it only at --log-level debug.
    const tail = runCli(['tail', '--admin-port', port, '--log-level', 'debug']);
    await new Promise<void>((resolve) => {
      const check = (): void =>
        tail.stderr.join('').includes('"msg":"tailing"') ? resolve() : void setTimeout(check, 20);
      check();
    });
    await call(['cli-echo', '{"n":2}']);
    const line = await tail.line(/finish cli-echo success/);
    expect(line).toMatch(/^\S+ finish cli-echo success [\d.]+ms rid=/);
    tail.signal('SIGTERM');
    expect(await tail.exited).toBe(0);
  });

  it("tools-runner tail prints a running call's progress reports between its start and finish, escaped and rate-limited", async () => {
    const port = new URL(admin).port;
    const tail = runCli(['tail', '--admin-port', port, '--log-level', 'debug']);
    await expect.poll(() => tail.stderr.join(''), { timeout: 20_000 }).toContain('"msg":"tailing"');
    expect((await call(['cli-progress', '{}'])).code).toBe(0);
    await tail.line(/finish cli-progress success/);
    const lines = tail.stdout.filter((l) => l.includes(' cli-progress'));
    const rid = /rid=(\S+)/.exec(lines[0] ?? '')?.[1];
    expect(lines.every((l) => l.endsWith(`rid=${rid}`))).toBe(true);
    // The first report goes out at once and the last is sent before the finish; a report in between
    // may be replaced by a newer one (rate limit), so only its place is checked when it shows.
    const kinds = lines.map((l) => /^\S+ (start |progress|finish) /.exec(l)?.[1]);
    expect(kinds[0]).toBe('start ');
    expect(kinds.at(-1)).toBe('finish');
    const progress = lines
      .filter((l) => / progress cli-progress /.test(l))
      .map((l) => l.replace(/^\S+ progress cli-progress /, '').replace(/ rid=\S+$/, ''));
    expect(progress[0]).toBe('#1 step 1\\u001b[2J');
    expect(progress.at(-1)).toBe('#3 {"stage":"done","n":3}');
    expect(progress.length === 2 || progress[1] === '#2 step 2').toBe(true);
    for (const line of tail.stdout) expect(line).not.toContain('\u001b');

    // A tool reporting 500 times in a loop does not put 500 lines on the feed; its last report does show.
    expect((await call(['cli-chatty', '{}'])).code).toBe(0);
    await tail.line(/finish cli-chatty success/);
    const chatty = tail.stdout.filter((l) => / progress cli-chatty /.test(l));
    expect(chatty.at(-1)).toMatch(/ progress cli-chatty #500 tick 500 rid=/);
    expect(chatty.length).toBeLessThan(100);
    tail.signal('SIGTERM');
    expect(await tail.exited).toBe(0);
  });
});

// Last: its request stays in the store and is answered later (earlier tests look for cli-slow requests).
describe('tools-runner call without an answer in time', () => {
  it('exits 3 when no answer came in time, saying the call may have run (the request stays in the store)', async () => {
    const { code, err } = await call(['cli-slow', '{}', '--call-timeout-ms', '100']);
    expect(code).toBe(3);
    expect(err).toMatch(
      /^tools-runner call: timeout: no response for request \S+ within 100 ms; the request stays in the store and may still be answered .*\(it may have run: check before retrying\)\n?$/,
    );
  });
});
