// Network policy: host-list re-validation, the exact Deno command, and what the always-on private
// range deny list does for an allowed NAME that resolves (or redirects) to a private address.
//
// This machine has no internet and no DNS, so "an allowed public name that resolves to 127.0.0.1" is
// shown with the name `localhost` (which the validator refuses, so the process is spawned below the
// validator on purpose). The redirect hop needs a first server at an address the deny list lets
// through, on any machine: the launcher (a typed boundary) narrows the deny list's loopback entry
// from 127.0.0.0/8 to 127.0.0.1, so 127.0.0.2 (also loopback on Linux) stands in for a public host
// that redirects to `localhost`. The control runs use the same allow list without the deny list.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, RunnerError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { buildDenoCommand, HARNESS_PATH, IMPORT_MAP } from '../../src/sandbox/command.js';
import { createSandbox, DENY_NET, resolveDeno, validateNetHosts, type Sandbox } from '../../src/sandbox/index.js';
import { createMemoryGuard } from '../../src/sandbox/memory-guard.js';
import { createDirectLauncher, type Launcher } from '../../src/sandbox/launcher.js';
import { spawnSandboxProcess } from '../../src/sandbox/process.js';
import { runJob } from '../../src/sandbox/run-job.js';
import { codeOf, expectNoLeaks, fixture, isolateTmp, job, localServers, testConfig, tool } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let denoPath: string;
const servers = localServers();

const listen = (host: string, handler: Parameters<typeof servers.listen>[1]): Promise<number> =>
  servers.listen(host, handler);

beforeAll(async () => {
  tmp = isolateTmp();
  denoPath = (await resolveDeno()).path;
});

