// Resolution and checks of the Deno binary: the pinned npm dependency by default, clear config.invalid
// errors for a missing, too old or broken binary (real executables written to a temp dir).

import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode, RunnerError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { compareVersions, defaultDenoCandidates } from '../../src/sandbox/deno-binary.js';
import { createSandbox, resolveDeno } from '../../src/sandbox/index.js';
import { expectNoLeaks, isolateTmp, testConfig } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;

beforeAll(() => {
  tmp = isolateTmp();
});

afterAll(() => {
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

function script(name: string, body: string): string {
  const path = join(tmp.dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe('resolveDeno', () => {
  it('finds the pinned deno npm dependency (or its platform package) and reports its version', async () => {
    const deno = await resolveDeno();
    expect(deno.version).toBe('2.9.6');
    expect(defaultDenoCandidates()).toContain(deno.path);
    expect(deno.path).toMatch(/node_modules\/(deno|@deno\/[a-z0-9-]+)\/deno$/);
  });

  it('accepts an explicit path', async () => {
    const deno = await resolveDeno();
    expect(await resolveDeno(deno.path)).toEqual(deno);
  });

  it.each([
    ['a missing file', () => '/nonexistent/bin/deno', 'Deno not found at /nonexistent/bin/deno'],
    ['a directory', () => '/usr/bin', 'Deno not found at /usr/bin'],
    [
      'an old version',
      () => script('old-deno', 'echo "deno 2.8.0 (stable, release, x86_64-unknown-linux-gnu)"'),
      'Deno 2.8.0 is older than the required 2.9.6',
    ],
    [
      'an older minor',
      () => script('older-deno', 'echo "deno 1.46.3 (stable)"'),
      'Deno 1.46.3 is older than the required 2.9.6',
    ],
  ])('refuses %s with a clear config.invalid error', async (_what, path, message) => {
    await expect(resolveDeno(path())).rejects.toThrow(new RunnerError(ErrorCode.ConfigInvalid, message));
  });

  it('refuses a binary that prints no version or fails', async () => {
    const mute = script('mute-deno', 'echo hello');
    await expect(resolveDeno(mute)).rejects.toThrow(`Deno at ${mute} did not report a version (output "hello")`);
    const failing = script('failing-deno', 'exit 4');
    await expect(resolveDeno(failing)).rejects.toThrow(`Deno at ${failing} failed to run:`);
  });

  it('accepts newer versions', async () => {
    const newer = script('newer-deno', 'echo "deno 2.10.0 (stable)"');
    expect(await resolveDeno(newer)).toEqual({ path: newer, version: '2.10.0' });
  });

  it('createSandbox fails at startup with the same error instead of crashing later', async () => {
    await expect(
      createSandbox({ config: testConfig({ denoPath: '/nonexistent/deno' }), logger: silentLogger() }),
    ).rejects.toThrow(new RunnerError(ErrorCode.ConfigInvalid, 'Deno not found at /nonexistent/deno'));
  });
});

describe('compareVersions', () => {
  it.each([
    ['2.9.6', '2.9.6', 0],
    ['2.10.0', '2.9.6', 1],
    ['2.9.5', '2.9.6', -1],
    ['3.0.0', '2.99.99', 1],
  ])('%s vs %s', (a, b, sign) => {
    expect(Math.sign(compareVersions(a, b))).toBe(sign);
  });
});
