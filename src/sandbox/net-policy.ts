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

/** One operator-granted private `host:port` with the addresses its host resolved to at start-up. */
export interface PrivateGrant {
  /** As written in --allow-private-hosts, lower case: "localhost:11434", "127.0.0.1:9222", "[::1]:9222". */
  entry: string;
  /** IPv4 dotted quads and IPv6 addresses (without brackets) the host name resolves to. */
  addresses: readonly string[];
}

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function intToIpv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** The CIDRs covering `base/prefix` minus the single address `hole` (which must lie inside it). */
function carve(base: number, prefix: number, hole: number): string[] {
  const out: string[] = [];
  for (let bits = prefix + 1; bits <= 32; bits++) {
    // at each level, keep the half that does NOT contain the hole
    const size = 2 ** (32 - bits);
    const holeBlock = Math.floor(hole / size) * size;
    const sibling = holeBlock ^ size;
    out.push(`${intToIpv4(sibling >>> 0)}/${bits}`);
  }
  return out.filter((cidr) => {
    const [ip, bits] = cidr.split('/') as [string, string];
    const start = ipv4ToInt(ip);
    return start >= base && start < base + 2 ** (32 - prefix) && Number(bits) > prefix;
  });
}

function portOf(entry: string): number {
  return Number(entry.slice(entry.lastIndexOf(':') + 1));
}

/**
 * The `--deny-net` list of a process with operator-granted private hosts (docs/sandbox.md "Private
 * hosts"). Deno checks a deny entry after DNS resolution and lets it win over any allow entry, so the
 * private ranges are kept, minus exactly the granted addresses (an IPv4 /8 becomes the 24 CIDRs around
 * one address; `[::1]` is dropped when granted). Then every OTHER port of the process's allow list is
 * denied on each granted address by an `address:port` entry (also checked after resolution), so a
 * public name that resolves to a granted address reaches nothing, and only the granted host:port pairs
 * get through. Without grants this is DENY_NET unchanged.
 */
export function denyNetFor(allowed: readonly string[], grants: readonly PrivateGrant[]): string[] {
  if (grants.length === 0) return [...DENY_NET];
  let ranges = DENY_NET.filter((entry) => !entry.startsWith('['));
  let v6 = DENY_NET.filter((entry) => entry.startsWith('['));
  const allowedPairs = new Set<string>();
  for (const grant of grants) {
    for (const address of grant.addresses) {
      allowedPairs.add(`${address}|${portOf(grant.entry)}`);
      if (address.includes(':')) {
        v6 = v6.filter((entry) => entry !== `[${address}]`);
        continue;
      }
      const hole = ipv4ToInt(address);
      ranges = ranges.flatMap((cidr) => {
        const [ip, bits] = cidr.split('/') as [string, string];
        const prefix = Number(bits);
        const base = ipv4ToInt(ip);
        if (hole < base || hole >= base + 2 ** (32 - prefix)) return [cidr];
        return carve(base, prefix, hole);
      });
    }
  }
  const ports = [...new Set([...allowed, ...grants.map((g) => g.entry)].map(portOf))].sort((a, b) => a - b);
  const pairs: string[] = [];
  const addresses = [...new Set(grants.flatMap((g) => g.addresses))];
  for (const address of addresses) {
    for (const port of ports) {
      if (allowedPairs.has(`${address}|${port}`)) continue;
      pairs.push(address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`);
    }
  }
  return [...ranges, ...v6, ...pairs];
}