afterAll(async () => {
  await servers.closeAll();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

describe('validateNetHosts', () => {
  it('normalises plain names, wildcards and ports (":443" pinned unless a port is named)', () => {
    expect(validateNetHosts(['API.Example.com', '*.example.org', 'host.example.net:8443', 'api.example.com'])).toEqual([
      '*.example.org:443',
      'api.example.com:443',
      'host.example.net:8443',
    ]);
    expect(validateNetHosts([])).toEqual([]);
    // The host policy is src/screen's (one policy for definitions and the sandbox): a trailing dot
    // is normalised away rather than refused.
    expect(validateNetHosts(['example.com.'])).toEqual(['example.com:443']);
  });

  it.each([
    [
      'localhost',
      'net host "localhost" is not allowed: Blocked domain: localhost. Private/local networks not allowed.',
    ],
    [
      'db.localhost',
      'net host "db.localhost" is not allowed: Blocked domain: db.localhost. Private/local networks not allowed.',
    ],
    [
      '127.0.0.1',
      'net host "127.0.0.1" is not allowed: Blocked domain: 127.0.0.1. Private/local networks not allowed.',
    ],
    ['127.1', 'net host "127.1" is not allowed: Blocked domain: 127.1. Private/local networks not allowed.'],
    [
      '2130706433',
      'net host "2130706433" is not allowed: Blocked domain: 2130706433. Private/local networks not allowed.',
    ],
    ['[::1]', 'net host "[::1]" is not allowed: Blocked domain: [::1]. Private/local networks not allowed.'],
    [
      '::ffff:127.0.0.1',
      'net host "::ffff:127.0.0.1" is not allowed: Blocked domain: ::ffff:127.0.0.1. Private/local networks not allowed.',
    ],
    [
      '169.254.169.254:80',
      'net host "169.254.169.254:80" is not allowed: Blocked domain: 169.254.169.254:80. Private/local networks not allowed.',
    ],
    ['a..example.com', 'net host "a..example.com" is not allowed: Empty label in network domain: "a..example.com"'],
    ['', 'net host "" is not allowed: Network domain must not be empty'],
    [
      '*.com',
      'net host "*.com" is not allowed: Network domain is a public suffix: "*.com"; name a registrable domain such as "example.com"',
    ],
    [
      '*.co.uk',
      'net host "*.co.uk" is not allowed: Network domain is a public suffix: "*.co.uk"; name a registrable domain such as "example.co.uk"',
    ],
    [
      'printer.local',
      'net host "printer.local" is not allowed: Blocked domain: printer.local. Private/local networks not allowed.',
    ],
    [
      'metadata.google.internal',
      'net host "metadata.google.internal" is not allowed: Blocked domain: metadata.google.internal. Private/local networks not allowed.',
    ],
    [
      'redis.svc',
      'net host "redis.svc" is not allowed: Blocked domain: redis.svc. Private/local networks not allowed.',
    ],
    [
      'api.example.com:0',
      'net host "api.example.com:0" is not allowed: Invalid port in network domain: "api.example.com:0" (must be 1-65535)',
    ],
    [
      'api.example.com:99999',
      'net host "api.example.com:99999" is not allowed: Invalid port in network domain: "api.example.com:99999" (must be 1-65535)',
    ],
    [
      'http://api.example.com',
      'net host "http://api.example.com" is not allowed: Network domain must be a bare host name without scheme or path: "http://api.example.com"',
    ],
    [
      'api.example.com/path',
      'net host "api.example.com/path" is not allowed: Network domain must be a bare host name without scheme or path: "api.example.com/path"',
    ],
    [
      'user@api.example.com',
      'net host "user@api.example.com" is not allowed: Network domain must be a bare host name without scheme or path: "user@api.example.com"',
    ],
    [
      'a_b.example.com',
      'net host "a_b.example.com" is not allowed: Invalid host name in network domain: "a_b.example.com" (labels are letters, digits and inner hyphens)',
    ],
  ])('refuses %j', (host, message) => {
    expect(() => validateNetHosts([host])).toThrow(new RunnerError(ErrorCode.PermissionDenied, message));
  });
});

describe('buildDenoCommand', () => {
  it('is the exact recipe: minimal env, no config/remote/npm, heap flag, allow list only when non-empty, deny list always', () => {
    const base = { denoPath: '/bin/deno', memoryMb: 96, cwd: '/tmp/x/work' };
    const deny = `--deny-net=${DENY_NET.join(',')}`;
    const flags = [
      'run',
      '-q',
      '--no-prompt',
      '--no-config',
      '--no-lock',
      '--no-remote',
      '--no-npm',
      '--no-code-cache',
      `--import-map=${IMPORT_MAP}`,
      '--v8-flags=--max-old-space-size=96',
    ];
    expect(buildDenoCommand({ ...base, net: [] })).toEqual({
      file: '/bin/deno',
      args: [...flags, deny, HARNESS_PATH],
      env: {
        PATH: '/usr/local/bin:/usr/bin:/bin',
        DENO_DIR: '/dev/null/deno-dir',
        DENO_NO_PACKAGE_JSON: '1',
        DENO_NO_UPDATE_CHECK: '1',
        DENO_EMIT_CACHE_MODE: 'disable',
        DENO_TLS_CA_STORE: 'mozilla,system',
        NO_COLOR: '1',
      },
      cwd: '/tmp/x/work',
      // in its launcher's session: only a process granted `run` can start programs that must die with it
      ownGroup: false,
    });
    expect(buildDenoCommand({ ...base, net: [], extra: ['env', 'run'] }).ownGroup).toBe(true);
    expect(buildDenoCommand({ ...base, net: [], extra: ['read', 'write', 'env', 'sys', 'net'] }).ownGroup).toBe(false);
    expect(buildDenoCommand({ ...base, net: ['a.example.com:443', '*.example.org:443'] }).args).toEqual([
      ...flags,
      '--allow-net=a.example.com:443,*.example.org:443',
      deny,
      HARNESS_PATH,
      'net',
    ]);
    expect(deny).toBe(
      '--deny-net=0.0.0.0/8,10.0.0.0/8,100.64.0.0/10,127.0.0.0/8,169.254.0.0/16,172.16.0.0/12,192.0.0.0/24,192.168.0.0/16,198.18.0.0/15,224.0.0.0/4,240.0.0.0/4,[::],[::1]',
    );
  });
});

describe('buildDenoCommand with an import map file', () => {
  it('names the file instead of the 15 KB inline map', () => {
    const args = buildDenoCommand({
      denoPath: '/bin/deno',
      memoryMb: 96,
      cwd: '/tmp/x/work',
      net: [],
      importMapPath: '/tmp/x/import-map.json',
    }).args;
    expect(args).toContain('--import-map=/tmp/x/import-map.json');
    expect(args.some((arg) => arg.includes('data:application/json'))).toBe(false);
    expect(args.join(' ').length).toBeLessThan(1_000);
  });
});

/** Runs fetch-url in a real harness process whose allow list is `net` (validation bypassed on purpose). */
async function fetchThroughHarness(net: string[], url: string, launcher: Launcher = createDirectLauncher()) {
  const logger = silentLogger();
  const guard = await createMemoryGuard({ logger, location: null });
  const limits = { maxOutputBytes: 1 << 20, maxFrameBytes: 1 << 20, maxLogLineBytes: 4096 };
  const proc = spawnSandboxProcess({
    id: 1,
    key: 'net-test',
    denoPath,
    net,
    memoryMb: 128,
    limits,
    guard,
    launcher,
    logger,
  });
  await proc.ready;
  const settings = {
    seq: 1,
    source64: Buffer.from(fixture('fetch-url')).toString('base64'),
    lang: 'ts' as const,
    timeoutMs: 30_000,
    reuse: false,
    maxResultBytes: 1 << 16,
    maxOutputBytes: 1 << 20,
    maxLogBytes: 4096,
    startedAt: performance.now(),
  };
  const outcome = await runJob(proc, job(tool('fetch-url'), { url }), settings, guard);
  await proc.exited;
  guard.close();
  return outcome.result;
}

/** The control: the same allow list WITHOUT the deny list, in a plain script. */
async function fetchWithoutDenyList(allow: string, url: string): Promise<string> {
  const script = join(tmp.dir, 'control.ts');
  writeFileSync(script, `const r = await fetch(${JSON.stringify(url)}); console.log(r.status, await r.text());`);
  const run = await execa(denoPath, ['run', '-q', '--no-prompt', `--allow-net=${allow}`, script], {
    env: { PATH: '/usr/bin:/bin', DENO_DIR: `${tmp.dir}/control-deno-dir`, NO_COLOR: '1' },
    extendEnv: false,
    reject: false,
    cwd: tmp.dir,
  });
  return run.stdout.trim() || run.stderr.trim();
}

describe('private-range deny list (checked after DNS resolution and at every redirect hop)', () => {
  it('an allowed name resolving to 127.0.0.1 reaches the loopback service without the deny list, and is refused with it', async () => {
    const port = await listen('127.0.0.1', (_req, res) => res.end('internal secret page'));
    expect(await fetchWithoutDenyList(`localhost:${port}`, `http://localhost:${port}/`)).toBe(
      '200 internal secret page',
    );
    const result = await fetchThroughHarness([`localhost:${port}`], `http://localhost:${port}/`);
    expect(codeOf(result)).toBe('permission.denied');
    expect(result.ok ? '' : result.error.message).toContain(`Requires net access to "127.0.0.1:${port}"`);
  });

  /** The direct launcher, with the deny list's 127.0.0.0/8 narrowed to 127.0.0.1 (everything else unchanged). */
  const narrowedLoopback: Launcher = {
    launch(cmd) {
      const args = cmd.args.map((arg) =>
        arg.startsWith('--deny-net=') ? arg.replace('127.0.0.0/8', '127.0.0.1') : arg,
      );
      expect(args).not.toEqual(cmd.args);
      return createDirectLauncher().launch({ ...cmd, args });
    },
    close: async () => undefined,
  };

  it('an allowed host that redirects to an allowed name resolving to a private address is refused at the hop', async () => {
    const inner = await listen('127.0.0.1', (_req, res) => res.end('internal secret page'));
    const outer = await listen('127.0.0.2', (_req, res) => {
      res.writeHead(302, { location: `http://localhost:${inner}/` });
      res.end();
    });
    const allow = `127.0.0.2:${outer},localhost:${inner}`;
    expect(await fetchWithoutDenyList(allow, `http://127.0.0.2:${outer}/`)).toBe('200 internal secret page');
    // the first server alone is reachable through the narrowed deny list: the refusal below is the hop's
    const direct = await fetchThroughHarness([`127.0.0.2:${outer}`], `http://127.0.0.2:${outer}/`, narrowedLoopback);
    expect(direct).toMatchObject({
      ok: false,
      error: {
        code: 'permission.denied',
        message: `Requires net access to "localhost:${inner}", run again with the --allow-net flag`,
      },
    });
    const result = await fetchThroughHarness(
      [`127.0.0.2:${outer}`, `localhost:${inner}`],
      `http://127.0.0.2:${outer}/`,
      narrowedLoopback,
    );
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'permission.denied',
        message: `fetch failed: error sending request for url (http://localhost:${inner}/): client error (Connect): Requires net access to "127.0.0.1:${inner}", run again with the --allow-net flag`,
      },
    });
  });
});

