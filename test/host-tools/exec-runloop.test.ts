// exec transport, Runloop style: JSON blob in a private temp file (argv[1]), args after it,
// secrets in the environment, result_schema. (Confirmation, L10/L11, is the request path's approval
// policy: test/request/approval-records.test.ts, test/e2e/approvals.test.ts.)

import { existsSync } from 'node:fs';
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
  fixture,
  livingChildren,
  schemas,
  secretsFrom,
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

const SECRET = 'smtp-key-7f3a9c';

async function tool(over: Record<string, unknown> = {}): Promise<HostTool> {
  const result = await loadManifest(
    await writeManifest(await temp.make(), {
      version: 1,
      tools: [
        {
          id: 'mail.report',
          description: 'Reports what it received',
          transport: { kind: 'exec', command: fixture('runloop-tool'), args: ['--flag', 'x'] },
          input_schema: { type: 'object' },
          result_schema: { type: 'object', required: ['input'] },
          secrets: ['runloop/mail/smtp_api_key'],
          ...over,
        },
      ],
    }),
    { validator },
  );
  if (!result.ok) throw new Error(result.error);
  return result.tools[0] as HostTool;
}

async function options(over: OptionOverrides = {}): Promise<ExecuteHostToolOptions> {
  return {
    logger: captureLogger().logger,
    schemas,
    resolveSecret: secretsFrom({ 'runloop/mail/smtp_api_key': SECRET }),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    ...over,
    config: testConfig(over.config),
  };
}

interface Report {
  input: unknown;
  blob: string;
  mode: string;
  args: string;
  key: string;
}

describe('Runloop exec', () => {
  it('passes the JSON in a 0600 temp file as argv[1], args after it, and removes the file', async () => {
    const opts = await options();
    const result = await executeHostTool(await tool(), { to: 'a@b.io', n: 2 }, opts);
    expect(result.ok).toBe(true);
    const report = (result.ok ? result.output : {}) as Report;
    expect(report).toMatchObject({ input: { to: 'a@b.io', n: 2 }, mode: '600', args: '--flag x' });
    expect(existsSync(report.blob)).toBe(false);
    expect(existsSync(path.dirname(report.blob))).toBe(false);
  });

  it('declared secrets arrive as environment variables and never leave in results, logs or evidence', async () => {
    const log = captureLogger();
    const opts = await options({ logger: log.logger });
    const result = await executeHostTool(await tool(), {}, opts);
    expect(result.ok && (result.output as Report).key).toBe('***REDACTED***');
    expect(JSON.stringify(result.evidence)).not.toContain(SECRET);
    expect(result.evidence?.['envKeys']).toEqual(['PATH', 'RUNLOOP_MAIL_SMTP_API_KEY']);
    expect(result.evidence?.['argv']).toEqual([
      fixture('runloop-tool'),
      (result.ok && (result.output as Report).blob) || '',
      '--flag',
      'x',
    ]);
    log.logger.info('after the call', { leaked: SECRET });
    expect(log.text()).not.toContain(SECRET);
  });

  it('even a very short secret is redacted from the result', async () => {
    const result = await executeHostTool(
      await tool(),
      {},
      await options({ resolveSecret: secretsFrom({ 'runloop/mail/smtp_api_key': 'k9z' }) }),
    );
    expect(result.ok && (result.output as Report).key).toBe('***REDACTED***');
  });

  it('a result that fails result_schema is output.invalid with paths', async () => {
    const t = await tool({ result_schema: { type: 'object', properties: { mode: { type: 'integer' } } } });
    const result = await executeHostTool(t, {}, await options());
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'output.invalid',
        message: 'tool result does not match result_schema: /mode must be integer',
        details: { errors: [{ path: '/mode', message: 'must be integer' }] },
      },
    });
  });

  it('a missing secret is secret.missing and runs nothing; a failing resolver is dependency.unavailable', async () => {
    const log = captureLogger();
    const opts = await options({ logger: log.logger, resolveSecret: secretsFrom({}) });
    const missing = await executeHostTool(await tool(), {}, opts);
    expect(missing).toMatchObject({
      ok: false,
      error: {
        code: 'secret.missing',
        message: 'secret "runloop/mail/smtp_api_key" required by host tool "mail.report" could not be resolved',
        retryable: false,
      },
    });
    expect(log.lines.find((line) => line.msg === 'host tool secret missing')?.capAudit).toMatchObject({
      cap: 'secrets',
      decision: 'deny',
      reason: 'cap_denied',
      target: 'mail.report',
    });
    expect(missing.evidence).toMatchObject({ exit: null, stdoutBytes: 0, transport: 'exec' });
    const failing = await executeHostTool(
      await tool(),
      {},
      await options({ resolveSecret: async () => Promise.reject(new Error('store down')) }),
    );
    expect(failing).toMatchObject({
      ok: false,
      error: {
        code: 'dependency.unavailable',
        message: 'secret "runloop/mail/smtp_api_key" could not be fetched: store down',
        retryable: true,
      },
    });
  });
});
