// exec transport, agentcli style (contracts.md §2.2 R1-R7, C1-C3) with real fixture programs,
// plus output caps, process-group cleanup and cancellation. The input arrives checked (the request
// path normalises it: test/request/host-input.test.ts); the audit line's transport facts are the
// result's `evidence` (the audit policy writes the line: test/request/audit-policy.test.ts).

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  executeHostTool,
  loadManifest,
  type ExecuteHostToolOptions,
  type HostTool,
} from '../../src/host-tools/index.js';
import {
  captureLogger,
  createTempDirs,
  diesWithin,
  fixture,
  livingChildren,
  schemas,
  testConfig,
  validator,
  writeManifest,
  type OptionOverrides,
} from './helpers.js';

const temp = createTempDirs();
afterEach(async () => {
  await temp.cleanup();
  expect(livingChildren()).toEqual([]);
});

const PARENT_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/home/tester' };

async function tool(spec: Record<string, unknown>): Promise<HostTool> {
  const result = await loadManifest(await writeManifest(await temp.make(), { tools: [{ name: 't', ...spec }] }), {
    validator,
  });
  if (!result.ok) throw new Error(result.error);
  return result.tools[0] as HostTool;
}

async function options(over: OptionOverrides = {}): Promise<ExecuteHostToolOptions> {
  return {
    logger: captureLogger().logger,
    schemas,
    resolveSecret: async () => undefined,
    env: PARENT_ENV,
    ...over,
    config: testConfig(over.config),
  };
}

describe('agentcli exec (R1-R8)', () => {
  it('R1: timeoutSec wins over the default; the whole group dies; message is exactly "tool timed out"', async () => {
    const t = await tool({ command: [fixture('sleeper'), '5'], timeoutSec: 1 });
    const result = await executeHostTool(t, {}, await options({ config: { execTimeoutMs: 3000 } }));
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'timeout', message: 'tool timed out', retryable: false, details: { timeoutMs: 1000 } },
    });
  });

  it('R1: without timeoutSec the configured execTimeoutMs applies', async () => {
    const t = await tool({ command: [fixture('sleeper'), '5'] });
    const result = await executeHostTool(t, {}, await options({ config: { execTimeoutMs: 300 } }));
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'timeout', message: 'tool timed out', details: { timeoutMs: 300 } },
    });
  });

  it('R2: the JSON arguments arrive on stdin and the JSON on stdout is the output', async () => {
    const result = await executeHostTool(
      await tool({ command: [fixture('echo-json')] }),
      { a: 1, s: 'x y' },
      await options(),
    );
    expect(result).toMatchObject({ ok: true, output: { a: 1, s: 'x y' }, logs: [], logsTruncated: false });
  });

  it('R3: stderr text is the error message; empty stderr gives the exit text', async () => {
    const boom = await executeHostTool(await tool({ command: [fixture('fail-boom')] }), {}, await options());
    expect(boom).toMatchObject({
      ok: false,
      error: { code: 'tool.error', message: 'boom', retryable: false, details: { exitCode: 3 } },
    });
    const silent = await executeHostTool(await tool({ command: [fixture('fail-silent')] }), {}, await options());
    expect(silent).toMatchObject({ ok: false, error: { code: 'tool.error', message: 'exit status 3' } });
  });

  it("R4: the evidence carries agentcli's transport fields, in its order", async () => {
    const t = await tool({ command: [fixture('echo-json'), '--fixed'] });
    const result = await executeHostTool(t, { q: 1 }, await options());
    expect(Object.keys(result.evidence ?? {})).toEqual([
      'argv',
      'cwd',
      'exit',
      'stdoutBytes',
      'stderrBytes',
      'truncated',
      'envKeys',
      'transport',
    ]);
    expect(result.evidence).toEqual({
      argv: [fixture('echo-json'), '--fixed'],
      cwd: path.dirname(t.manifestPath),
      exit: 0,
      stdoutBytes: 7,
      stderrBytes: 0,
      truncated: false,
      envKeys: ['PATH', 'HOME'],
      transport: 'exec',
    });
  });

  it('R6: env values and redact patterns never reach the evidence', async () => {
    const opts = await options({
      env: { ...PARENT_ENV, OAI_API_KEY: 'sk-test-1234567890' },
      config: { redact: ['secret', 'sk-[a-z0-9]+'] },
    });
    const t = await tool({
      command: [fixture('echo-json'), '--token=sk-test-1234567890', '--note=contains-secret'],
      envPassthrough: ['OAI_API_KEY'],
    });
    const result = await executeHostTool(t, {}, opts);
    expect(result.ok).toBe(true);
    expect(JSON.stringify(result.evidence)).not.toContain('sk-test-1234567890');
    expect(JSON.stringify(result.evidence)).not.toContain('secret');
    expect(result.evidence?.['argv']).toEqual([
      fixture('echo-json'),
      '--token=***REDACTED***',
      '--note=contains-***REDACTED***',
    ]);
    expect(result.evidence?.['envKeys']).toEqual(['PATH', 'HOME', 'OAI_API_KEY']);
  });

  it('R7: the child sees PATH, HOME and the allow-listed keys present in the parent, nothing else', async () => {
    const env = { ...PARENT_ENV, OAI_API_KEY: 'k-123456', OAI_BASE_URL: 'http://base', UNSAFE: 'leak' };
    const opts = await options({ env });
    const t = await tool({
      command: [fixture('env-dump')],
      envPassthrough: ['OAI_API_KEY', 'OAI_BASE_URL', 'NOT_SET'],
    });
    const result = await executeHostTool(t, {}, opts);
    expect(result.ok && result.output).toEqual({
      PATH: env.PATH,
      HOME: '/home/tester',
      OAI_API_KEY: 'k-123456',
      OAI_BASE_URL: 'http://base',
    });
    expect(result.evidence?.['envKeys']).toEqual(['PATH', 'HOME', 'OAI_API_KEY', 'OAI_BASE_URL']);
    expect(JSON.stringify(result.evidence)).not.toContain('k-123456');
  });
});

