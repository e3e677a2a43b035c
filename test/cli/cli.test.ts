// The CLI as a new user meets it (issue 10, "first use without surprises"), with real processes:
// per-command help, one-line answers when no store is there, the 413 hint, quiet stderr, text or
// JSON logs for `start`, bootstrap refusing tools whose examples fail, `export --from-files` offline,
// and agent text printed terminal-safe by `call` and `tail` (issue 9).

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA, TAG } from '../../src/breadcrumbs/messages.js';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import {
  cleanupAll,
  client,
  putTool,
  request,
  runCli,
  startRunnerWithStore,
  tempDir,
  toolContext,
  type CliProcess,
} from '../e2e/harness.js';

const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/;
const COMMANDS = [
  'start',
  'store',
  'call',
  'list',
  'describe',
  'tail',
  'test',
  'bootstrap',
  'export',
  'approvals',
  'approve',
  'deny',
  'mcp',
  'config',
];
const HOSTILE = [
  '\u001b[2J\u001b[31mred',
  '\u001b]8;;https://evil.example/\u0007click\u001b]8;;\u0007',
  'calc\rsafe',
  'invoice\u202Efdp.exe',
  '\u009b31mC1',
];

async function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | string; out: string; err: string }> {
  const cli = runCli(args, env);
  const code = await cli.exited;
  return { code, out: cli.stdout.join('\n'), err: cli.stderr.join('') };
}

let url: string;
let admin: string;
let runner: CliProcess;
let c: StoreClient;

beforeAll(async () => {
  ({ url, runner } = await startRunnerWithStore(['--admin-port', '0', '--max-body-bytes', '4096'], {
    TOOLS_RUNNER_LOG_LEVEL: 'info',
  }));
  const line = runner.stderr
    .join('')
    .split('\n')
    .find((l) => l.includes('"msg":"admin port listening"'));
  admin = (JSON.parse(line as string) as { url: string }).url;
  c = client(url);
  await putTool(
    c,
    toolContext(
      'hostile-output',
      `export async function execute() { return { s: ${JSON.stringify(HOSTILE.join('|'))} }; }`,
    ),
  );
});

afterAll(cleanupAll);

describe('help', () => {
  it.each(COMMANDS)('tools-runner %s --help: usage, options and exit codes on stdout, exit 0', async (name) => {
    const { code, out, err } = await run([name, '--help']);
    expect(code).toBe(0);
    expect(err).toBe('');
    expect(out).toMatch(new RegExp(`^usage: tools-runner ${name}\\b`));
    expect(out).toMatch(/\nexit codes:\n {2}0 {4}/);
    expect(out).toContain('--log-level');
  });

  it('call --help lists exit 2 for bad JSON and 4 for no store; `help call` prints the same', async () => {
    const viaFlag = await run(['call', '--help']);
    expect(viaFlag.out).toContain('  2    bad usage, or the input is not valid JSON');
    expect(viaFlag.out).toContain("  4    no store reachable at the store URL, or it refused the CLI's credentials");
    expect(viaFlag.out).toContain('--call-timeout-ms');
    expect((await run(['help', 'call'])).out).toBe(viaFlag.out);
  });

  it('an unknown command (or help topic) exits 2 with the known ones', async () => {
    expect(await run(['nope'])).toEqual({
      code: 2,
      out: '',
      err: `tools-runner: unknown command "nope" (known: ${COMMANDS.join(', ')}; tools-runner help)\n`,
    });
    expect((await run(['help', 'nope'])).code).toBe(2);
  });
});

