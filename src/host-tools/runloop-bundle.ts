// Runloop agent bundles: a directory with a signed manifest.toml whose `[artifacts.tools]` table
// names tools.json and its BLAKE3 digest, which must match.
//
// Unlike Runloop, which never checks the digest, we verify it: a bundle whose tools.json does not
// hash to the listed blake3 is rejected, so an edited tools.json cannot slip past a signed manifest.
// The tools.json path must stay inside the bundle directory (symlinks included).

import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { blake3 } from '@noble/hashes/blake3';
import { bytesToHex } from '@noble/hashes/utils';
import { parse as parseToml } from 'smol-toml';
import { isJsonObject } from './json-kinds.js';
import type { ManifestLoadResult } from './types.js';

/** BLAKE3 of `bytes` as 64 lower-case hex characters (as Runloop's digest_file_hex). */
export function blake3Hex(bytes: Uint8Array): string {
  return bytesToHex(blake3(bytes));
}

/** Parses tools.json bytes (supplied by load-manifest.ts, which owns format detection). */
export type ToolsJsonParser = (bytes: Buffer, manifestPath: string, digest: string) => ManifestLoadResult;

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function agentName(doc: Record<string, unknown>, dir: string): string {
  const agent = doc.agent;
  if (isJsonObject(agent) && typeof agent.name === 'string' && agent.name !== '') return agent.name;
  if (typeof doc.name === 'string' && doc.name !== '') return doc.name;
  return path.basename(dir);
}

function inside(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** Loads the tools of a bundle from its manifest.toml (absolute path). */
export async function loadBundle(tomlPath: string, parseToolsJson: ToolsJsonParser): Promise<ManifestLoadResult> {
  let text: string;
  try {
    text = await readFile(tomlPath, 'utf8');
  } catch (err) {
    return { ok: false, error: `read manifest: ${errorText(err)}` };
  }
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (err) {
    return { ok: false, error: `parse manifest: ${errorText(err)}` };
  }
  const dir = path.dirname(tomlPath);
  const fail = (message: string): ManifestLoadResult => ({
    ok: false,
    error: `artifact error for ${agentName(doc, dir)}: ${message}`,
  });
  const artifacts = doc.artifacts;
  const entry = isJsonObject(artifacts) ? artifacts.tools : undefined;
  if (entry === undefined) {
    return { ok: true, tools: [], warnings: [`${tomlPath}: the bundle has no [artifacts.tools], so no host tools`] };
  }
  if (!isJsonObject(entry)) return fail('[artifacts.tools] must be a table');
  const version = entry.version ?? 1;
  if (typeof version !== 'number')
    return fail(`[artifacts.tools] version must be an integer (got ${JSON.stringify(version)})`);
  if (version !== 1) return fail(`unsupported tools.json version ${version} (supported: 1)`);
  const rel = entry.path ?? 'tools.json';
  if (typeof rel !== 'string' || rel === '') return fail(`[artifacts.tools] path must be a non-empty string`);
  const listed = entry.blake3;
  if (typeof listed !== 'string' || listed === '') return fail('[artifacts.tools] blake3 is required');
  const toolsPath = path.resolve(dir, rel);
  if (path.isAbsolute(rel) || !inside(dir, toolsPath))
    return fail(`[artifacts.tools] path ${JSON.stringify(rel)} escapes the bundle directory`);
  let bytes: Buffer;
  try {
    const [realDir, realFile] = await Promise.all([realpath(dir), realpath(toolsPath)]);
    if (!inside(realDir, realFile))
      return fail(`[artifacts.tools] path ${JSON.stringify(rel)} escapes the bundle directory`);
    bytes = await readFile(realFile);
  } catch (err) {
    return { ok: false, error: `read manifest: ${errorText(err)}` };
  }
  const actual = blake3Hex(bytes);
  if (actual !== listed.toLowerCase()) {
    return fail(
      `${rel} blake3 mismatch: manifest.toml lists ${JSON.stringify(listed)}, the file hashes to ${JSON.stringify(actual)}`,
    );
  }
  return parseToolsJson(bytes, toolsPath, actual);
}
