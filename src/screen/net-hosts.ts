// Validation and normalisation of one `permissions.net` entry.
//
// Accepted: a fully qualified host name under an ICANN public suffix, or `*.` + such a name, with
// an optional `:port` (1-65535, kept as written). Normalised to lower-case ASCII (IDNA), no trailing
// dot. Rejected: IP literals in every spelling, localhost and private/special-use names, names under
// suffixes that are not in the public DNS, bare public suffixes (`com`, `co.uk`, `*.com`, and
// wildcards over shared suffixes such as `*.github.io`), schemes, paths, bad labels and lengths.
// Deno's --allow-net checks names, not addresses, so the sandbox relies on this list being names.

import { domainToASCII } from 'node:url';
import { parse as parseDomain } from 'tldts';
import { classifyIp } from './ip.js';
import { IssueCode, quote } from './types.js';

/** The result of checking one entry: the normalised host, or a coded error message. */
export type NetHostCheck = { ok: true; host: string } | { ok: false; code: string; message: string };

// Suffixes that never denote a public Internet host (RFC 6761/6762/8375, ICANN name-collision list, common LAN names).
const PRIVATE_SUFFIXES = [
  'localhost',
  'local',
  'internal',
  'intranet',
  'private',
  'lan',
  'home',
  'home.arpa',
  'corp',
  'localdomain',
  'arpa',
  'test',
  'invalid',
  'example',
  'onion',
  'alt',
];

const LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

/** The RCRT parity message for a private or local host. */
export function blockedMessage(raw: string): string {
  return `Blocked domain: ${raw}. Private/local networks not allowed.`;
}

function fail(code: string, message: string): NetHostCheck {
  return { ok: false, code, message };
}

function ipFailure(raw: string, host: string): NetHostCheck | undefined {
  const ip = classifyIp(host);
  if (ip === 'not-ip') return undefined;
  if (ip === 'private') return fail(IssueCode.NetBlocked, blockedMessage(raw));
  return fail(
    IssueCode.NetBlocked,
    `IP address literals are not allowed in network domains: ${quote(raw)}; declare a host name`,
  );
}

/** Checks one `permissions.net` entry as written by the tool author. */
export function checkNetHost(raw: unknown): NetHostCheck {
  if (typeof raw !== 'string') return fail(IssueCode.NetInvalid, `Network domain must be a string, got ${quote(raw)}`);
  if (raw === '') return fail(IssueCode.NetInvalid, 'Network domain must not be empty');
  if (raw.includes('://') || /[/?#@\\\s]/.test(raw)) {
    return fail(IssueCode.NetInvalid, `Network domain must be a bare host name without scheme or path: ${quote(raw)}`);
  }
  const lower = raw.toLowerCase();
  if (lower.startsWith('[')) {
    const end = lower.indexOf(']');
    return (
      ipFailure(raw, `[${lower.slice(1, end === -1 ? undefined : end)}]`) ??
      fail(IssueCode.NetBlocked, blockedMessage(raw))
    );
  }
  if (lower.split(':').length > 2) return ipFailure(raw, lower) ?? fail(IssueCode.NetBlocked, blockedMessage(raw));

  const colon = lower.lastIndexOf(':');
  let hostPart = colon === -1 ? lower : lower.slice(0, colon);
  const port = colon === -1 ? undefined : lower.slice(colon + 1);
  if (port !== undefined && (!/^[1-9]\d{0,4}$/.test(port) || Number(port) > 65535)) {
    return fail(IssueCode.NetInvalid, `Invalid port in network domain: ${quote(raw)} (must be 1-65535)`);
  }
  if (hostPart.endsWith('.')) hostPart = hostPart.slice(0, -1);
  const wildcard = hostPart.startsWith('*.');
  const base = wildcard ? hostPart.slice(2) : hostPart;
  if (base.includes('*')) {
    return fail(IssueCode.NetInvalid, `Wildcards are only allowed as a leading "*." in network domains: ${quote(raw)}`);
  }
  const ip = ipFailure(raw, base);
  if (ip) return ip;
  if (base === '' || base.split('.').some((label) => label === ''))
    return fail(IssueCode.NetInvalid, `Empty label in network domain: ${quote(raw)}`);

  const ascii = /^[\x00-\x7f]*$/.test(base) ? base : domainToASCII(base);
  if (ascii === '') return fail(IssueCode.NetInvalid, `Invalid host name in network domain: ${quote(raw)}`);
  const labels = ascii.split('.');
  if (labels.some((label) => label.length > 63))
    return fail(IssueCode.NetInvalid, `Label longer than 63 characters in network domain: ${quote(raw)}`);
  if (ascii.length > 253) return fail(IssueCode.NetInvalid, `Network domain longer than 253 characters: ${quote(raw)}`);
  if (!labels.every((label) => LABEL.test(label))) {
    return fail(
      IssueCode.NetInvalid,
      `Invalid host name in network domain: ${quote(raw)} (labels are letters, digits and inner hyphens)`,
    );
  }

  if (PRIVATE_SUFFIXES.some((suffix) => ascii === suffix || ascii.endsWith('.' + suffix))) {
    return fail(IssueCode.NetBlocked, blockedMessage(raw));
  }
  const icann = parseDomain(ascii);
  if (icann.isIcann !== true) return fail(IssueCode.NetBlocked, blockedMessage(raw)); // unknown TLD: only private DNS resolves it
  if (icann.domain === null) {
    return fail(
      IssueCode.NetInvalid,
      `Network domain is a public suffix: ${quote(raw)}; name a registrable domain such as "example.${ascii}"`,
    );
  }
  if (wildcard && parseDomain(ascii, { allowPrivateDomains: true }).domain === null) {
    return fail(IssueCode.NetInvalid, `Wildcard network domain covers a shared public suffix: ${quote(raw)}`);
  }
  return { ok: true, host: (wildcard ? '*.' : '') + ascii + (port === undefined ? '' : ':' + port) };
}