describe('client commands without a store', () => {
  it.each([
    ['call', ['call', 'echo', '{}']],
    ['bootstrap', ['bootstrap']],
    ['export', ['export']],
  ])('%s says in one line what is missing and how to fix it, exit 4', async (name, args) => {
    const { code, out, err } = await run([...args, '--store-url', 'http://127.0.0.1:1']);
    expect(code).toBe(4);
    expect(out).toBe('');
    const lines = err.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^tools-runner ${name}: no store at http://127\\.0\\.0\\.1:1 \\(connection refused\\)\\. Start one with "tools-runner start", or point --store-url \\(TOOLS_RUNNER_STORE_URL\\) at a running store\\.`,
      ),
    );
  });

  it('export --from-files works offline from the bootstrap directory and manifests', async () => {
    const dir = tempDir('tr-export-');
    const manifest = join(dir, 'tools.json');
    writeFileSync(
      manifest,
      JSON.stringify({
        tools: [
          { name: 'host_cat', description: 'cat on the host', schema: { type: 'object' }, command: ['/bin/cat'] },
        ],
      }),
    );
    const { code, out, err } = await run([
      'export',
      '--from-files',
      '--manifests',
      manifest,
      '--store-url',
      'http://127.0.0.1:1',
    ]);
    expect(err).toBe('');
    expect(code).toBe(0);
    const exported = JSON.parse(out) as {
      format: string;
      tools: Array<{ type: string; function: { name: string } }>;
      reverse: Record<string, string>;
    };
    expect(exported.format).toBe('openai');
    expect(exported.tools.map((t) => t.function.name)).toEqual([
      'breadcrumb-create',
      'breadcrumb-search',
      'browser-capture',
      'calculator',
      'context-builder',
      'echo',
      'host_cat',
      'http-request',
      'json-transform',
      'ollama',
      'openrouter',
      'random',
      'slugify',
      'timer',
      'workflow',
    ]);
  });
});

describe('call', () => {
  it('bad JSON exits 2; an input over the store limit names the 413 and --max-body-bytes, exit 1', async () => {
    const bad = await run(['call', 'echo', '{nope', '--store-url', url]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^tools-runner call: input is not valid JSON \(/);
    const big = await run(['call', 'echo', JSON.stringify({ message: 'x'.repeat(5000) }), '--store-url', url]);
    expect(big.code).toBe(1);
    expect(big.out).toBe('');
    expect(big.err).toMatch(
      /^tools-runner call: the store refused the request with HTTP 413 \(payload too large\): the request is \d+ bytes, over the store's body limit\. Send a smaller input, or raise the limit with --max-body-bytes \(TOOLS_RUNNER_MAX_BODY_BYTES\) on the process that runs the store\.\n$/,
    );
  });

  it('prints a tool output holding escape sequences, C1 and bidi characters escaped, as valid JSON', async () => {
    const { code, out, err } = await run(['call', 'hostile-output', '{}', '--store-url', url]);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).not.toMatch(RAW);
    expect(JSON.parse(out)).toMatchObject({ status: 'success', output: { s: HOSTILE.join('|') } });
  });
});

describe('tail', () => {
  it.each([
    ['text', []],
    ['json', ['json']],
  ])('%s: agent-chosen tool names arrive escaped, never raw', async (_mode, extra) => {
    const tail = runCli(['tail', ...extra, '--admin-port', new URL(admin).port, '--log-level', 'debug']);
    await expect.poll(() => tail.stderr.join(''), { timeout: 20_000 }).toContain('"msg":"tailing"');
    const rids: string[] = [];
    for (const name of HOSTILE) rids.push(await request(c, name, {}));
    for (const rid of rids) await tail.line(new RegExp(`${rid}`));
    await expect
      .poll(() => tail.stdout.filter((l) => l.includes('finish') || l.includes('execution:finished')).length, {
        timeout: 20_000,
      })
      .toBeGreaterThanOrEqual(HOSTILE.length);
    tail.signal('SIGTERM');
    expect(await tail.exited).toBe(0);
    for (const line of tail.stdout) expect(line).not.toMatch(RAW);
    if (extra.length > 0) {
      const tools = tail.stdout.map((l) => (JSON.parse(l) as { tool: string }).tool);
      for (const name of HOSTILE) expect(tools).toContain(name);
    } else {
      expect(tail.stdout.join('\n')).toContain(' finish \\u001b[2J\\u001b[31mred error tool.not_found ');
      expect(tail.stdout.join('\n')).toContain(' finish invoice\\u202efdp.exe error tool.not_found ');
      expect(tail.stdout.join('\n')).toContain(' finish calc\\u000dsafe error tool.not_found ');
    }
  });
});

