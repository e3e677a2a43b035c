// Client commands run from another directory, as a person at a terminal does (issue 19): they find
// the runner key of a service started with the default data directory ($XDG_DATA_HOME/tools-runner),
// never make a key of their own, say in one line what to pass when there is none, and name the likely
// cause (another runner secret) when the catalog's seal does not verify. `bootstrap` confirms the
// running service loaded what it wrote.

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupAll, runCli, tempDir, toolContext, type CliProcess } from '../e2e/harness.js';

let dataHome: string;
let url: string;
let service: CliProcess;
let toolsDir: string;
/** The working directory of the client commands: neither the checkout nor the service's. */
let elsewhere: string;

// No TOOLS_RUNNER_RUNNER_SECRET (the harness sets one): the service makes its own key file.
const noSecret = (home: string): Record<string, string> => ({ TOOLS_RUNNER_RUNNER_SECRET: '', XDG_DATA_HOME: home });

async function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | string; out: string; err: string }> {
  const cli = runCli(args, env, { cwd: elsewhere });
  const code = await cli.exited;
  return { code, out: cli.stdout.join('\n'), err: cli.stderr.join('') };
}

beforeAll(async () => {
  dataHome = tempDir('tr-xdg-');
  elsewhere = tempDir('tr-cwd-');
  const serviceCwd = tempDir('tr-service-cwd-');
  service = runCli(['start', '--port', '0', '--admin-port', '-1', '--no-bootstrap'], noSecret(dataHome), {
    cwd: serviceCwd,
  });
  url = (await service.line(/^store listening on /, 60_000)).replace('store listening on ', '');
  await service.line(/^runner ready$/, 60_000);
  // Nothing relative to the working directory: no ./data beside the service.
  expect(readdirSync(serviceCwd)).toEqual([]);
  toolsDir = tempDir('tr-tools-');
  mkdirSync(join(toolsDir, 'tools'));
  writeFileSync(
    join(toolsDir, 'tools', 'greet.json'),
    JSON.stringify(
      toolContext('greet', 'export async function execute(input) { return { hello: input.n ?? 0 }; }', {
        version: '1.2.0',
      }),
    ),
  );
});

afterAll(cleanupAll);

describe('a service started with the default data dir', () => {
  it('keeps its key in $XDG_DATA_HOME/tools-runner/runner.key, in the --runner-secret format', () => {
    const text = readFileSync(join(dataHome, 'tools-runner', 'runner.key'), 'utf8');
    expect(text).toMatch(/^hex:[0-9a-f]{64}\n$/);
    expect(existsSync(join(dataHome, 'tools-runner', 'store.db'))).toBe(true);
  });

  it('bootstrap from another directory finds its key, and confirms the service loaded the tool; call runs it', async () => {
    const boot = await run(['bootstrap', toolsDir, '--store-url', url, '--skip-examples'], noSecret(dataHome));
    expect(boot.err).toBe('');
    expect(boot.out).toContain('the running service lists all 1 tool(s) at their new version');
    expect(boot.code).toBe(0);
    const call = await run(['call', 'greet', '{"n":3}', '--store-url', url], noSecret(dataHome));
    expect(call.code).toBe(0);
    expect(JSON.parse(call.out)).toMatchObject({ status: 'success', output: { hello: 3 } });
    // The audit log of the call is under the service's data dir, not the working directory.
    await expect
      .poll(
        () =>
          existsSync(join(dataHome, 'tools-runner', 'audit'))
            ? readdirSync(join(dataHome, 'tools-runner', 'audit')).length
            : 0,
        { timeout: 20_000 },
      )
      .toBe(1);
    const exported = await run(['export', '--store-url', url], noSecret(dataHome));
    expect(exported.code).toBe(0);
    expect(
      (JSON.parse(exported.out) as { tools: Array<{ function: { name: string } }> }).tools.map((t) => t.function.name),
    ).toContain('greet');
  });

  it("bootstrap reports a tool the running service refuses, with the runner's reason, exit 1", async () => {
    const dir = tempDir('tr-tools-refused-');
    // Accepted by this bootstrap (--bootstrap-allow env), refused by the runner (its --bootstrap-allow is empty).
    writeFileSync(
      join(dir, 'envy.json'),
      JSON.stringify(
        toolContext('envy', 'export async function execute() { return {}; }', {
          permissions: { net: false, env: true },
        }),
      ),
    );
    const { code, out } = await run(
      ['bootstrap', dir, '--store-url', url, '--skip-examples', '--bootstrap-allow', 'env'],
      noSecret(dataHome),
    );
    expect(out).toMatch(/^created +envy /m);
    expect(out).toMatch(
      /^not loaded envy@1\.0\.0 — the runner refused it: \/permissions\/env: Permission "env" is not allowed for bootstrapped tools unless listed in bootstrapAllow \(currently \[\]\)$/m,
    );
    expect(code).toBe(1);
  });

  it('bootstrap into a store no runner serves says so after --bootstrap-wait-ms, exit 1', async () => {
    const store = runCli(['store', '--port', '0', '--data-dir', tempDir('tr-lone-store-')], {}, { cwd: elsewhere });
    const lone = (await store.line(/^store listening on /)).replace('store listening on ', '');
    const { code, out } = await run(
      ['bootstrap', toolsDir, '--store-url', lone, '--skip-examples', '--bootstrap-wait-ms', '500'],
      noSecret(dataHome),
    );
    expect(out).toMatch(/^created +greet /m);
    expect(out).toContain(
      'not loaded greet@1.2.0 — no runner has published a tool.catalog.v1 for workspace:tools in this store (is "tools-runner start" serving it?)',
    );
    expect(code).toBe(1);
  });

  it('the key file text passed as --runner-secret is the same runner', async () => {
    const secret = readFileSync(join(dataHome, 'tools-runner', 'runner.key'), 'utf8').trim();
    const other = tempDir('tr-xdg-other-');
    const exported = await run(['export', '--store-url', url, '--runner-secret', secret], noSecret(other));
    expect(exported.err).toBe('');
    expect(exported.code).toBe(0);
    expect(exported.out).toContain('"greet"');
  });
});

