// Runloop bundles (contracts.md §2.3 L3-L5): manifest.toml `[artifacts.tools]`, with the digest
// verified (Runloop never checks it; we reject a mismatch).

import { readFileSync } from 'node:fs';
import { symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { blake3 } from '@noble/hashes/blake3';
import { bytesToHex } from '@noble/hashes/utils';
import { afterEach, describe, expect, it } from 'vitest';
import { blake3Hex, loadManifest } from '../../src/host-tools/index.js';
import { createTempDirs, validator, writeManifest } from './helpers.js';

const temp = createTempDirs();
afterEach(() => temp.cleanup());

const TOOLS = {
  version: 1,
  tools: [
    {
      id: 'kb.search',
      description: 'Search',
      transport: { kind: 'exec', command: '/usr/bin/true' },
      input_schema: { type: 'object' },
      result_schema: { type: 'object' },
    },
  ],
};

async function bundle(artifacts: string, tools: unknown = TOOLS): Promise<{ dir: string; digest: string }> {
  const dir = await temp.make();
  const file = await writeManifest(dir, tools);
  const digest = blake3Hex(readFileSync(file));
  await writeFile(
    path.join(dir, 'manifest.toml'),
    `[agent]\nname = "mailer"\n\n${artifacts.replace('<digest>', digest)}\n`,
  );
  return { dir, digest };
}

describe('Runloop bundles (L3-L5)', () => {
  it('L5: the digest is 64 hex characters of BLAKE3', () => {
    const hex = blake3Hex(Buffer.from('abc123'));
    expect(hex).toMatch(/^[0-9a-f]{64}$/);
    expect(hex).toBe(bytesToHex(blake3(new TextEncoder().encode('abc123'))));
    expect(blake3Hex(new Uint8Array())).toBe('af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
  });

  it('L3 (verified): a correct digest exposes the tools, by directory or by manifest.toml', async () => {
    const { dir, digest } = await bundle('[artifacts.tools]\npath = "tools.json"\nblake3 = "<digest>"\nversion = 1');
    for (const target of [dir, path.join(dir, 'manifest.toml')]) {
      const result = await loadManifest(target, { validator });
      expect(result.ok).toBe(true);
      if (!result.ok) continue;
      expect(result.tools.map((t) => [t.name, t.manifestDigest, t.manifestPath])).toEqual([
        ['kb.search', digest, path.join(dir, 'tools.json')],
      ]);
    }
  });

  it('L3 (Runloop row blake3="abcdef"): we check the digest, so the bundle is rejected', async () => {
    const { dir, digest } = await bundle('[artifacts.tools]\npath = "tools.json"\nblake3 = "abcdef"\nversion = 1');
    expect(await loadManifest(dir, { validator })).toEqual({
      ok: false,
      error: `artifact error for mailer: tools.json blake3 mismatch: manifest.toml lists "abcdef", the file hashes to "${digest}"`,
    });
  });

  it('L4: an unsupported artifact version', async () => {
    const { dir } = await bundle('[artifacts.tools]\npath = "tools.json"\nblake3 = "<digest>"\nversion = 99');
    expect(await loadManifest(dir, { validator })).toEqual({
      ok: false,
      error: 'artifact error for mailer: unsupported tools.json version 99 (supported: 1)',
    });
  });

  it('a missing digest, an escaping path and a symlink out of the bundle are rejected', async () => {
    const noDigest = await bundle('[artifacts.tools]\npath = "tools.json"\nversion = 1');
    expect(await loadManifest(noDigest.dir, { validator })).toEqual({
      ok: false,
      error: 'artifact error for mailer: [artifacts.tools] blake3 is required',
    });
    const escaping = await bundle('[artifacts.tools]\npath = "../tools.json"\nblake3 = "<digest>"');
    expect(await loadManifest(escaping.dir, { validator })).toEqual({
      ok: false,
      error: 'artifact error for mailer: [artifacts.tools] path "../tools.json" escapes the bundle directory',
    });
    const outside = await temp.make();
    const target = await writeManifest(outside, TOOLS);
    const linked = await bundle('[artifacts.tools]\npath = "link.json"\nblake3 = "<digest>"');
    await symlink(target, path.join(linked.dir, 'link.json'));
    expect(await loadManifest(linked.dir, { validator })).toEqual({
      ok: false,
      error: 'artifact error for mailer: [artifacts.tools] path "link.json" escapes the bundle directory',
    });
  });

  it('the tools.json of a bundle must be Runloop-shaped', async () => {
    const { dir } = await bundle('[artifacts.tools]\nblake3 = "<digest>"', { tools: [] });
    expect(await loadManifest(dir, { validator })).toEqual({
      ok: false,
      error: 'invalid JSON: missing field `version` at $',
    });
  });

  it('a bundle without [artifacts.tools] has no tools; bad TOML and a missing manifest.toml are errors', async () => {
    const none = await bundle('');
    const result = await loadManifest(none.dir, { validator });
    expect(result.ok && result.tools).toEqual([]);
    const broken = await bundle('[artifacts.tools\n');
    const bad = await loadManifest(broken.dir, { validator });
    expect(!bad.ok && bad.error).toMatch(/^parse manifest: /);
    const empty = await temp.make();
    expect(await loadManifest(empty, { validator })).toEqual({
      ok: false,
      error: `read manifest: ENOENT: no such file or directory, open '${path.join(empty, 'manifest.toml')}'`,
    });
  });
});
