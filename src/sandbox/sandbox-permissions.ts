// A call's permission set (sandbox.ts): the tool's net hosts, the private hosts the operator granted
// it (resolved once at start-up), its extra permissions and memory, as the pool's key.

import { lookup } from 'node:dns/promises';
import type { Config } from '../config/index.js';
import { ErrorCode, RunnerError, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { denyNetFor, validateNetHosts, type PrivateGrant } from './net-policy.js';
import type { PoolKeySpec } from './pool.js';
import type { SandboxJob } from './types.js';

export const MIN_MEMORY_MB = 16;

/** `net` as an extra permission is `net: true`: bare --allow-net (any host by name; the private-range deny list stays). */
const EXTRA_PERMISSIONS: ReadonlySet<string> = new Set(['read', 'write', 'env', 'run', 'sys', 'net']);

export function clamp(value: number, fallback: number, min: number, max: number): number {
  const n = Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
  return Math.min(max, Math.max(min, n));
}

/** The permission sets of one sandbox. */
export interface Permissions {
  /** The pool key of a permission set. */
  specFor(
    net: readonly string[],
    memoryMb: number,
    extra?: readonly string[],
    privateNet?: readonly string[],
  ): PoolKeySpec;
  /** The tool's net hosts, validated (throws RunnerError). */
  netOf(tool: SandboxJob['tool']): string[];
  /** The private hosts of a tool, re-checked against the operator's grants for its name (defence in depth). */
  privateNetOf(tool: SandboxJob['tool']): string[];
  /** The tool's extra permissions, sorted, and those the operator does not allow. */
  extraOf(tool: SandboxJob['tool']): { extra: string[]; refused: string[] };
  /** The tool's memory limit within the operator's bounds. */
  memoryOf(tool: SandboxJob['tool']): number;
  /** The default permission set (no net, default memory): prewarmed at start. */
  defaultSpec(): PoolKeySpec;
}

export function createPermissions(config: Config, grants: ReadonlyMap<string, PrivateGrant>): Permissions {
  const specFor: Permissions['specFor'] = (net, memoryMb, extra = [], privateNet = []) => {
    const granted = privateNet.map((entry) => grants.get(entry) ?? { entry, addresses: [] });
    const allow = [...net, ...privateNet];
    return {
      key: `${memoryMb}|${allow.join(',')}|${extra.join(',')}`,
      net: allow,
      deny: denyNetFor(net, granted),
      extra,
      memoryMb,
    };
  };
  const memoryOf = (tool: SandboxJob['tool']): number =>
    clamp(tool.memoryMb, config.defaultMemoryMb, MIN_MEMORY_MB, config.maxMemoryMb);
  return {
    specFor,
    netOf: (tool) => validateNetHosts(tool.net),
    privateNetOf(tool) {
      const wanted = [...new Set(tool.privateNet ?? [])].sort();
      const allowed = Object.hasOwn(config.allowPrivateHosts, tool.name)
        ? (config.allowPrivateHosts[tool.name] ?? [])
        : [];
      const refused = wanted.filter((entry) => !allowed.includes(entry));
      if (refused.length > 0) {
        throw new RunnerError(
          ErrorCode.PermissionDenied,
          `tool ${JSON.stringify(tool.name)} asks for private host(s) the operator did not grant it (--allow-private-hosts): ${refused.join(', ')}`,
        );
      }
      return wanted;
    },
    extraOf(tool) {
      // Extra permissions: only the known ones, and only what the operator allows (defence in depth:
      // validation already refused anything else for agent-created tools).
      const extra = [...new Set(tool.extraPermissions ?? [])].sort();
      const refused = extra.filter((name) => !EXTRA_PERMISSIONS.has(name) || !config.bootstrapAllow.includes(name));
      return { extra, refused };
    },
    memoryOf,
    defaultSpec: () =>
      specFor([], clamp(config.defaultMemoryMb, config.defaultMemoryMb, MIN_MEMORY_MB, config.maxMemoryMb)),
  };
}

/**
 * Resolves the host of every `--allow-private-hosts` entry once, at start-up: the addresses are cut
 * out of the private-range deny list (denyNetFor). A name that does not resolve keeps no address, so
 * every private address stays denied for it (logged).
 */
export async function resolvePrivateGrants(
  grants: Readonly<Record<string, readonly string[]>>,
  logger: Logger,
): Promise<Map<string, PrivateGrant>> {
  const out = new Map<string, PrivateGrant>();
  for (const entry of new Set(Object.values(grants).flat())) {
    const host = entry.slice(0, entry.lastIndexOf(':')).replace(/^\[(.*)\]$/, '$1');
    try {
      const found = await lookup(host, { all: true, verbatim: true });
      out.set(entry, { entry, addresses: [...new Set(found.map((a) => a.address))] });
    } catch (err) {
      logger.warn('private host does not resolve; it stays denied', { entry, error: coerceError(err).message });
      out.set(entry, { entry, addresses: [] });
    }
  }
  if (out.size > 0)
    logger.info('private hosts granted', { grants: Object.fromEntries([...out].map(([k, v]) => [k, v.addresses])) });
  return out;
}
