// A self-contained tool runs through its module factory in both isolation modes, compiled by the harness
// as a classic script named `data:application/javascript;base64,#0` instead of imported as a data:
// module (bench/journal/2026-11-rounds.md: ~1 ms of CPU less per process-mode call). What a module gave tool code
// must hold for the script too: strict code, dynamic imports permission-checked and resolved against a
// data: URL, error stacks on the tool's own lines. A tool that is no factory (top-level await) keeps the
// import.

import { describe, expect, it } from 'vitest';
import type { ExecutionResult } from '../../src/result.js';
import { createSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { captureLogger, job, testConfig, tool, useIsolatedSandboxes } from './helpers.js';

let sandbox: Sandbox | undefined;
useIsolatedSandboxes(
  () => sandbox,
  () => void (sandbox = undefined),
);

function outputOf<T>(result: ExecutionResult): T {
  if (!result.ok) throw new Error(`call failed: ${result.error.code} ${result.error.message}`);
  return result.output as T;
}

const PROBE = [
  'let calls = 0;',
  'function self() {',
  '  return this;',
  '}',
  'const at = (url: string) => url;',
  'export async function execute(input: { url: string }) {',
  '  calls++;',
  "  let assignment = 'allowed';",
  '  try {',
  '    (() => {',
  '      // @ts-expect-error -- an undeclared name: strict code throws',
  '      undeclaredHere = 1;',
  '    })();',
  '  } catch (err) {',
  '    assignment = (err as Error).constructor.name;',
  '  }',
  "  const imported = await import(at(input.url), { with: { type: 'text' } }).then(() => 'loaded', (err) => String(err));",
  "  return { calls, self: typeof self(), assignment, imported, stack: new Error('here').stack };",
  '}',
].join('\n');

describe.each(['warm', 'process'] as const)('%s isolation: the module factory as a script', (isolation) => {
  it('is strict, its dynamic imports are permission-checked and resolve against its data: name', async () => {
    sandbox = await createSandbox({ config: testConfig({ isolation }), logger: captureLogger().logger });
    const t = { ...tool('echo'), name: `factory-probe-${isolation}`, source: PROBE };
    const cases = [
      [
        'file:///etc/hostname',
        'TypeError: Requires read access to "/etc/hostname", run again with the --allow-read flag',
      ],
      // (a relative specifier from a data: module: not resolvable; Deno says so in these words with the import map)
      ...['./harness.js', '/etc/hostname'].map((url) => [
        url,
        `TypeError: Import "${url}" not a dependency and not in import map from "data:application/javascript;base64,#0"`,
      ]),
    ];
    for (const [url, imported] of cases) {
      const out = outputOf<Record<string, unknown>>(await sandbox.run(job(t, { url })));
      expect(out).toMatchObject({ calls: 1, self: 'undefined', assignment: 'ReferenceError', imported });
      // compiled by the harness from the factory (an import would name the module by its whole data: URL)
      expect(out.stack).toMatch(/^Error: here\n {4}at execute \(data:application\/javascript;base64,#0:\d+:\d+\)/);
    }
  });

  it("a thrown error's stack points at the tool's own lines", async () => {
    sandbox = await createSandbox({ config: testConfig({ isolation }), logger: captureLogger().logger });
    const source = [
      'interface In { reason: string }',
      '',
      'export async function execute(input: In): Promise<never> {',
      '  const why: string = input.reason;',
      '  throw new Error(`boom: ${why}`);',
      '}',
    ].join('\n');
    const thrown = await sandbox.run(
      job({ ...tool('echo'), name: `factory-throw-${isolation}`, source }, { reason: 'x' }),
    );
    expect(thrown).toMatchObject({ ok: false, error: { code: 'tool.error', message: 'boom: x' } });
    expect(thrown.ok ? '' : thrown.error.details?.stack).toBe('Error: boom: x\n    at execute (tool.ts:5:9)');
  });

  it('a tool that cannot be a factory (top-level await) still runs by its import', async () => {
    sandbox = await createSandbox({ config: testConfig({ isolation }), logger: captureLogger().logger });
    const source = [
      'const ready = await Promise.resolve(7);',
      'export async function execute() {',
      '  return { ready, stack: new Error("here").stack };',
      '}',
    ].join('\n');
    const out = outputOf<{ ready: number; stack: string }>(
      await sandbox.run(job({ ...tool('echo'), name: `tla-${isolation}`, source })),
    );
    expect(out.ready).toBe(7);
    expect(out.stack).toMatch(/at execute \(data:application\/javascript;base64,[A-Za-z0-9+/=.]{8,}:\d+:\d+\)/);
  });
});
