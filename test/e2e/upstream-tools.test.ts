// Upstream's tool files run unchanged (issue 20): test/fixtures/upstream-tools/ holds 13 files of the
// shape of upstream RCRT's bootstrap-breadcrumbs/tools-self-contained/ (top-level title/description/
// semantic_version/llm_hints, upstream permissions and limits, net: true, permissions.breadcrumbs,
// a 24 h timeout, a tag that disagrees with context.name, context.bootstrap, a localhost host and
// `new Function`), written here (not copies). With the one documented operator flag
// (`--bootstrap-allow net`) every file upstream's runner runs is runnable, and every example that
// needs no internet passes; the refused ones come with their exact fix line. The same files, written
// into the store the way upstream's bootstrap.js writes them (by an agent), stay under the agent policy.

import { cpSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreClient } from '../../src/breadcrumbs/index.js';
import { SCHEMA } from '../../src/breadcrumbs/messages.js';
import { answer, cleanupAll, client, request, runCli, startRunnerWithStore, tempDir, WS } from './harness.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/upstream-tools/', import.meta.url));
const NET_TOOLS = ['openrouter', 'openrouter_models_sync', 'scheduler', 'venice', 'workflow'];
const CALC_FIX =
  'fix: edit /code/source line 3:24 (screen.function-constructor): The Function constructor is not allowed: new Function(`"use strict"; return (${input.expression});`)';
const OLLAMA_FIX = "fix: run with --allow-private-hosts 'ollama_local=localhost:11434'";

async function testCommand(args: string[]): Promise<{ code: number | string; lines: string[] }> {
  const cli = runCli(['test', FIXTURES, '--log-level', 'warn', ...args]);
  const code = await cli.exited;
  return { code, lines: cli.stdout.join('\n').split('\n') };
}

/** The line after the "✗/✓ <name>" header line of a tool, and the rest of its block. */
function block(lines: string[], name: string): string[] {
  const start = lines.findIndex((line) => new RegExp(`^[✓✗] ${name}\\b`).test(line));
  if (start === -1) throw new Error(`no report for ${name} in:\n${lines.join('\n')}`);
  const end = lines.findIndex((line, i) => i > start && /^[✓✗] |^\d+ tool\(s\)/.test(line));
  return lines.slice(start, end);
}

afterAll(cleanupAll);

describe('tools-runner test on upstream-shaped files', () => {
  it('with --bootstrap-allow net: 11 of 13 run and pass (offline examples run, the rest skipped with the reason); calculator and ollama_local are refused with their fix', async () => {
    const { code, lines } = await testCommand(['--bootstrap-allow', 'net']);
    expect(code).toBe(1);
    expect(lines.at(-1)).toMatch(
      /^13 tool\(s\), 20 example\(s\): 11 tool\(s\) passed, 2 failed; 12 example\(s\) passed, 0 failed, 8 skipped$/,
    );
    for (const name of ['echo', 'random', 'timer', 'json-transform', 'breadcrumb-create', 'breadcrumb-search']) {
      const report = block(lines, name);
      expect(report[0]).toMatch(new RegExp(`^✓ ${name} 2\\.0\\.0 `)); // version from the top-level semantic_version
      expect(report.filter((line) => /^ {4}✓ example/.test(line)).length).toBeGreaterThan(0);
    }
    for (const name of NET_TOOLS) {
      const report = block(lines, name);
      expect(report[0]).toMatch(new RegExp(`^✓ ${name} `));
      const reason =
        name === 'scheduler'
          ? 'continuous tool (context.bootstrap.mode "continuous")'
          : 'net: true tool: its examples reach public hosts it does not name; pass --network-probe';
      expect(report.filter((line) => line.startsWith('    - example')).every((line) => line.includes(reason))).toBe(
        true,
      );
    }
    expect(block(lines, 'openrouter_models_sync')).toContain(
      '    warning: tag "tool:openrouter-models-sync" does not match context.name "openrouter_models_sync": the tool runs as "openrouter_models_sync" (the name upstream\'s runtime registers it under) and the tag is dropped',
    );
    expect(block(lines, 'calculator')).toContain(`    ${CALC_FIX}`);
    expect(block(lines, 'ollama_local')).toContain(`    ${OLLAMA_FIX}`);
  }, 180_000);

  it('without the flag, every net: true file is refused with the reason and the flag that lifts it', async () => {
    const { code, lines } = await testCommand([]);
    expect(code).toBe(1);
    for (const name of NET_TOOLS) {
      const report = block(lines, name);
      expect(report[0]).toMatch(new RegExp(`^✗ ${name} .*— invalid definition$`));
      expect(
        report.some((line) =>
          line.includes(
            'Unrestricted network access (net: true) is allowed for the operator\'s bootstrapped tools only when bootstrapAllow lists "net"',
          ),
        ),
      ).toBe(true);
      expect(report.at(-1)).toBe('    fix: run with --bootstrap-allow net');
    }
  }, 180_000);

  it('an operator timeout above the operator maximum names the flag; under it (24 h default) it is accepted', async () => {
    const { lines } = await testCommand(['--bootstrap-allow', 'net', '--bootstrap-max-timeout-ms', '3600000']);
    const report = block(lines, 'scheduler');
    expect(report).toContain(
      '    definition.limits /limits/timeout_ms: limits.timeout_ms 86400000 is over the operator maximum for bootstrapped tools (bootstrapMaxTimeoutMs 3600000)',
    );
    expect(report.at(-1)).toBe('    fix: run with --bootstrap-max-timeout-ms 86400000');
  }, 180_000);
});