describe('through the sandbox', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await createSandbox({ config: testConfig({ poolSize: 0 }), logger: silentLogger() });
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  it('a tool declaring a private host is refused before anything is spawned', async () => {
    const before = sandbox.stats().spawned;
    const result = await sandbox.run(
      job(tool('fetch-url', { net: ['api.example.com', 'localhost'] }), { url: 'http://localhost/' }),
    );
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'permission.denied',
        message: 'net host "localhost" is not allowed: Blocked domain: localhost. Private/local networks not allowed.',
      },
    });
    expect(sandbox.stats().spawned).toBe(before);
  });

  it('an allowed name is pinned to :443 and other hosts stay closed', async () => {
    const t = tool('fetch-url', { net: ['api.example.com'] });
    const plain = await sandbox.run(job(t, { url: 'http://api.example.com/' }));
    expect(codeOf(plain)).toBe('permission.denied');
    expect(plain.ok ? '' : plain.error.message).toContain('Requires net access to "api.example.com:80"');
    const other = await sandbox.run(job(t, { url: 'https://other.example.org/' }));
    expect(other.ok ? '' : other.error.message).toContain('Requires net access to "other.example.org:443"');
    const metadata = await sandbox.run(job(t, { url: 'http://169.254.169.254/' }));
    expect(codeOf(metadata)).toBe('permission.denied');
  });
});
