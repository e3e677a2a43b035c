// loadHostTools(): every configured manifest -> the host tools that may be exposed, the ones kept
// out (and why), and the manifests that failed to load.
//
// Rules, in order: a manifest with one invalid entry is rejected whole (errors[]); a name defined
// by more than one manifest exposes none of its definitions (denied[]: a clash exposes neither); a tool
// whose capabilities are not all granted is denied with the capability named (a cap.audit-shaped
// record goes to the log). The same path listed twice is loaded once.

import path from 'node:path';
import type { Logger } from '../logger.js';
import type { SchemaValidator } from '../screen/index.js';
import { capDenial, missingCapabilities } from './capabilities.js';
import { loadManifest } from './load-manifest.js';
import { CAPABILITY_FAMILIES, type DeniedHostTool, type HostTool } from './types.js';

/** Inputs of loadHostTools: config `manifests`, config `grantedCapabilities`, a logger. */
export interface LoadHostToolsOptions {
  paths: readonly string[];
  grantedCapabilities: readonly string[];
  logger: Logger;
  /** The runner's schema validator, shared with code tools. */
  validator: SchemaValidator;
}

/** Exposable tools, denied tools and rejected manifests. */
export interface HostToolsLoad {
  tools: HostTool[];
  denied: DeniedHostTool[];
  errors: Array<{ path: string; message: string }>;
}

function warnUnknownGrants(grants: readonly string[], logger: Logger): void {
  for (const grant of grants) {
    const family = grant.trim().split(':')[0] ?? '';
    if (!(CAPABILITY_FAMILIES as readonly string[]).includes(family)) {
      logger.warn('unknown capability family granted', { grant, known: CAPABILITY_FAMILIES });
    }
  }
}

/** Loads all manifests and applies uniqueness and capability policy. */
export async function loadHostTools(options: LoadHostToolsOptions): Promise<HostToolsLoad> {
  const { logger, grantedCapabilities } = options;
  warnUnknownGrants(grantedCapabilities, logger);
  const errors: HostToolsLoad['errors'] = [];
  const loaded: HostTool[] = [];
  const seenPaths = new Set<string>();
  for (const manifestPath of options.paths) {
    const absolute = path.resolve(manifestPath);
    if (seenPaths.has(absolute)) {
      logger.warn('host tool manifest listed twice', { path: manifestPath });
      continue;
    }
    seenPaths.add(absolute);
    const result = await loadManifest(absolute, { validator: options.validator });
    if (!result.ok) {
      errors.push({ path: manifestPath, message: result.error });
      logger.error('host tool manifest rejected', { path: manifestPath, error: result.error });
      continue;
    }
    for (const warning of result.warnings) logger.warn('host tool manifest warning', { path: manifestPath, warning });
    loaded.push(...result.tools);
  }

  const byName = new Map<string, HostTool[]>();
  for (const tool of loaded) byName.set(tool.name, [...(byName.get(tool.name) ?? []), tool]);

  const tools: HostTool[] = [];
  const denied: DeniedHostTool[] = [];
  for (const tool of loaded) {
    const sameName = byName.get(tool.name) ?? [];
    if (sameName.length > 1) {
      const where = sameName.map((other) => other.manifestPath).join(', ');
      const reason = `tool name ${JSON.stringify(tool.name)} is defined by more than one manifest (${where}); none is exposed`;
      denied.push({ name: tool.name, reason, manifestPath: tool.manifestPath });
      logger.warn('host tool denied', { tool: tool.name, manifestPath: tool.manifestPath, reason });
      continue;
    }
    const missing = missingCapabilities(tool.capabilities, grantedCapabilities);
    if (missing.length > 0) {
      const reason = missing.map((m) => m.reason).join('; ');
      denied.push({ name: tool.name, reason, manifestPath: tool.manifestPath });
      for (const m of missing) {
        logger.warn('host tool denied', {
          tool: tool.name,
          manifestPath: tool.manifestPath,
          reason: m.reason,
          capAudit: capDenial(m.cap, 'tool.expose', tool.name, {}, 'cap_missing'),
        });
      }
      continue;
    }
    tools.push(tool);
  }
  logger.info('host tools loaded', { exposed: tools.length, denied: denied.length, rejectedManifests: errors.length });
  return { tools, denied, errors };
}