describe('a runner whose bootstrap directory holds the upstream-shaped files', () => {
  let c: StoreClient;

  beforeAll(async () => {
    const dir = tempDir('tr-upstream-');
    cpSync(FIXTURES, dir, { recursive: true });
    const { url } = await startRunnerWithStore(['--bootstrap', '--bootstrap-dir', dir, '--bootstrap-allow', 'net']);
    c = client(url);
  }, 180_000);

  it('runs them by context.name (openrouter_models_sync included); the scoped grant reaches only its schemas', async () => {
    expect((await answer(c, await request(c, 'echo', { message: 'hi' }))).output).toEqual({ echo: 'hi' });
    const created = await answer(c, await request(c, 'breadcrumb-create', { title: 'n1', tags: ['notes'] }));
    expect(created).toMatchObject({ status: 'success', output: { success: true } });
    const found = await answer(c, await request(c, 'breadcrumb-search', { tag: 'notes' }));
    expect(found).toMatchObject({ status: 'success', output: { count: 1 } });
    // routed (not tool.not_found): offline its fetch fails inside the tool
    const sync = await answer(c, await request(c, 'openrouter_models_sync', {}), 60_000);
    expect(sync.error?.code).not.toBe('tool.not_found');
    expect(sync.tool).toBe('openrouter_models_sync');
  }, 120_000);

  it('upstream-shaped records written straight into the store by an agent keep the agent policy', async () => {
    const doc = JSON.parse(readFileSync(join(FIXTURES, 'echo.json'), 'utf8')) as Record<string, unknown> & {
      context: Record<string, unknown>;
    };
    const named = (name: string, extra: Record<string, unknown> = {}) => ({
      ...doc,
      tags: ['tool', `tool:${name}`, WS],
      context: { ...doc.context, name, ...extra },
    });
    // as upstream's bootstrap.js writes it: description and semantic_version only at the top level
    await c.createBreadcrumb(named('agent-echo') as never);
    await c.createBreadcrumb(named('agent-net', { permissions: { net: true } }) as never);
    await c.createBreadcrumb(
      named('agent-stamped', {
        permissions: { net: true },
        deployment: {
          v: 1,
          owner: 'operator',
          id: 'x',
          version: 2,
          digest: 'sha256:0',
          at: '2026-01-01T00:00:00Z',
          sig: 'hmac-sha256:00',
        },
      }) as never,
    );
    expect((await answer(c, await request(c, 'agent-echo', { message: 'yo' }))).output).toEqual({ echo: 'yo' });
    const net = await answer(c, await request(c, 'agent-net', { message: 'x' }));
    expect(net.status).toBe('error');
    const stamped = await answer(c, await request(c, 'agent-stamped', { message: 'x' }));
    expect(stamped.status).toBe('error');
    let rejected: Array<{ name?: string; reason: string }> = [];
    for (let i = 0; i < 150 && rejected.filter((r) => r.name?.startsWith('agent-')).length < 2; i++) {
      const catalog = await c.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, tag: WS, include_context: true });
      rejected = (catalog[0]?.context?.['rejectedTools'] ?? []) as typeof rejected;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(rejected.find((r) => r.name === 'agent-net')?.reason).toContain(
      'Unrestricted network access (net: true) is not allowed',
    );
    expect(rejected.find((r) => r.name === 'agent-stamped')?.reason).toMatch(/deployment stamp/);
  }, 120_000);
});

it('the fixture directory holds the 13 upstream file names', () => {
  expect(readdirSync(FIXTURES).sort()).toEqual(
    [
      'breadcrumb-create',
      'breadcrumb-search',
      'calculator',
      'echo',
      'json-transform',
      'ollama',
      'openrouter-models-sync',
      'openrouter',
      'random',
      'scheduler',
      'timer',
      'venice',
      'workflow',
    ]
      .map((n) => `${n}.json`)
      .sort(),
  );
});
