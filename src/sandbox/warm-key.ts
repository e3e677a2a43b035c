// The key of the warm processes that may serve a call (sandbox.ts): tool version, source, permission
// set, limits and secrets. A warm process serves exactly one such key.

import { createHash } from 'node:crypto';
import type { SandboxJob } from './types.js';

// Digests of tool sources, by source text (a Map lookup hashes the string once per string object; a
// sha256 of the source on every call cost more): at most 512, the oldest dropped.
const sourceDigests = new Map<string, string>();
function sourceDigest(source: string): string {
  let digest = sourceDigests.get(source);
  if (digest === undefined) {
    digest = createHash('sha256').update(source).digest('hex');
    sourceDigests.set(source, digest);
    if (sourceDigests.size > 512) sourceDigests.delete(sourceDigests.keys().next().value as string);
  }
  return digest;
}

/** The key of the warm processes that may serve a call: tool version, source, permissions, limits, secrets. */
export function warmKey(
  tool: SandboxJob['tool'],
  specKey: string,
  timeoutMs: number,
  secrets: Record<string, string>,
): string {
  const names = Object.keys(secrets);
  let digest = sourceDigest(tool.source);
  if (names.length > 0) {
    const hash = createHash('sha256').update(digest).update('\0');
    for (const name of names.sort()) hash.update(JSON.stringify([name, secrets[name]]));
    digest = hash.digest('hex');
  }
  return `${tool.name}@${tool.version}#${digest.slice(0, 32)}|${specKey}|${timeoutMs}|${tool.api}|cpu:${tool.cpuPercent ?? 100}`;
}
