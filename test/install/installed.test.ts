// The product as installed (issue 19): `npm pack` of this checkout, installed into a temp prefix the
// way a user installs it, then run from other working directories: `tools-runner --version`, `start`
// with the default data dir (XDG_DATA_HOME pointed at a temp dir) serving the shipped tools, `call`
// and `export` from a third directory finding the service's key, and docs/mcp.md's desktop
// configuration run as written (its command and args; only the store port is this test's).
//
// One install for the file. better-sqlite3 is installed from a local prebuild made of this checkout's
// compiled module (prebuild-install's `local_prebuilds`), so the install takes seconds instead of a
// node-gyp compile of minutes; the other dependencies come from the npm cache (--prefer-offline).

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readme } from '../docs/readme-blocks.js';
import { cleanupAll, tempDir } from '../e2e/harness.js';
import { localPrebuilds, runInstalled, type Installed } from './install-helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const shipped = readdirSync(join(root, 'bootstrap-breadcrumbs', 'tools-self-contained'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.replace(/\.json$/, ''))
  .sort();

let installed: Installed;
let dataHome: string;
let port: string;

beforeAll(async () => {
  const work = tempDir('tr-install-');
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', work, '--loglevel=error'], {
    cwd: root,
    stdio: 'pipe',
  });
  const tarball = join(work, readdirSync(work).find((f) => f.endsWith('.tgz')) as string);
  const prefix = join(work, 'prefix');
  mkdirSync(prefix);
  execFileSync(
    'npm',
    ['install', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball],
    {
      cwd: work,
      stdio: 'pipe',
      env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: localPrebuilds(work) },
    },
  );
  installed = { bin: join(prefix, 'node_modules', '.bin') };
  dataHome = tempDir('tr-install-xdg-');
}, 600_000);

afterAll(cleanupAll);

describe('an installed copy, from other working directories', () => {
  it('tools-runner --version', async () => {
    const { code, out } = await runInstalled(installed, ['--version'], { cwd: tempDir('tr-cwd-') }).result;
    expect(out.trim()).toBe(
      `tools-runner ${(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version}`,
    );
    expect(code).toBe(0);
  });

  it('start serves the shipped tools from the default data dir; call and export from a third directory find its key', async () => {
    const service = runInstalled(installed, ['start', '--port', '0', '--admin-port', '-1', '--skip-examples'], {
      cwd: tempDir('tr-cwd-service-'),
      env: { XDG_DATA_HOME: dataHome },
    });
    const url = (await service.line(/^store listening on /)).replace('store listening on ', '');
    await service.line(/^runner ready$/);
    port = new URL(url).port;
    const third = tempDir('tr-cwd-client-');
    const call = await runInstalled(installed, ['call', 'calculator', '{"expression":"2 + 3 * 4"}', '--port', port], {
      cwd: third,
      env: { XDG_DATA_HOME: dataHome },
    }).result;
    expect(call.err).toBe('');
    expect(JSON.parse(call.out)).toMatchObject({ status: 'success', output: { result: 14 } });
    const exported = await runInstalled(installed, ['export', '--port', port], {
      cwd: third,
      env: { XDG_DATA_HOME: dataHome },
    }).result;
    expect(exported.code).toBe(0);
    const names = (JSON.parse(exported.out) as { tools: Array<{ function: { name: string } }> }).tools
      .map((t) => t.function.name)
      .sort();
    expect(names).toEqual(shipped);
  });

  it('start --isolation process runs calls through the shipped Deno relay launcher', async () => {
    const home = tempDir('tr-install-xdg-process-');
    const service = runInstalled(
      installed,
      ['start', '--port', '0', '--admin-port', '-1', '--skip-examples', '--isolation', 'process'],
      { cwd: tempDir('tr-cwd-service-'), env: { XDG_DATA_HOME: home } },
    );
    const url = (await service.line(/^store listening on /)).replace('store listening on ', '');
    await service.line(/^runner ready$/);
    const call = await runInstalled(
      installed,
      ['call', 'calculator', '{"expression":"6 * 7"}', '--port', new URL(url).port],
      { cwd: tempDir('tr-cwd-client-'), env: { XDG_DATA_HOME: home } },
    ).result;
    expect(call.err).toBe('');
    expect(JSON.parse(call.out)).toMatchObject({ status: 'success', output: { result: 42 } });
  });

  it("docs/mcp.md's desktop configuration, run as written from the installed copy, lists the shipped tools over stdio", async () => {
    const config = JSON.parse(readme().byId('mcp-desktop-config').body) as {
      mcpServers: Record<string, { command: string; args: string[]; env?: Record<string, string> }>;
    };
    const server = config.mcpServers['tools-runner'];
    if (!server || port === undefined)
      throw new Error('no tools-runner server in the desktop config, or no service started');
    const args = server.args.map((arg) => arg.replace('http://127.0.0.1:8081', `http://127.0.0.1:${port}`));
    const transport = new StdioClientTransport({
      command: join(installed.bin, server.command),
      args,
      cwd: tempDir('tr-cwd-desktop-'),
      env: {
        PATH: `${installed.bin}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
        HOME: dataHome,
        XDG_DATA_HOME: dataHome,
        ...server.env,
      },
      stderr: 'pipe',
    });
    const mcp = new Client({ name: 'desktop-config-test', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      const titles = (await mcp.listTools()).tools.map((t) => t.title ?? t.name).sort();
      expect(titles).toEqual(shipped);
    } finally {
      await mcp.close();
    }
  });
});
