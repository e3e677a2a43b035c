// Network policy of a sandbox process: defensive re-validation of a tool's host list and the
// `--allow-net` / `--deny-net` values built from it (docs/sandbox.md "Egress hardening for production").
//
// Deno's --allow-net matches host NAMES, not the addresses they resolve to; --deny-net with IPv4
// CIDRs is checked after DNS resolution and at every redirect hop. So names are restricted to plain
// public hostnames here, and the private-range deny list is ALWAYS passed, whatever the allow list.

import { ErrorCode, RunnerError } from '../errors.js';
import { checkNetHost } from '../screen/index.js';

/** Private, loopback, link-local, CGNAT, multicast and reserved ranges refused after DNS resolution. */
export const DENY_NET: readonly string[] = Object.freeze([
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '[::]',
  '[::1]',
]);

function refuse(host: string, why: string): never {
  throw new RunnerError(ErrorCode.PermissionDenied, `net host ${JSON.stringify(host)} is not allowed: ${why}`);
}

/**
 * Validates one entry ("api.example.com", "*.example.com", "host:8443") with the same host policy
 * tool definitions are validated by (src/screen), and returns it with its port pinned (443 unless
 * one is named) — the sandbox must not trust that its caller validated.
 */
export function normaliseNetHost(entry: string): string {
  const check = checkNetHost(entry);
  if (!check.ok) refuse(String(entry), check.message);
  const colon = check.host.lastIndexOf(':');
  return colon === -1 ? `${check.host}:443` : check.host;
}

/** Re-validates a tool's host list; throws RunnerError(permission.denied) naming the offending entry. */
export function validateNetHosts(hosts: readonly string[]): string[] {
  if (!Array.isArray(hosts)) refuse(String(hosts), 'the host list must be an array');
  const out: string[] = [];
  for (const host of hosts) {
    const normal = normaliseNetHost(host);
    if (!out.includes(normal)) out.push(normal);
  }
  return out.sort();
}