describe('logs of start', () => {
  it('JSON lines when stderr is not a terminal (auto), readable text with --log-format text', async () => {
    const auto = runner.stderr
      .join('')
      .split('\n')
      .filter((l) => l !== '');
    expect(auto.length).toBeGreaterThan(0);
    for (const line of auto) expect(() => JSON.parse(line)).not.toThrow();
    const { runner: text } = await startRunnerWithStore(['--log-format', 'text'], { TOOLS_RUNNER_LOG_LEVEL: 'info' });
    const lines = text.stderr
      .join('')
      .split('\n')
      .filter((l) => l !== '');
    expect(lines.some((l) => /^\d\d:\d\d:\d\d\.\d{3} INFO  runner ready .*workspace=workspace:tools/.test(l))).toBe(
      true,
    );
    for (const line of lines) expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO |WARN |ERROR) /);
  });
});

describe('bootstrap', () => {
  const dir = (): string => {
    const d = tempDir('tr-boot-');
    mkdirSync(join(d, 'tools'));
    writeFileSync(
      join(d, 'tools', 'looper.json'),
      JSON.stringify(
        toolContext('looper', 'export async function execute() { while (true) {} }', {
          limits: { timeout_ms: 500, memory_mb: 64 },
          examples: [{ description: 'spins forever', input: {} }],
        }),
      ),
    );
    writeFileSync(
      join(d, 'tools', 'fine.json'),
      JSON.stringify(toolContext('fine', 'export async function execute(input) { return { got: input }; }')),
    );
    return d;
  };
  const inStore = async (name: string): Promise<boolean> =>
    (await c.listBreadcrumbs({ schema_name: SCHEMA.ToolCode, tag: TAG.tool(name) })).length > 0;

  it('rejects a tool whose example fails (an infinite loop) and says why; --skip-examples puts it in anyway', async () => {
    const d = dir();
    const first = await run(['bootstrap', d, '--store-url', url]);
    expect(first.err).toBe('');
    expect(first.code).toBe(1);
    const rows = first.out.split('\n');
    expect(rows).toContainEqual(
      expect.stringMatching(/^created {3}fine {21}\S+fine\.json {2}\(1 example\(s\) passed\)$/),
    );
    expect(rows).toContainEqual(
      expect.stringMatching(
        /^rejected {2}looper {19}\S+looper\.json {2}— example 1 \(spins forever\) failed: timeout: .* \(--skip-examples to bootstrap anyway\)$/,
      ),
    );
    expect(rows).toContain('2 file(s): 1 created, 0 updated, 0 unchanged, 1 rejected');
    expect(rows.at(-1)).toMatch(
      /^note: \S+ is not this runner's --bootstrap-dir \(\/\S+\/bootstrap-breadcrumbs\): these tools are operator tools \(stamped with the runner key\) and run under the operator's policy, but the runner does not apply them again at its next start/,
    );
    expect(await inStore('looper')).toBe(false);
    expect(await inStore('fine')).toBe(true);

    const skipped = await run(['bootstrap', d, '--store-url', url, '--skip-examples']);
    expect(skipped.code, `${skipped.out}\n${skipped.err}`).toBe(0);
    expect(skipped.out.split('\n')).toContainEqual(
      expect.stringMatching(/^created {3}looper {19}\S+looper\.json {2}\(examples not run: --skip-examples\)$/),
    );
    expect(skipped.out.split('\n')).toContainEqual(expect.stringMatching(/^unchanged fine {21}\S+fine\.json$/));
    expect(await inStore('looper')).toBe(true);
  });
});
