// `tools-runner list` and `describe <tool>` against a running service, from a directory outside the
// checkout: what the published catalog offers, one line per tool, and one tool in full; the errors a
// person meets (an unknown tool, no service) are one line each.

import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/waits.js';
import { cleanupAll, client, putTool, runCli, startRunnerWithStore, tempDir, toolContext } from './harness.js';

afterEach(cleanupAll);

async function cli(args: string[], cwd: string): Promise<{ code: number | string; out: string; err: string }> {
  const p = runCli(args, {}, { cwd });
  // 'close': every stdout line is in (after 'exit' some may still be on their way)
  const closed = new Promise((r) => p.proc.once('close', r));
  const code = await p.exited;
  await closed;
  return { code, out: p.stdout.join('\n'), err: p.stderr.join('') };
}

describe('list and describe', () => {
  it('list shows name, version, kind, contract and trust; describe shows schema, permissions, limits, examples', async () => {
    const { url } = await startRunnerWithStore();
    const elsewhere = tempDir('tr-list-cwd-');
    await putTool(
      client(url),
      toolContext('shout', 'export async function execute(input: { n?: number }) { return { n: input.n ?? 0 }; }', {
        version: '1.2.0',
        contract: { side_effect: 'read-only' },
        permissions: { net: ['api.example.com'] },
        limits: { timeout_ms: 4000, memory_mb: 64 },
        examples: [{ description: 'doubles nothing', input: { n: 2 }, output: { n: 2 } }],
      }),
    );
    const listed = await until('list shows the tool', async () => {
      const r = await cli(['list', '--store-url', url], elsewhere);
      return r.code === 0 && /^shout\s/m.test(r.out) ? r : undefined;
    });
    const lines = listed.out.split('\n');
    expect(lines[0]).toMatch(/^NAME\s+VERSION\s+KIND\s+CONTRACT\s+TRUST$/);
    expect(lines.find((l) => l.startsWith('shout'))).toMatch(/^shout\s+1\.2\.0\s+code\s+read-only\s+\S+$/);

    const described = await cli(['describe', 'shout', '--store-url', url], elsewhere);
    expect({ code: described.code, err: described.err }).toEqual({ code: 0, err: '' });
    expect(JSON.parse(described.out)).toMatchObject({
      name: 'shout',
      version: '1.2.0',
      kind: 'code',
      contract: { side_effect: 'read-only' },
      permissions: { net: ['api.example.com'] },
      limits: { timeout_ms: 4000 },
      input_schema: { type: 'object', properties: { n: { type: 'number' } } },
      examples: [{ description: 'doubles nothing', input: { n: 2 } }],
    });

    const unknown = await cli(['describe', 'nope', '--store-url', url], elsewhere);
    expect(unknown.code).toBe(1);
    expect(unknown.err.trim().split('\n')).toHaveLength(1);
    expect(unknown.err).toContain('no tool "nope" in the catalog of workspace:tools');
  }, 120_000);

  it('with no service: one line and exit 4, as the other client commands', async () => {
    const elsewhere = tempDir('tr-list-cwd-');
    for (const args of [['list'], ['describe', 'echo']]) {
      const r = await cli([...args, '--store-url', 'http://127.0.0.1:9'], elsewhere);
      expect(r.code).toBe(4);
      expect(r.err.trim().split('\n')).toEqual([
        `tools-runner ${args[0]}: no store at http://127.0.0.1:9 (connection refused). Start one with "tools-runner start", or point --store-url (TOOLS_RUNNER_STORE_URL) at a running store.`,
      ]);
    }
  }, 60_000);
});
