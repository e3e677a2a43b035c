// Network policy of a sandbox process: defensive re-validation of a tool's host list and the
// `--allow-net` / `--deny-net` values built from it (docs/sandbox.md §1.4).
//
// Deno's --allow-net matches host NAMES, not the addresses they resolve to; --deny-net with IPv4
// CIDRs is checked after DNS resolution and at every redirect hop. So names are restricted to plain
// public hostnames here, and the private-range deny list is ALWAYS passed, whatever the allow list.

import { parse as parseDomain } from 'tldts';
import { ErrorCode, RunnerError } from '../errors.js';

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

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const PRIVATE_SUFFIXES = [
  'localhost', 'local', 'localdomain', 'internal', 'intranet', 'lan', 'home', 'corp', 'private',
  'home.arpa', 'in-addr.arpa', 'ip6.arpa', 'test', 'invalid', 'example',
];

function refuse(host: string, why: string): never {
  throw new RunnerError(ErrorCode.PermissionDenied, `net host ${JSON.stringify(host)} is not allowed: ${why}`);
}

/** Validates one entry ("api.example.com", "*.example.com", "host:8443") and returns it normalised with a port. */
export function normaliseNetHost(entry: string): string {
  if (typeof entry !== 'string' || entry.length === 0 || entry.length > 260) refuse(String(entry), 'expected a hostname');
  if (entry.startsWith('[') || entry.includes('::')) refuse(entry, 'IP literals are refused');
  const colon = entry.lastIndexOf(':');
  let name = entry;
  let port = 443;
  if (colon !== -1) {
    const text = entry.slice(colon + 1);
    if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65535) refuse(entry, 'the port must be 1-65535');
    port = Number(text);
    name = entry.slice(0, colon);
  }
  name = name.toLowerCase();
  const wildcard = name.startsWith('*.');
  const base = wildcard ? name.slice(2) : name;
  const labels = base.split('.');
  if (labels.some((label) => label.length === 0)) refuse(entry, 'empty label');
  if (!labels.every((label) => LABEL.test(label))) refuse(entry, 'only letters, digits and "-" are allowed in a hostname label');
  for (const suffix of PRIVATE_SUFFIXES) {
    if (base === suffix || base.endsWith('.' + suffix)) refuse(entry, `the ".${suffix}" names are private`);
  }
  if (/^\d+$/.test(labels[labels.length - 1] as string)) refuse(entry, 'IP literals are refused');
  if (labels.length < 2) refuse(entry, 'a fully qualified domain name is required');
  const parsed = parseDomain(base, { allowPrivateDomains: true });
  if (parsed.isIp) refuse(entry, 'IP literals are refused');
  if (!parsed.domain || !parsed.publicSuffix) refuse(entry, 'not a registrable domain name (a public suffix?)');
  if (!parsed.isIcann && !parsed.isPrivate) refuse(entry, `unknown top-level domain ".${parsed.publicSuffix}" (internal names are refused)`);
  return `${wildcard ? '*.' : ''}${base}:${port}`;
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
