import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { call, crumb, onCleanup, startStore, tempDir } from './helpers.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves with the first stdout line. */
  firstLine: Promise<string>;
}

function runCli(args: string[]): Run {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('TOOLS_RUNNER_')) env[key] = value;
  const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let lineResolve: (line: string) => void = () => {};
  const firstLine = new Promise<string>((resolve) => (lineResolve = resolve));
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    if (out.includes('\n')) lineResolve(out.split('\n')[0]!);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, stdout: () => out, stderr: () => err, exited, firstLine };
}

/** stderr lines that are not JSON log records. */
const plainLines = (text: string): string[] => text.split('\n').filter((line) => line !== '' && !line.startsWith('{'));

describe('tools-runner store (real child process)', () => {
  it('creates the data dir, prints exactly one line once listening, serves, and exits 0 on SIGTERM', async () => {
    const dataDir = join(tempDir(), 'nested', 'data');
    const run = runCli(['store', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir]);
    const line = await run.firstLine;
    expect(line).toMatch(/^store listening on http:\/\/127\.0\.0\.1:\d+$/);
    const url = line.slice('store listening on '.length);
    expect(existsSync(join(dataDir, 'store.db'))).toBe(true);
    const created = await call(url, 'POST', '/breadcrumbs', { body: crumb() });
    expect(created.status).toBe(201);
    expect((await call(url, 'GET', `/breadcrumbs/${created.body.id}`)).status).toBe(200);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toBe(`${line}\n`);
    expect(plainLines(run.stderr())).toEqual([]);
  });

  it('also stops cleanly on SIGINT with an open event stream', async () => {
    const run = runCli(['store', '--port', '0', '--data-dir', tempDir()]);
    const url = (await run.firstLine).slice('store listening on '.length);
    const stream = await fetch(`${url}/events/stream`);
    expect(stream.status).toBe(200);
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(0);
    await stream.body?.cancel().catch(() => {});
  });

  it.each([
    [
      'a malformed secrets key',
      (dir: string) => ['--data-dir', dir, '--secrets-key', 'short'],
      /^tools-runner store: secretsKey must be 64 hex characters or the base64 of 32 bytes/,
    ],
    [
      'an unwritable data dir',
      (dir: string) => {
        writeFileSync(join(dir, 'file'), 'x');
        return ['--data-dir', join(dir, 'file', 'sub')];
      },
      /^tools-runner store: cannot create data directory ".*\/file\/sub": ENOTDIR$/,
    ],
    [
      'a non-loopback host without auth',
      (dir: string) => ['--data-dir', dir, '--host', '0.0.0.0'],
      /^tools-runner store: refusing to serve the store on non-loopback host "0\.0\.0\.0" without authSecret/,
    ],
  ])('fails with one clear stderr line and a non-zero exit on %s', async (_name, args, message) => {
    const run = runCli(['store', '--port', '0', ...args(tempDir())]);
    const code = await run.exited;
    expect(code).not.toBe(0);
    expect(run.stdout()).toBe('');
    const lines = plainLines(run.stderr());
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
  });

  it('fails with one clear stderr line when the port is in use', async () => {
    const other = await startStore();
    const run = runCli(['store', '--port', String(other.port), '--data-dir', tempDir()]);
    expect(await run.exited).toBe(1);
    expect(plainLines(run.stderr())).toEqual([`tools-runner store: port ${other.port} on 127.0.0.1 is already in use`]);
  });
});
