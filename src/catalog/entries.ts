// The tool.catalog.v1 entries of the catalog's tools: one per name, at its default version, listing
// every runnable version (newest first; removed versions are left out) and the default's contract.

import type { CatalogEntry, CatalogVersion } from '../breadcrumbs/messages.js';
import type { HostTool } from '../legacy/index.js';
import type { ToolDefinition } from '../screen/index.js';
import { chooseVersion, compareVersionsDesc, versionStatus, type VersionCandidate } from './versions.js';

/** The single version of a host tool: the first 12 hex digits of its manifest's digest. */
export function hostVersion(host: HostTool): string {
  return host.manifestDigest.slice(0, 12);
}

/** The entry of code tool `name` from its versions; undefined when none is runnable (all removed). */
export function codeEntry(name: string, candidates: ReadonlyArray<VersionCandidate<ToolDefinition>>, nowMs: number): CatalogEntry | undefined {
  const choice = chooseVersion(name, candidates, undefined, nowMs);
  if (!choice.ok) return undefined;
  const tool = choice.chosen.value;
  const versions = [...candidates]
    .sort((a, b) => compareVersionsDesc(a.version, b.version))
    .flatMap((candidate): CatalogVersion[] => {
      const status = versionStatus(candidate.contract, nowMs);
      return status === 'removed' ? [] : [{ version: candidate.version, status, ...(candidate.contract?.deprecation ?? {}) }];
    });
  return {
    name: tool.name,
    description: tool.description,
    version: tool.version,
    kind: 'code',
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema,
    examples: tool.examples.map((example) => ({ description: example.description, input: example.input, output: example.output })),
    status: versionStatus(tool.contract, nowMs),
    versions,
    contract: tool.contract,
  };
}

/** The entry of a host tool (one version); undefined when its contract says it was removed. */
export function hostEntry(host: HostTool, nowMs: number): CatalogEntry | undefined {
  const status = versionStatus(host.contract, nowMs);
  if (status === 'removed') return undefined;
  const version = hostVersion(host);
  return {
    name: host.name,
    description: host.description,
    version,
    kind: 'host',
    inputSchema: host.inputSchema ?? { type: 'object' },
    ...(host.resultSchema ? { outputSchema: host.resultSchema } : {}),
    examples: [],
    status,
    versions: [{ version, status, ...(host.contract?.deprecation ?? {}) }],
    contract: host.contract ?? {},
  };
}