describe('a client command that finds no runner key', () => {
  it.each([
    ['bootstrap', ['bootstrap', 'DIR', '--skip-examples']],
    ['export', ['export']],
    ['approvals', ['approvals']],
    ['approve', ['approve', 'some-id']],
    ['mcp', ['mcp']],
  ])('%s makes none, says in one line what to pass, exit 2', async (name, args) => {
    const empty = tempDir('tr-xdg-empty-');
    const file = join(empty, 'tools-runner', 'runner.key');
    const { code, out, err } = await run(
      [...args.map((a) => (a === 'DIR' ? toolsDir : a)), '--store-url', url],
      noSecret(empty),
    );
    expect(out).toBe('');
    const lines = err.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tools-runner \S+: /);
    expect(
      lines[0]?.startsWith(
        `tools-runner ${name}: no runner key: ${file} does not exist (a client command never makes its own; the service creates it in its --data-dir). Pass the service's --data-dir (TOOLS_RUNNER_DATA_DIR), or its --runner-secret (TOOLS_RUNNER_RUNNER_SECRET)`,
      ),
    ).toBe(true);
    expect(code).toBe(2);
    expect(existsSync(file)).toBe(false);
  });
});

describe('a client command with another runner secret', () => {
  const wrong = { ...noSecret('/nonexistent-xdg'), TOOLS_RUNNER_RUNNER_SECRET: 'not-the-runners-secret-0123' };
  const cause =
    'whose seal does not verify with this runner secret: the runner most likely uses a different runner secret';

  it('export names the likely cause instead of "no catalog", exit 1', async () => {
    const { code, out, err } = await run(['export', '--store-url', url], wrong);
    expect(out).toBe('');
    expect(err).toContain(
      `tools-runner export: no catalog to export: the store holds 1 tool.catalog.v1 for workspace:tools ${cause}`,
    );
    expect(code).toBe(1);
  });

  it('bootstrap writes, then reports the tool as not loaded with the likely cause, exit 1', async () => {
    const dir = tempDir('tr-tools-wrong-');
    writeFileSync(
      join(dir, 'wrong.json'),
      JSON.stringify(toolContext('wrongkey', 'export async function execute() { return {}; }')),
    );
    const { code, out } = await run(
      ['bootstrap', dir, '--store-url', url, '--skip-examples', '--bootstrap-wait-ms', '1000'],
      wrong,
    );
    expect(out).toMatch(/^created +wrongkey /m);
    expect(out).toContain(`not loaded wrongkey@1.0.0 — the store holds 1 tool.catalog.v1 for workspace:tools ${cause}`);
    expect(out).toContain('1 of 1 tool(s) not loaded by the running service');
    expect(code).toBe(1);
  });

  it('mcp serves no tools and says why on stderr', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url)), 'mcp', '--store-url', url],
      cwd: elsewhere,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: elsewhere, TMPDIR: tempDir('tr-mcp-tmp-'), ...wrong },
      stderr: 'pipe',
    });
    const stderr: string[] = [];
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const mcp = new Client({ name: 'client-keys-test', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      expect((await mcp.listTools()).tools).toEqual([]);
      await expect
        .poll(() => stderr.join(''), { timeout: 20_000 })
        .toContain('MCP serves no tools: no catalog sealed with this runner secret');
      expect(stderr.join('')).toContain(cause);
    } finally {
      await mcp.close();
    }
  });
});

describe('bootstrap when the service stops loading', () => {
  it('names a tool still listed at its old version, and one never listed, exit 1', async () => {
    service.signal('SIGTERM');
    expect(await service.exited).toBe(0);
    const dir = tempDir('tr-tools-stopped-');
    writeFileSync(
      join(dir, 'greet.json'),
      JSON.stringify(
        toolContext('greet', 'export async function execute() { return { v: 2 }; }', { version: '1.3.0' }),
      ),
    );
    writeFileSync(
      join(dir, 'later.json'),
      JSON.stringify(toolContext('later', 'export async function execute() { return {}; }')),
    );
    const store = runCli(
      ['store', '--port', new URL(url).port, '--data-dir', join(dataHome, 'tools-runner')],
      { XDG_DATA_HOME: dataHome },
      { cwd: elsewhere },
    );
    await store.line(/^store listening on /);
    const { code, out } = await run(
      ['bootstrap', dir, '--store-url', url, '--skip-examples', '--bootstrap-wait-ms', '500'],
      noSecret(dataHome),
    );
    expect(out).toMatch(/^updated +greet /m);
    expect(out).toContain(
      'not loaded greet@1.3.0 — the runner still lists version 1.2.0 after 0.5 s (its log says why: "tool rejected"; --bootstrap-wait-ms to wait longer)',
    );
    expect(out).toContain(
      'not loaded later@1.0.0 — not in the runner\'s catalog after 0.5 s (its log says why: "tool rejected"; --bootstrap-wait-ms to wait longer)',
    );
    expect(code).toBe(1);
  });
});
