// context.progress and a tool's own error codes, with real Deno processes: reports reach onProgress
// in order with secrets redacted; a report over 4096 characters or not JSON throws in the tool; a
// report after the call ended goes nowhere; a thrown error keeps one of the allowed codes and any
// other code stays tool.error; printed text that looks like a frame is only log text.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { codeOf, expectNoLeaks, isolateTmp, job, testConfig, tool } from './helpers.js';

let tmp: ReturnType<typeof isolateTmp>;
let sandbox: Sandbox;

beforeAll(async () => {
  tmp = isolateTmp();
  sandbox = await createSandbox({ config: testConfig(), logger: silentLogger() });
});

afterAll(async () => {
  await sandbox?.close();
  expectNoLeaks(tmp.dir);
  tmp.restore();
});

const inline = (name: string, source: string) => tool('echo', { name, source });

async function run(source: string, secrets: Record<string, string> = {}) {
  const progress: unknown[] = [];
  const result = await sandbox.run(job(inline('p', source), {}, { secrets, onProgress: (v) => void progress.push(v) }));
  return { result, progress };
}

describe('context.progress', () => {
  it('reports reach onProgress in order, secrets redacted', async () => {
    const { result, progress } = await run(
      `export async function execute(input, context) {
      for (let i = 0; i < 5; i++) context.progress({ text: 'tok' + i });
      context.progress({ key: context.secrets.KEY, n: [1, 2] });
      context.progress('plain');
      return { ok: true };
    }`,
      { KEY: 'very-secret-value' },
    );
    expect(result.ok).toBe(true);
    expect(progress).toEqual([
      { text: 'tok0' },
      { text: 'tok1' },
      { text: 'tok2' },
      { text: 'tok3' },
      { text: 'tok4' },
      { key: '[REDACTED]', n: [1, 2] },
      'plain',
    ]);
  });

  it('a report over 4096 characters or not JSON throws in the tool', async () => {
    const { result, progress } = await run(`export async function execute(input, context) {
      const errors = [];
      try { context.progress({ text: 'x'.repeat(5000) }); } catch (e) { errors.push(e.message); }
      try { context.progress({ n: 1n }); } catch (e) { errors.push(e.message); }
      return { errors };
    }`);
    expect(result.ok && result.output).toEqual({
      errors: [
        'context.progress: 5011 characters of JSON, over the limit of 4096',
        'context.progress: the value is not JSON-serialisable',
      ],
    });
    expect(progress).toEqual([]);
  });

  it('a report after the call ended goes nowhere; printed look-alike frames are log text', async () => {
    const { result, progress } = await run(`export async function execute(input, context) {
      setTimeout(() => context.progress({ late: true }), 0);
      console.log('\\nP1 {"text":"forged"}');
      return { done: true };
    }`);
    expect(result.ok).toBe(true);
    expect(progress).toEqual([]);
  });
});

describe("a tool's own error codes", () => {
  it.each([
    ['dependency.unavailable', 'dependency.unavailable'],
    ['rate.exceeded', 'rate.exceeded'],
    ['permission.denied', 'permission.denied'],
    ['input.invalid', 'input.invalid'],
    ['not_found', 'not_found'],
    ['timeout', 'tool.error'],
    ['sandbox.crashed', 'tool.error'],
    ['EACCES', 'tool.error'],
  ])('code %s ends as %s, keeping the message', async (code, expected) => {
    const { result } = await run(
      `export async function execute() { throw Object.assign(new Error('upstream said no'), { code: ${JSON.stringify(code)} }); }`,
    );
    expect(codeOf(result)).toBe(expected);
    expect(result.ok ? '' : result.error.message).toContain('upstream said no');
  });
});
