// Capability policy of host tools (Runloop policy.caps semantics).
//
// A capability is `family` or `family:target` (`net:api.mail.io`). A tool is exposed only when
// every capability it needs is granted: a bare family grant (`net`) covers the family and every
// `family:*`; a scoped grant (`net:api.mail.io`) covers exactly that target (hosts compare case-
// insensitively, trailing dot ignored). Unknown families are never granted.
//
// Besides what a Runloop tool declares, its transport implies a need: an http tool needs
// `net:<url host>`, an exec tool needs `exec`, so a bundle cannot reach a host or run a program the
// operator did not grant. agentcli manifests have no capability model: the operator listing the
// manifest is the grant, and their tools need nothing.

import { blake3 } from '@noble/hashes/blake3';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import { CAPABILITY_FAMILIES, type HostToolFormat, type HostTransport } from './types.js';

const FAMILIES: ReadonlySet<string> = new Set(CAPABILITY_FAMILIES);

/** A capability that a tool needs and the grants do not cover, with the reason in words. */
export interface MissingCapability {
  cap: string;
  reason: string;
}

function split(cap: string): { family: string; target: string | undefined } {
  const colon = cap.indexOf(':');
  return colon === -1
    ? { family: cap, target: undefined }
    : { family: cap.slice(0, colon), target: cap.slice(colon + 1) };
}

function sameTarget(family: string, a: string, b: string): boolean {
  if (family !== 'net') return a === b;
  const norm = (host: string) => host.toLowerCase().replace(/\.$/, '');
  return norm(a) === norm(b);
}

/** Whether `cap` is covered by `grants`. */
export function isCapabilityGranted(cap: string, grants: readonly string[]): boolean {
  const need = split(cap.trim());
  if (!FAMILIES.has(need.family)) return false;
  return grants.some((grant) => {
    const have = split(grant.trim());
    if (have.family !== need.family) return false;
    if (have.target === undefined) return true;
    return need.target !== undefined && sameTarget(need.family, have.target, need.target);
  });
}

/** The capabilities of `required` that `grants` leave uncovered. */
export function missingCapabilities(required: readonly string[], grants: readonly string[]): MissingCapability[] {
  const missing: MissingCapability[] = [];
  for (const cap of required) {
    if (isCapabilityGranted(cap, grants)) continue;
    const { family } = split(cap.trim());
    const reason = FAMILIES.has(family)
      ? `capability ${JSON.stringify(cap)} not granted`
      : `capability ${JSON.stringify(cap)} has unknown family ${JSON.stringify(family)} (known: ${CAPABILITY_FAMILIES.join(', ')})`;
    missing.push({ cap, reason });
  }
  return missing;
}

/** Capabilities a transport needs on its own (Runloop tools only; see the module comment). */
export function impliedCapabilities(transport: HostTransport, format: HostToolFormat): string[] {
  if (format !== 'runloop' || transport.kind === 'rap') return [];
  if (transport.kind === 'exec') return ['exec'];
  return [`net:${new URL(transport.url.replace(/\{[^{}]*\}/g, 'x')).hostname}`];
}

/** Declared plus implied capabilities, de-duplicated (net hosts case-insensitively), declared order first. */
export function effectiveCapabilities(declared: readonly string[], implied: readonly string[]): string[] {
  const key = (cap: string): string => {
    const { family, target } = split(cap.trim());
    if (target === undefined) return family;
    return family === 'net' ? `net:${target.toLowerCase().replace(/\.$/, '')}` : `${family}:${target}`;
  };
  const seen = new Set<string>();
  const out: string[] = [];
  for (const cap of [...declared, ...implied]) {
    if (seen.has(key(cap))) continue;
    seen.add(key(cap));
    out.push(cap);
  }
  return out;
}

/** A record shaped like Runloop's cap.audit (agent, cap, op, target, args_hash, decision, severity, reason). */
export interface CapAuditRecord {
  agent: string;
  cap: string;
  op: string;
  target: string;
  args_hash: string;
  decision: 'allow' | 'deny';
  severity: 'info' | 'warn' | 'error';
  reason: string;
}

/** BLAKE3 hex of the canonical JSON of `args` (the cap.audit `args_hash`). */
export function argsHash(args: unknown): string {
  return bytesToHex(blake3(utf8ToBytes(JSON.stringify(args ?? {}))));
}

/** Builds a cap.audit-shaped denial record for the log. */
export function capDenial(cap: string, op: string, target: string, args: unknown, reason: string): CapAuditRecord {
  return {
    agent: 'tools-runner',
    cap,
    op,
    target,
    args_hash: argsHash(args),
    decision: 'deny',
    severity: 'warn',
    reason,
  };
}
