// Secrets stay with their call (not in any process environment or command line, not in another
// tool's process, not in logs), and logs are captured, sanitised and capped.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import {
  captureLogger,
  codeOf,
  job,
  ourDenoProcesses,
  testConfig,
  tool,
  useIsolatedSandboxes,
  waitFor,
} from './helpers.js';

const SECRET_A = 'tok-A-7f3c9e2b1d';
const SECRET_B = 'tok-B-44aa19c0ee';
const EXPECTED_ENV = [
  'DENO_DIR',
  'DENO_EMIT_CACHE_MODE',
  'DENO_NO_PACKAGE_JSON',
  'DENO_NO_UPDATE_CHECK',
  'DENO_TLS_CA_STORE',
  'NO_COLOR',
  'PATH',
];

let sandbox: Sandbox | undefined;
useIsolatedSandboxes(
  () => sandbox,
  () => void (sandbox = undefined),
);

/** The environment of a live process; undefined when it exited meanwhile (pool processes come and go). */
function environOf(pid: number): Record<string, string> | undefined {
  const env: Record<string, string> = {};
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return undefined;
  }
  for (const entry of text.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

describe('secrets', () => {
  it("tool A's secret is never visible to tool B, nor in logs, env, command lines or the service log", async () => {
    const { logger, lines } = captureLogger();
    sandbox = await createSandbox({ config: testConfig({ poolSize: 2 }), logger });
    const a = await sandbox.run(job(tool('secrets'), {}, { secrets: { TOKEN: SECRET_A } }));
    expect(a).toMatchObject({
      ok: true,
      output: {
        secrets: { TOKEN: SECRET_A },
        args: [],
        storage: 'undefined',
        env: 'denied: NotCapable',
        parentEnviron: 'denied: NotCapable',
        selfEnviron: 'denied: NotCapable',
        parentCmdline: 'denied: NotCapable',
      },
    });
    expect(a.logs).toEqual(expect.arrayContaining(['my secret is [REDACTED]', 'stderr: {"TOKEN":"[REDACTED]"}']));
    expect(JSON.stringify(a.logs)).not.toContain(SECRET_A);

    const b = await sandbox.run(job(tool('secrets'), {}, { secrets: { TOKEN: SECRET_B } }));
    expect(b).toMatchObject({ ok: true, output: { secrets: { TOKEN: SECRET_B } } });
    expect(JSON.stringify(b)).not.toContain(SECRET_A);

    // while A's secret is held by a running call, no other process (or its own env/cmdline) shows it
    const controller = new AbortController();
    const holding = sandbox.run(
      job(tool('slow-secret'), {}, { secrets: { TOKEN: SECRET_A }, signal: controller.signal }),
    );
    await waitFor(() => sandbox?.stats().busy === 1, 30_000, 'the secret-holding call to start');
    const parallel = await sandbox.run(job(tool('secrets'), {}, { secrets: { TOKEN: SECRET_B } }));
    expect(JSON.stringify(parallel)).not.toContain(SECRET_A);
    let inspected = 0; // at least the secret-holding process, which spins until aborted below
    for (const pid of ourDenoProcesses()) {
      const env = environOf(pid);
      if (!env) continue;
      inspected++;
      expect(Object.keys(env).sort()).toEqual(EXPECTED_ENV);
      expect(env.DENO_DIR).toBe('/dev/null/deno-dir');
      expect(JSON.stringify(env)).not.toContain(SECRET_A);
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain(SECRET_A);
    }
    expect(inspected).toBeGreaterThanOrEqual(1);
    controller.abort();
    expect(codeOf(await holding)).toBe('sandbox.crashed');
    expect(lines.join('\n')).not.toContain(SECRET_A);
    expect(lines.join('\n')).not.toContain(SECRET_B);
  });

  it('a thrown error carrying a secret is redacted in message and stack', async () => {
    sandbox = await createSandbox({ config: testConfig(), logger: captureLogger().logger });
    const source = 'export async function execute(_i, c) { throw new Error("bad token " + c.secrets.TOKEN) }';
    const result = await sandbox.run(
      job({ ...tool('echo'), name: 'leaky', source }, {}, { secrets: { TOKEN: SECRET_A } }),
    );
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.error', message: 'bad token [REDACTED]' } });
    expect(JSON.stringify(result)).not.toContain(SECRET_A);
  });
});

describe('logs', () => {
  it('console.*, context.log and raw stderr are captured as sanitised lines, never mixed with the result', async () => {
    sandbox = await createSandbox({ config: testConfig(), logger: captureLogger().logger });
    const result = await sandbox.run(job(tool('logs'), { lines: 3 }));
    expect(result).toMatchObject({ ok: true, output: 'ok', logsTruncated: false });
    expect([...result.logs].sort()).toEqual(
      [
        'green plain',
        'to stderr bell',
        'ctx { a: 1 }',
        'info evil',
        'bulk 0',
        'bulk 1',
        'bulk 2',
        'raw stderr without newline',
      ].sort(),
    );
    expect(result.logs.filter((line) => line.startsWith('bulk'))).toEqual(['bulk 0', 'bulk 1', 'bulk 2']);
  });

  it('logs are capped at maxLogBytes and marked truncated', async () => {
    sandbox = await createSandbox({ config: testConfig({ maxLogBytes: 64 }), logger: captureLogger().logger });
    const result = await sandbox.run(job(tool('logs'), { lines: 200 }));
    expect(result).toMatchObject({ ok: true, output: 'ok', logsTruncated: true });
    expect(Buffer.byteLength(result.logs.join(''))).toBeLessThanOrEqual(64);
    expect(result.logs.length).toBeGreaterThan(0);
  });

  it('maxLogBytes = 0 keeps no log text at all', async () => {
    sandbox = await createSandbox({ config: testConfig({ maxLogBytes: 0 }), logger: captureLogger().logger });
    const result = await sandbox.run(job(tool('logs'), { lines: 2 }));
    expect(result).toMatchObject({ ok: true, output: 'ok', logs: [], logsTruncated: true });
  });
});
