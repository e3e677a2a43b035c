// `tools-runner export --format aruntime --from-files` as a real CLI process: a code tool whose file
// carries an ARuntime description, a Runloop host tool (contract mapped from its manifest), the MCP
// hints taken from the same contracts, and a conflicting tool file skipped with both paths named.

import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanupAll, runCli, startRunnerWithStore, tempDir, toolContext } from '../e2e/harness.js';

afterEach(cleanupAll);

async function run(args: string[]): Promise<{ code: number | string; out: string; err: string }> {
  const cli = runCli(args);
  const code = await cli.exited;
  return { code, out: cli.stdout.join('\n'), err: cli.stderr.join('') };
}

function setup(extra: Record<string, unknown> = {}): { boot: string; manifest: string } {
  const boot = tempDir('tr-export-aruntime-');
  const context = toolContext('notify', 'export async function execute(input) { return { got: input }; }', {
    limits: { memory_mb: 64 },
  });
  writeFileSync(
    join(boot, 'notify.json'),
    JSON.stringify({
      context,
      aruntime: {
        sideEffectClass: 'external communication',
        idempotency: false,
        owner: 'ops',
        timeoutSeconds: 4,
        ...extra,
      },
    }),
  );
  const manifest = join(tempDir('tr-export-manifest-'), 'tools.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      version: 1,
      tools: [
        {
          id: 'kb.lookup',
          description: 'Looks up the KB',
          transport: { kind: 'exec', command: '/bin/cat', timeout_ms: 3000 },
          input_schema: { type: 'object' },
          result_schema: { type: 'object' },
          capabilities: ['kb_read'],
          observability: { tags: ['kb'] },
        },
      ],
    }),
  );
  return { boot, manifest };
}

const offline = (boot: string, manifest: string, format: string): string[] => [
  'export',
  '--format',
  format,
  '--from-files',
  '--bootstrap-dir',
  boot,
  '--manifests',
  manifest,
  '--granted-capabilities',
  'kb_read,exec',
  '--store-url',
  'http://127.0.0.1:1',
];

describe('tools-runner export --format aruntime', () => {
  it('prints every tool with its contract in ARuntime form, offline', async () => {
    const { boot, manifest } = setup();
    const { code, out, err } = await run(offline(boot, manifest, 'aruntime'));
    expect(err).toBe('');
    expect(code).toBe(0);
    const doc = JSON.parse(out) as { format: string; tools: Array<Record<string, unknown>>; omitted: unknown[] };
    expect(doc.format).toBe('aruntime');
    expect(doc.omitted).toEqual([]);
    expect(doc.tools.map((t) => t['toolId'])).toEqual(['kb.lookup', 'notify']);
    const [kb, notify] = doc.tools;
    expect(kb).toMatchObject({
      sideEffectClass: 'read-only',
      permissionClass: 'read',
      timeoutSeconds: 3,
      authenticationRef: [],
      observability: { tags: ['kb'] },
      idempotency: { keyRequired: false },
    });
    expect(kb).not.toHaveProperty('approvalTriggers');
    expect(notify).toMatchObject({
      version: '1.0.0',
      owner: 'ops',
      sideEffectClass: 'external communication',
      idempotency: { idempotent: false, keyRequired: true },
      timeoutSeconds: 4,
      egressPolicy: { allow: [] },
      authenticationRef: [],
    });
  });

  it('from the store it says what it says from the files (timeoutSeconds, egressPolicy, authenticationRef, observability)', async () => {
    const { boot, manifest } = setup();
    const files = await run(offline(boot, manifest, 'aruntime'));
    expect(files.code).toBe(0);
    const { url } = await startRunnerWithStore([
      '--bootstrap',
      '--bootstrap-dir',
      boot,
      '--manifests',
      manifest,
      '--granted-capabilities',
      'kb_read,exec',
    ]);
    let fromStore: { tools: Array<Record<string, unknown>> } | undefined;
    // The catalog is published shortly after start; poll until both tools are in it.
    await expect
      .poll(
        async () => {
          const { code, out } = await run(['export', '--format', 'aruntime', '--store-url', url]);
          fromStore = code === 0 ? (JSON.parse(out) as typeof fromStore) : undefined;
          return fromStore?.tools.map((t) => t['toolId']);
        },
        { timeout: 30_000, interval: 200 },
      )
      .toEqual(['kb.lookup', 'notify']);
    const pick = (tool: Record<string, unknown> | undefined) => ({
      timeoutSeconds: tool?.['timeoutSeconds'],
      egressPolicy: tool?.['egressPolicy'],
      authenticationRef: tool?.['authenticationRef'],
      observability: tool?.['observability'],
    });
    const fromFiles = (JSON.parse(files.out) as { tools: Array<Record<string, unknown>> }).tools;
    for (const [i, tool] of (fromStore?.tools ?? []).entries()) expect(pick(tool)).toEqual(pick(fromFiles[i]));
    expect(pick(fromStore?.tools[1])).toMatchObject({
      timeoutSeconds: 4,
      egressPolicy: { allow: [] },
      authenticationRef: [],
    });
    expect(pick(fromStore?.tools[0])).toMatchObject({
      timeoutSeconds: 3,
      authenticationRef: [],
      observability: { tags: ['kb'] },
    });
  });

  it('the MCP export takes its hints from the same contracts', async () => {
    const { boot, manifest } = setup();
    const { code, out } = await run(offline(boot, manifest, 'mcp'));
    expect(code).toBe(0);
    const doc = JSON.parse(out) as { tools: Array<{ name: string; annotations: Record<string, unknown> }> };
    expect(Object.fromEntries(doc.tools.map((t) => [t.name, t.annotations]))).toEqual({
      kb_lookup: {
        title: 'kb.lookup',
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: true,
      },
      notify: {
        title: 'notify',
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      },
    });
  });

  it('a tool file whose ARuntime description contradicts its context is skipped, naming both paths', async () => {
    const { boot, manifest } = setup({ toolId: 'notifier' });
    const { code, out, err } = await run(offline(boot, manifest, 'aruntime'));
    expect(code).toBe(0);
    expect(err).toBe(
      `tools-runner export: skipped ${relative(process.cwd(), join(boot, 'notify.json'))}: aruntime.toolId ("notifier") conflicts with context.name ("notify")\n`,
    );
    expect((JSON.parse(out) as { tools: Array<{ toolId: string }> }).tools.map((t) => t.toolId)).toEqual(['kb.lookup']);
  });
});
