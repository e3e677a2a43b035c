// The tool.catalog.v1 entries of the catalog's tools: one per name, at its default version, listing
// every runnable version (newest first; removed versions are left out) and the default's contract,
// plus the facts exports describe (timeout, network hosts, secret names; host tools also their
// observability tags and budget), so an export from the store says what one from the files says.

import type { CatalogEntry, CatalogVersion } from '../breadcrumbs/messages.js';
import type { HostTool } from '../host-tools/index.js';
import type { ToolDefinition } from '../screen/index.js';
import { chooseVersion, compareVersionsDesc, versionStatus, type VersionCandidate } from './versions.js';

/** The single version of a host tool: the first 12 hex digits of its manifest's digest. */
export function hostVersion(host: HostTool): string {
  return host.manifestDigest.slice(0, 12);
}

/** The export facts of a code tool: its timeout, network hosts and required secret names (never values). */
export function codeFacts(tool: ToolDefinition): Pick<CatalogEntry, 'timeoutMs' | 'net' | 'requiredSecrets'> {
  return { timeoutMs: tool.timeoutMs, net: tool.net, requiredSecrets: tool.requiredSecrets };
}

/** The export facts of a host tool: its transport timeout, secret names, observability tags and budget. */
export function hostFacts(host: HostTool): Pick<CatalogEntry, 'timeoutMs' | 'requiredSecrets' | 'tags' | 'budget'> {
  return {
    ...(host.transport.timeoutMs !== undefined ? { timeoutMs: host.transport.timeoutMs } : {}),
    requiredSecrets: host.secrets,
    tags: host.observabilityTags,
    ...(host.budget ? { budget: host.budget } : {}),
  };
}

/** The entry of code tool `name` from its versions; undefined when none is runnable (all removed). */
export function codeEntry(
  name: string,
  candidates: ReadonlyArray<VersionCandidate<ToolDefinition>>,
  nowMs: number,
): CatalogEntry | undefined {
  const choice = chooseVersion(name, candidates, undefined, nowMs);
  if (!choice.ok) return undefined;
  const tool = choice.chosen.value;
  const versions = [...candidates]
    .sort((a, b) => compareVersionsDesc(a.version, b.version))
    .flatMap((candidate): CatalogVersion[] => {
      const status = versionStatus(candidate.contract, nowMs);
      return status === 'removed'
        ? []
        : [{ version: candidate.version, status, ...(candidate.contract?.deprecation ?? {}) }];
    });
  return {
    name: tool.name,
    description: tool.description,
    version: tool.version,
    kind: 'code',
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema,
    examples: tool.examples.map((example) => ({
      description: example.description,
      input: example.input,
      output: example.output,
    })),
    status: versionStatus(tool.contract, nowMs),
    versions,
    contract: tool.contract,
    ...codeFacts(tool),
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
    ...hostFacts(host),
  };
}
