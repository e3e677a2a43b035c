// Is the network reachable for examples marked `requires_network: true`? Checked once per target,
// up front, before any example runs: a TCP connect (DNS included) with a short timeout. The target
// is the operator's `--network-probe host:port`, else the tool's first declared host on port 443
// (the host the example will really use). Offline, those examples are skipped with the reason
// instead of failing on a DNS error, so `npm test` passes on a machine without internet.

import { connect } from 'node:net';
import type { ToolDefinition } from '../screen/index.js';

/** The probe's default timeout: long enough for a slow DNS answer, short enough not to stall a test run. */
export const NETWORK_PROBE_TIMEOUT_MS = 1_500;

export interface NetworkStatus {
  reachable: boolean;
  /** Why not (host, port and the error), when unreachable. */
  reason?: string;
}

/** `host:port` → [host, port]; IPv6 literals in brackets. */
function splitTarget(target: string): [string, number] {
  const cut = target.lastIndexOf(':');
  const host = target.slice(0, cut).replace(/^\[(.*)\]$/, '$1');
  return [host, Number(target.slice(cut + 1))];
}

/** Why a `net: true` tool's examples are not run when no --network-probe says the network is up. */
export const ANY_HOST_UNPROBED =
  'net: true tool: its examples reach public hosts it does not name; pass --network-probe host:port to run them when that host is reachable';

type Probed = Pick<ToolDefinition, 'net' | 'privateNet'> & Partial<Pick<ToolDefinition, 'extraPermissions'>>;
const anyHost = (tool: Probed): boolean => tool.extraPermissions?.includes('net') === true;

/** The probe target of a tool with network examples, or undefined when it declares no host. */
export function probeTarget(tool: Probed, override: string | undefined): string | undefined {
  if (override) return override;
  // a tool that only reaches operator-granted private hosts is probed at the first of them
  const first = tool.net[0] ?? tool.privateNet?.[0];
  if (first === undefined) return undefined;
  const host = first.replace(/^\*\./, '');
  return /:\d+$/.test(host) && !host.endsWith(']') ? host : `${host}:443`;
}

/** One TCP connect to `target` within `timeoutMs`; never throws. */
export function probe(target: string, timeoutMs = NETWORK_PROBE_TIMEOUT_MS): Promise<NetworkStatus> {
  const [host, port] = splitTarget(target);
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const finish = (status: NetworkStatus): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(status);
    };
    const timer = setTimeout(
      () =>
        finish({
          reachable: false,
          reason: `network unreachable: no TCP connection to ${target} within ${timeoutMs} ms`,
        }),
      timeoutMs,
    );
    socket.once('connect', () => finish({ reachable: true }));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      finish({ reachable: false, reason: `network unreachable: ${target}: ${error.code ?? error.message}` }),
    );
  });
}

/**
 * Probes, in parallel and once each, the targets of every tool that has an example marked
 * `requires_network`; returns the status of a tool by its probe target.
 */
export async function checkNetwork(
  tools: ReadonlyArray<Probed & Pick<ToolDefinition, 'examples'>>,
  override: string | undefined,
  timeoutMs = NETWORK_PROBE_TIMEOUT_MS,
): Promise<(tool: Probed) => NetworkStatus> {
  const targets = new Set<string>();
  for (const tool of tools) {
    if (!anyHost(tool) && !tool.examples.some((example) => example.requiresNetwork)) continue;
    const target = probeTarget(tool, override);
    if (target) targets.add(target);
  }
  const results = new Map(
    await Promise.all([...targets].map(async (target) => [target, await probe(target, timeoutMs)] as const)),
  );
  return (tool) => {
    const target = probeTarget(tool, override);
    if (!target && anyHost(tool)) return { reachable: false, reason: ANY_HOST_UNPROBED };
    if (target === undefined && tool.net.length === 0) {
      // no host at all: its network examples can only reach a private host the operator did not grant
      return {
        reachable: false,
        reason: 'the tool has no network host (a private host must be granted with --allow-private-hosts)',
      };
    }
    return (target && results.get(target)) || { reachable: true };
  };
}
