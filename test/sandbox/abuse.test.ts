// Abuse cases of docs/sandbox.md §4 that hit Deno's permission sandbox or the harness protocol: each
// asserts the exact result code, and that a normal call right after it still succeeds; in both isolation modes.

import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import type { ExecutionResult } from '../../src/result.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { codeOf, expectNoLeaks, isolateTmp, job, testConfig, tool, waitFor } from './helpers.js';

let sandbox: Sandbox;
let tmp: ReturnType<typeof isolateTmp>;

async function expectHealthy(): Promise<void> {
  const result = await sandbox.run(job(tool('echo'), { after: 'abuse' }));
  expect(result).toMatchObject({ ok: true, output: { input: { after: 'abuse' } } });
}

function errorOf(result: ExecutionResult) {
  if (result.ok) throw new Error(`expected a failure, got output ${JSON.stringify(result.output)}`);
  return result.error;
}

// Every case runs in both isolation modes: warm (the default) and process.
describe.each(['warm', 'process'] as const)('%s isolation', (isolation) => {
  beforeAll(async () => {
    tmp = isolateTmp();
    sandbox = await createSandbox({ config: testConfig({ isolation }), logger: silentLogger() });
  });

  afterAll(async () => {
    await sandbox?.close();
    expectNoLeaks(tmp.dir);
    tmp.restore();
  });

  describe('permission sandbox', () => {
    it.each([
      ['read-passwd', {}, 'Requires read access to "/etc/passwd"'],
      ['fetch-file', {}, 'Requires read access to "/etc/passwd"'],
      ['import-hostname-url', {}, 'Requires read access to "/etc/hostname"'],
      ['env', {}, 'Requires env access'],
      ['command', {}, 'Requires run access to "sh"'],
      ['fetch-url', { url: 'http://169.254.169.254/latest/meta-data/' }, 'Requires net access to "169.254.169.254:80"'],
      ['fetch-url', { url: 'http://127.1/' }, 'Requires net access to "127.0.0.1:80"'],
      ['fetch-url', { url: 'http://2130706433/' }, 'Requires net access to "127.0.0.1:80"'],
      ['fetch-url', { url: 'http://[::1]/' }, 'Requires net access to "[::1]:80"'],
      ['import-npm', {}, 'npm specifiers were requested; but --no-npm is specified'],
      ['import-remote', {}, 'A remote specifier was requested: "https://esm.sh/x", but --no-remote is specified.'],
    ])('%s %j ends in permission.denied', async (name, input, message) => {
      const result = await sandbox.run(job(tool(name), input));
      expect(codeOf(result)).toBe('permission.denied');
      expect(errorOf(result).message).toContain(message);
      expect(errorOf(result).retryable).toBe(false);
      await expectHealthy();
    });

    it('a static import of "/etc/hostname" cannot even resolve from a data: module (tool.error)', async () => {
      const result = await sandbox.run(job(tool('import-hostname')));
      expect(codeOf(result)).toBe('tool.error');
      // (with the sandbox's import map, Deno says so in these words)
      expect(errorOf(result).message).toContain('Import "/etc/hostname" not a dependency and not in import map');
      expect(JSON.stringify(result)).not.toMatch(/data:application/);
      await expectHealthy();
    });

    it('persistent storage is gone: localStorage written in one call is not readable in the next', async () => {
      const probe = await sandbox.run(job(tool('storage-probe')));
      expect(probe).toMatchObject({
        ok: true,
        output: { localStorage: 'undefined', sessionStorage: 'undefined', caches: 'undefined' },
      });
      const write = await sandbox.run(job(tool('local-storage'), { write: 'from-call-1' }));
      expect(codeOf(write)).toBe('tool.error');
      expect(errorOf(write).message).toBe('localStorage is not defined');
      const read = await sandbox.run(job(tool('local-storage')));
      expect(codeOf(read)).toBe('tool.error');
      expect(JSON.stringify(read)).not.toContain('from-call-1');
      await expectHealthy();
    });
  });

  describe('harness protocol', () => {
    it('a printed fake result line is log text; the real result wins', async () => {
      const result = await sandbox.run(job(tool('fake-result')));
      expect(result).toMatchObject({ ok: true, output: { real: true } });
      expect(result.logs).toContain('00000000000000000000000000000000R1 {"forged":true}');
      expect(result.logs).toContain('TRH2');
      expect(result.logs.some((line) => line.includes('"forged":2'))).toBe(true);
      await expectHealthy();
    });

    it('patched globals (JSON.stringify, TextEncoder, Deno.exit, Deno.stdout) do not change the result', async () => {
      const result = await sandbox.run(job(tool('patch-globals')));
      expect(result).toMatchObject({ ok: true, output: { real: 'value' } });
      await expectHealthy();
    });

    it('patched globals do not change a thrown error either', async () => {
      const result = await sandbox.run(job(tool('patch-globals-throw')));
      expect(result).toMatchObject({ ok: false, error: { code: 'tool.error', message: 'after patching' } });
      await expectHealthy();
    });

    it('no harness binding is reachable by name or up the caller chain of sloppy tool code', async () => {
      const result = await sandbox.run(job(tool('harness-reach')));
      expect(result).toMatchObject({ ok: true, output: { found: [], callers: [] } });
      await expectHealthy();
    });

    it('what the harness hands to tool code carries the names of the originals', async () => {
      const result = await sandbox.run(job(tool('harness-names')));
      expect(result).toMatchObject({
        ok: true,
        output: {
          fetch: 'fetch',
          connect: 'connect',
          connectTls: 'connectTls',
          log: 'log',
          apiError: ['ApiError', 'ApiError'],
        },
      });
      await expectHealthy();
    });

    it('Deno.exit(0) before returning ends in output.invalid', async () => {
      const result = await sandbox.run(job(tool('exit-early')));
      expect(codeOf(result)).toBe('output.invalid');
      expect(errorOf(result).message).toBe('tool "exit-early" exited before returning a result (Deno.exit?)');
      await expectHealthy();
    });

    it.each([
      ['circular', 'result is not JSON-serialisable: Converting circular structure to JSON'],
      ['bigint', 'result is not JSON-serialisable: Do not know how to serialize a BigInt'],
      ['undefined', 'execute() returned undefined; a tool must return a JSON value'],
    ])('a returned %s value ends in output.invalid', async (name, message) => {
      const result = await sandbox.run(job(tool(name)));
      expect(codeOf(result)).toBe('output.invalid');
      expect(errorOf(result).message).toContain(message);
      await expectHealthy();
    });

    it('a setInterval left running (and a blocking unload listener) do not delay the result or keep the process', async () => {
      const result = await sandbox.run(job(tool('interval')));
      expect(result).toMatchObject({ ok: true, output: { returned: true } });
      const pid = (result as { output: { pid: number } }).output.pid;
      await waitFor(() => !existsSync(`/proc/${pid}`), 30_000, `process ${pid} to be gone`);
      await expectHealthy();
    });

    it('a thrown error keeps its message without ANSI codes and a stack with the tool source line numbers', async () => {
      const t = tool('throws');
      const result = await sandbox.run(job(t, { reason: 'bad input' }));
      const error = errorOf(result);
      expect(error.code).toBe('tool.error');
      expect(error.message).toBe('boom: bad input');
      const throwLine = t.source.split('\n').findIndex((line) => line.includes('throw new Error')) + 1;
      expect(error.details?.stack).toMatch(
        new RegExp(`^Error: boom: bad input\\n    at execute \\(tool\\.ts:${throwLine}:\\d+\\)$`),
      );
      expect(JSON.stringify(result)).not.toMatch(/\\u001b|harness|data:/);
      await expectHealthy();
    });

    it('an error thrown in a timer during the call is a tool.error', async () => {
      const result = await sandbox.run(job(tool('timer-throws')));
      expect(codeOf(result)).toBe('tool.error');
      expect(errorOf(result).message).toBe('thrown in a timer');
      await expectHealthy();
    });

    it('a module without execute, or with a syntax error, is a tool.error', async () => {
      const missing = await sandbox.run(job(tool('no-execute')));
      expect(codeOf(missing)).toBe('tool.error');
      expect(errorOf(missing).message).toBe('the tool does not export a function named "execute"');
      const broken = await sandbox.run(
        job({ ...tool('echo'), name: 'broken', source: 'export async function execute( {' }),
      );
      expect(codeOf(broken)).toBe('tool.error');
      await expectHealthy();
    });
  });
});
