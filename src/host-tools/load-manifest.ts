// loadManifest(): one tools.json (agentcli or Runloop, detected), a Runloop bundle directory, or a
// bundle's manifest.toml -> all its host tools, or the first error.
//
// Detection: a JSON object with a `version` key, or whose tools carry `id`/`transport`, is Runloop
// (so a Runloop file missing `version` still gets Runloop's "missing field" error); anything
// else is agentcli. Read failures are `read manifest: <err>`, JSON syntax errors `parse manifest:
// <err>`; agentcli type errors `parse manifest: json: ...`; Runloop shape errors `invalid JSON: ...`.

import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { SchemaValidator } from '../screen/index.js';
import { decodeAgentcli } from './agentcli-decode.js';
import { buildAgentcliTools } from './agentcli-manifest.js';
import { isJsonObject } from './json-kinds.js';
import { loadBundle } from './runloop-bundle.js';
import { decodeRunloop } from './runloop-decode.js';
import { buildRunloopTools } from './runloop-manifest.js';
import type { ManifestLoadResult } from './types.js';

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function looksLikeRunloop(doc: unknown): boolean {
  if (!isJsonObject(doc)) return false;
  if ('version' in doc) return true;
  const tools = doc.tools;
  return Array.isArray(tools) && tools.some((tool) => isJsonObject(tool) && ('id' in tool || 'transport' in tool));
}

function parseToolsJson(
  bytes: Buffer,
  manifestPath: string,
  digest: string,
  runloopOnly: boolean,
  validator: SchemaValidator,
): ManifestLoadResult {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    return { ok: false, error: `parse manifest: ${errorText(err)}` };
  }
  const source = { manifestPath, manifestDigest: digest, validator };
  if (runloopOnly || looksLikeRunloop(doc)) {
    const decoded = decodeRunloop(doc);
    if (!decoded.ok) return { ok: false, error: `invalid JSON: ${decoded.error}` };
    return buildRunloopTools(decoded.version, decoded.tools, source);
  }
  const decoded = decodeAgentcli(doc);
  if (!decoded.ok) return { ok: false, error: `parse manifest: ${decoded.error}` };
  return buildAgentcliTools(decoded.tools, source);
}

/** Loads one manifest: a tools.json file, a Runloop bundle directory, or its manifest.toml (schemas compiled with `options.validator`). */
export async function loadManifest(
  manifestPath: string,
  options: { validator: SchemaValidator },
): Promise<ManifestLoadResult> {
  const { validator } = options;
  const absolute = path.resolve(manifestPath);
  try {
    if ((await stat(absolute)).isDirectory()) {
      return await loadBundle(path.join(absolute, 'manifest.toml'), (b, p, d) =>
        parseToolsJson(b, p, d, true, validator),
      );
    }
  } catch (err) {
    return { ok: false, error: `read manifest: ${errorText(err)}` };
  }
  if (absolute.endsWith('.toml')) return loadBundle(absolute, (b, p, d) => parseToolsJson(b, p, d, true, validator));
  let bytes: Buffer;
  try {
    bytes = await readFile(absolute);
  } catch (err) {
    return { ok: false, error: `read manifest: ${errorText(err)}` };
  }
  return parseToolsJson(bytes, absolute, createHash('sha256').update(bytes).digest('hex'), false, validator);
}
