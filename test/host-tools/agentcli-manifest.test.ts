// agentcli tools.json acceptance rows M1-M17 (contracts.md §2.1), asserting the exact strings.

import { chmod, mkdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exportOpenAI, loadManifest, type HostTool } from '../../src/host-tools/index.js';
import { createTempDirs, validator, writeManifest } from './helpers.js';

const temp = createTempDirs();
afterEach(() => temp.cleanup());

async function load(tools: unknown[]): Promise<Awaited<ReturnType<typeof loadManifest>>> {
  return loadManifest(await writeManifest(await temp.make(), { tools }), { validator });
}

async function loadError(tools: unknown[]): Promise<string> {
  const result = await load(tools);
  if (result.ok) throw new Error('expected the manifest to be rejected');
  return result.error;
}

const cmd = (command0: string) => [{ name: 't', command: [command0] }];

describe('agentcli manifest (M1-M17)', () => {
  it('M1: loads, normalises envPassthrough and exports one OpenAI tool', async () => {
    const dir = await temp.make();
    const file = await writeManifest(dir, {
      tools: [
        {
          name: 'hello',
          schema: { type: 'object' },
          command: ['/bin/echo', '{}'],
          envPassthrough: ['oai_api_key', 'OAI_API_KEY', ' Path ', 'TZ'],
        },
      ],
    });
    const result = await loadManifest(file, { validator });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.tools).toHaveLength(1);
    const tool = result.tools[0] as HostTool;
    expect(tool).toMatchObject({
      name: 'hello',
      format: 'agentcli',
      manifestPath: file,
      inputSchema: { type: 'object' },
      resultSchema: null,
    });
    expect(tool.transport).toEqual({
      kind: 'exec',
      command: ['/bin/echo', '{}'],
      args: [],
      style: 'agentcli',
      envPassthrough: ['OAI_API_KEY', 'PATH', 'TZ'],
    });
    expect(tool.manifestDigest).toBe(createHash('sha256').update(readFileSync(file)).digest('hex'));
    expect(exportOpenAI(result.tools).tools).toEqual([
      { type: 'function', function: { name: 'hello', parameters: { type: 'object' } } },
    ]);
  });

  it('M2: two tools named x — the relative command of tool[0] fails first (quirk)', async () => {
    expect(
      await loadError([
        { name: 'x', command: ['echo', '{}'] },
        { name: 'x', command: ['echo', '{}'] },
      ]),
    ).toBe('tool[0] "x": relative command[0] must start with ./tools/bin/');
  });

  it('M2: with absolute commands the duplicate is reported', async () => {
    expect(
      await loadError([
        { name: 'x', command: ['/bin/echo', '{}'] },
        { name: 'x', command: ['/bin/echo', '{}'] },
      ]),
    ).toBe('tool[1] "x": duplicate name');
  });

  it('M3: missing name', async () => {
    expect(await loadError([{ description: 'x', command: ['echo', '{}'] }])).toBe('tool[0]: name is required');
  });

  it('M4: missing command', async () => {
    expect(await loadError([{ name: 'x' }])).toBe('tool[0] "x": command must have at least program name');
  });

  it('M5: absolute command paths are allowed', async () => {
    const result = await load(cmd('/usr/bin/env'));
    expect(result.ok && result.tools[0]?.transport).toMatchObject({ command: ['/usr/bin/env'] });
  });

  it('M6: a bare program name is rejected', async () => {
    expect(await loadError(cmd('echo'))).toBe('tool[0] "t": relative command[0] must start with ./tools/bin/');
  });

  it('M7: ./tools/bin/x is rewritten to <manifestDir>/tools/bin/x', async () => {
    const dir = await temp.make();
    const result = await loadManifest(await writeManifest(dir, { tools: cmd('./tools/bin/fs_read_file') }), {
      validator,
    });
    expect(result.ok && result.tools[0]?.transport).toMatchObject({
      command: [path.join(dir, 'tools/bin/fs_read_file')],
    });
  });

  it('M8: a leading .. is rejected', async () => {
    expect(await loadError(cmd('../tools/bin/get_time'))).toBe(
      `tool[0] "t": command[0] must not start with '..' or escape tools/bin (got "../tools/bin/get_time")`,
    );
  });

  it('M9: escaping tools/bin after normalisation is rejected', async () => {
    expect(await loadError(cmd('./tools/bin/../hack'))).toBe(
      'tool[0] "t": command[0] escapes ./tools/bin after normalization (got "./tools/bin/../hack" -> "./tools/hack")',
    );
  });

  it('M10: backslashes are turned into slashes before cleaning', async () => {
    expect(await loadError(cmd('.\\tools\\bin\\..\\hack'))).toBe(
      'tool[0] "t": command[0] escapes ./tools/bin after normalization (got ".\\\\tools\\\\bin\\\\..\\\\hack" -> "./tools/hack")',
    );
  });

  it('M11: backslash paths inside tools/bin are fine', async () => {
    const dir = await temp.make();
    const result = await loadManifest(await writeManifest(dir, { tools: cmd('.\\tools\\bin\\fs_read_file') }), {
      validator,
    });
    expect(result.ok && result.tools[0]?.transport).toMatchObject({
      command: [path.join(dir, 'tools/bin/fs_read_file')],
    });
  });

  it('M12: an invalid envPassthrough name is reported with its original spelling', async () => {
    expect(
      await loadError([{ name: 't', command: ['/bin/echo'], envPassthrough: ['1BAD', 'GOOD', 'OAI-API-KEY'] }]),
    ).toBe('tool[0] "t": envPassthrough[0]: invalid name "1BAD" (must match [A-Z_][A-Z0-9_]*)');
    expect(await loadError([{ name: 't', command: ['/bin/echo'], envPassthrough: ['good', 'oai-api-key'] }])).toBe(
      'tool[0] "t": envPassthrough[1]: invalid name "oai-api-key" (must match [A-Z_][A-Z0-9_]*)',
    );
  });

  it('M13: relative commands resolve against the manifest directory, not the cwd', async () => {
    const base = await temp.make();
    await mkdir(path.join(base, 'other'), { recursive: true });
    const file = await writeManifest(
      base,
      { tools: [{ name: 'hello', command: ['./tools/bin/hello_tool'] }] },
      'configs/sub/tools.json',
    );
    const cwd = process.cwd();
    process.chdir(path.join(base, 'other'));
    try {
      const result = await loadManifest(path.relative(process.cwd(), file), { validator });
      expect(result.ok && result.tools[0]?.transport).toMatchObject({
        command: [path.join(base, 'configs/sub/tools/bin/hello_tool')],
      });
    } finally {
      process.chdir(cwd);
    }
  });

  it('M14: tools/bin/x without ./ is fine', async () => {
    const dir = await temp.make();
    const result = await loadManifest(await writeManifest(dir, { tools: cmd('tools/bin/x') }), { validator });
    expect(result.ok && result.tools[0]?.transport).toMatchObject({ command: [path.join(dir, 'tools/bin/x')] });
  });

  it('M15: ./tools/bin itself escapes', async () => {
    expect(await loadError(cmd('./tools/bin'))).toBe(
      'tool[0] "t": command[0] escapes ./tools/bin after normalization (got "./tools/bin" -> "./tools/bin")',
    );
  });

  it('M16: a blank envPassthrough name', async () => {
    expect(await loadError([{ name: 't', command: ['/bin/echo'], envPassthrough: ['  '] }])).toBe(
      'tool[0] "t": envPassthrough[0]: empty name',
    );
  });

  it('M17: unreadable file and bad JSON', async () => {
    const dir = await temp.make();
    const missing = path.join(dir, 'nope.json');
    expect(await loadManifest(missing, { validator })).toEqual({
      ok: false,
      error: `read manifest: ENOENT: no such file or directory, stat '${missing}'`,
    });
    const file = await writeManifest(dir, '{"tools": [');
    const bad = await loadManifest(file, { validator });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toMatch(/^parse manifest: .*JSON/);
    if (process.getuid?.() !== 0) {
      await chmod(file, 0o000);
      const unreadable = await loadManifest(file, { validator });
      expect(!unreadable.ok && unreadable.error).toMatch(/^read manifest: EACCES/);
    }
  });

  it('check order: name, duplicate, command length, envPassthrough, command path', async () => {
    expect(await loadError([{ name: 't', envPassthrough: ['1BAD'] }])).toBe(
      'tool[0] "t": command must have at least program name',
    );
    expect(await loadError([{ name: 't', command: ['echo'], envPassthrough: ['1BAD'] }])).toBe(
      'tool[0] "t": envPassthrough[0]: invalid name "1BAD" (must match [A-Z_][A-Z0-9_]*)',
    );
  });

  it('Go type errors are parse errors; null tools is an empty manifest', async () => {
    expect(await loadError([{ name: 't', command: ['/bin/echo'], timeoutSec: '5' }])).toBe(
      'parse manifest: json: cannot unmarshal string into Go struct field ToolSpec.tools.timeoutSec of type int',
    );
    expect(await loadError([{ name: 't', command: '/bin/echo' }])).toBe(
      'parse manifest: json: cannot unmarshal string into Go struct field ToolSpec.tools.command of type []string',
    );
    const dir = await temp.make();
    expect(await loadManifest(await writeManifest(dir, '[]'), { validator })).toEqual({
      ok: false,
      error: 'parse manifest: json: cannot unmarshal array into Go value of type tools.Manifest',
    });
    expect(await loadManifest(await writeManifest(dir, '{"tools": null}'), { validator })).toEqual({
      ok: true,
      tools: [],
      warnings: [],
    });
  });

  it('our additions: timeoutSec, schema shape and schema compilation', async () => {
    expect(await loadError([{ name: 't', command: ['/bin/echo'], timeoutSec: -1 }])).toBe(
      'tool[0] "t": timeoutSec must not be negative (got -1)',
    );
    expect(await loadError([{ name: 't', command: ['/bin/echo'], schema: 'object' }])).toBe(
      'tool[0] "t": schema must be a JSON object (got string)',
    );
    expect(await loadError([{ name: 't', command: ['/bin/echo'], schema: { type: 'nope' } }])).toMatch(
      /^tool\[0\] "t": invalid schema: /,
    );
    const result = await load([{ name: 't', command: ['/bin/echo'], timeoutSec: 5 }]);
    expect(result.ok && result.tools[0]?.transport).toMatchObject({ timeoutMs: 5000 });
  });
});