describe('agentcli exec: outputs and failures', () => {
  it('C1: blank stdout is {}', async () => {
    expect(await executeHostTool(await tool({ command: [fixture('blank')] }), { x: 1 }, await options())).toMatchObject(
      { ok: true, output: {} },
    );
  });

  it('C2: multi-line JSON on stdout is parsed whole (structured output, nothing to squeeze)', async () => {
    const t = await tool({ command: ['/bin/sh', '-c', 'cat >/dev/null; printf "{\\n  \\"a\\": [1,\\n 2]\\n}\\n"'] });
    expect(await executeHostTool(t, {}, await options())).toMatchObject({ ok: true, output: { a: [1, 2] } });
  });

  it('stdout that is not JSON is output.invalid', async () => {
    const result = await executeHostTool(await tool({ command: [fixture('not-json')] }), {}, await options());
    expect(result).toMatchObject({ ok: false, error: { code: 'output.invalid', details: { stdoutBytes: 12 } } });
    expect(!result.ok && result.error.message).toMatch(/^tool stdout is not valid JSON: /);
  });

  it('output over maxOutputBytes kills the tool: output_limit, evidence says truncated', async () => {
    const opts = await options({ config: { maxOutputBytes: 4096 } });
    const result = await executeHostTool(await tool({ command: [fixture('flooder')] }), {}, opts);
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'output_limit',
        message: 'tool wrote more than 4096 bytes to stdout and stderr',
        retryable: false,
      },
    });
    expect(result.evidence).toMatchObject({ truncated: true });
    expect(result.evidence?.['stdoutBytes'] as number).toBeGreaterThan(4096);
  });

  it('stderr of a successful call becomes sanitised logs', async () => {
    const result = await executeHostTool(await tool({ command: [fixture('noisy')] }), {}, await options());
    expect(result).toMatchObject({ ok: true, output: { ok: true }, logs: ['warning: disk almost full'] });
  });

  it('a program that cannot start is a tool.error naming it', async () => {
    const result = await executeHostTool(await tool({ command: ['/nonexistent/prog'] }), {}, await options());
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'tool.error', message: 'cannot start "/nonexistent/prog": spawn /nonexistent/prog ENOENT' },
    });
  });

  it('C3: long stderr is cut to 1000 bytes', async () => {
    const t = await tool({ command: ['/bin/sh', '-c', 'head -c 5000 /dev/zero | tr "\\0" "e" >&2; exit 1'] });
    const result = await executeHostTool(t, {}, await options());
    expect(!result.ok && Buffer.byteLength(result.error.message)).toBeLessThanOrEqual(1000);
    expect(!result.ok && result.error.message.startsWith('eeee')).toBe(true);
  });
});

describe('agentcli exec: process lifetime', () => {
  it('helpers left in the process group die on timeout', async () => {
    const dir = await temp.make();
    const pidFile = path.join(dir, 'helper.pid');
    const t = await tool({ command: [fixture('group-sleeper'), pidFile, 'wait'], timeoutSec: 1 });
    expect(await executeHostTool(t, {}, await options())).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(await diesWithin(Number(await readFile(pidFile, 'utf8')), 5_000)).toBe(true);
  });

  it('helpers left running after a normal exit die too, and the call does not wait for them', async () => {
    const dir = await temp.make();
    const pidFile = path.join(dir, 'helper.pid');
    const t = await tool({ command: [fixture('group-sleeper'), pidFile, 'exit'] });
    expect(await executeHostTool(t, {}, await options())).toMatchObject({ ok: true, output: { left: 'helper' } });
    expect(await diesWithin(Number(await readFile(pidFile, 'utf8')), 5_000)).toBe(true);
  });

  it('aborting the signal kills the tool; an aborted signal runs nothing', async () => {
    const t = await tool({ command: [fixture('sleeper'), '30'] });
    const controller = new AbortController();
    const pending = executeHostTool(t, {}, await options({ signal: controller.signal }));
    controller.abort(new Error('drain'));
    const result = await pending;
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'internal', message: 'host tool "t" was cancelled before it finished', retryable: false },
    });
    const again = await executeHostTool(t, {}, await options({ signal: controller.signal }));
    expect(again).toMatchObject({ ok: false, error: { code: 'internal' } });
  });

  it('C5: concurrent calls are independent', async () => {
    const t = await tool({ command: [fixture('echo-json')] });
    const opts = await options();
    const results = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => executeHostTool(t, { n }, opts)));
    expect(results.map((r) => r.ok && r.output)).toEqual([1, 2, 3, 4, 5, 6].map((n) => ({ n })));
  });
});
