// loadHostTools: manifests rejected whole, names unique across all manifests (a clash exposes
// neither), capabilities intersected with the grants (net grants net:*, net:host only that host).

import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isCapabilityGranted, loadHostTools } from '../../src/host-tools/index.js';
import { captureLogger, createTempDirs, validator, writeManifest } from './helpers.js';

const temp = createTempDirs();
afterEach(() => temp.cleanup());

const httpTool = (id: string, url: string, capabilities: string[] = []) => ({
  id,
  description: `tool ${id}`,
  transport: { kind: 'http', method: 'POST', url },
  input_schema: null,
  result_schema: null,
  capabilities,
});

describe('capability grants', () => {
  it.each([
    ['net:api.mail.io', ['net'], true],
    ['net:api.mail.io', ['net:api.mail.io'], true],
    ['net:API.Mail.io', ['net:api.mail.io.'], true],
    ['net:api.mail.io', ['net:other.io'], false],
    ['net', ['net:api.mail.io'], false],
    ['fs', ['fs'], true],
    ['fs:/tmp', ['fs'], true],
    ['exec', ['fs', 'net'], false],
    ['teleport', ['teleport'], false],
  ] as const)('%s with %j -> %s', (cap, grants, expected) => {
    expect(isCapabilityGranted(cap, grants)).toBe(expected);
  });
});

describe('loadHostTools', () => {
  it('exposes granted tools and denies the rest, naming the capability', async () => {
    const dir = await temp.make();
    const file = await writeManifest(dir, {
      version: 1,
      tools: [
        httpTool('mail.send', 'https://api.mail.io/send', ['net:api.mail.io']),
        httpTool('kb.write', 'https://api.mail.io/kb', ['kb_write']),
        httpTool('elsewhere', 'https://evil.example/x'),
      ],
    });
    const log = captureLogger();
    const result = await loadHostTools({
      paths: [file],
      grantedCapabilities: ['net:api.mail.io'],
      logger: log.logger,
      validator,
    });
    expect(result.errors).toEqual([]);
    expect(result.tools.map((t) => t.name)).toEqual(['mail.send']);
    expect(result.denied).toEqual([
      { name: 'kb.write', manifestPath: file, reason: 'capability "kb_write" not granted' },
      { name: 'elsewhere', manifestPath: file, reason: 'capability "net:evil.example" not granted' },
    ]);
    const audit = log.lines.find((line) => line.msg === 'host tool denied' && line.tool === 'kb.write');
    expect(audit?.capAudit).toMatchObject({
      cap: 'kb_write',
      op: 'tool.expose',
      target: 'kb.write',
      decision: 'deny',
      severity: 'warn',
      reason: 'cap_missing',
    });
    expect((audit?.capAudit as { args_hash: string }).args_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the bare net grant covers every host; unknown families are never granted', async () => {
    const dir = await temp.make();
    const file = await writeManifest(dir, {
      version: 1,
      tools: [httpTool('a', 'https://a.io/'), httpTool('b', 'https://b.io/', ['teleport:x'])],
    });
    const result = await loadHostTools({
      paths: [file],
      grantedCapabilities: ['net', 'teleport'],
      logger: captureLogger().logger,
      validator,
    });
    expect(result.tools.map((t) => t.name)).toEqual(['a']);
    expect(result.denied[0]?.reason).toBe(
      'capability "teleport:x" has unknown family "teleport" (known: fs, net, time, kb_read, kb_write, secrets, model, exec)',
    );
  });

  it('a name defined by two manifests exposes neither; a bad manifest is rejected whole', async () => {
    const one = await writeManifest(await temp.make(), {
      version: 1,
      tools: [httpTool('shared', 'https://a.io/'), httpTool('only.one', 'https://a.io/')],
    });
    const twoDir = await temp.make();
    const two = await writeManifest(twoDir, { tools: [{ name: 'shared', command: ['/bin/cat'] }] });
    const bad = await writeManifest(await temp.make(), {
      tools: [
        { name: 'fine', command: ['/bin/cat'] },
        { name: 'broken', command: ['cat'] },
      ],
    });
    const result = await loadHostTools({
      paths: [one, two, bad, path.relative(process.cwd(), one)],
      grantedCapabilities: ['net'],
      logger: captureLogger().logger,
      validator,
    });
    expect(result.tools.map((t) => t.name)).toEqual(['only.one']);
    const reason = `tool name "shared" is defined by more than one manifest (${one}, ${two}); none is exposed`;
    expect(result.denied).toEqual([
      { name: 'shared', manifestPath: one, reason },
      { name: 'shared', manifestPath: two, reason },
    ]);
    expect(result.errors).toEqual([
      { path: bad, message: 'tool[1] "broken": relative command[0] must start with ./tools/bin/' },
    ]);
  });

  it('agentcli tools need no grant; Runloop exec tools need exec', async () => {
    const agentcli = await writeManifest(await temp.make(), { tools: [{ name: 'cat', command: ['/bin/cat'] }] });
    const runloop = await writeManifest(await temp.make(), {
      version: 1,
      tools: [
        {
          id: 'rl.cat',
          description: 'cat',
          transport: { kind: 'exec', command: '/bin/cat' },
          input_schema: null,
          result_schema: null,
        },
      ],
    });
    const without = await loadHostTools({
      paths: [agentcli, runloop],
      grantedCapabilities: [],
      logger: captureLogger().logger,
      validator,
    });
    expect(without.tools.map((t) => t.name)).toEqual(['cat']);
    expect(without.denied.map((d) => d.reason)).toEqual(['capability "exec" not granted']);
    const granted = await loadHostTools({
      paths: [agentcli, runloop],
      grantedCapabilities: ['exec'],
      logger: captureLogger().logger,
      validator,
    });
    expect(granted.tools.map((t) => t.name)).toEqual(['cat', 'rl.cat']);
  });
});
