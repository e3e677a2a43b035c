// Deployment stamps: how the runner tells a tool definition it deployed from one anybody else wrote.
//
// The store lets every writer PATCH or delete every record (with auth off it cannot even tell writers
// apart), so the runner signs what it deploys. A stamp lives in the definition's own context
// (`context.deployment`) and is an HMAC, under the runner key (runner-key.ts), over the workspace,
// the tool name, the owner, the record id, the store version the record has once the stamp is
// written, and a digest of the rest of the context. Any later write by anyone bumps the store
// version, so a patched definition (source, schemas, permissions, even tags), a rolled-back older
// version, a copy into another record or under another name, and a forged stamp all fail to verify.
//
// Trust of one tool.code.v1 record:
//   stamped   a stamp that verifies: owner = the stamp's owner (`operator` or `agent:<id>`)
//   direct    no stamp and store version 1: written straight into the store and never changed;
//             owner = `agent:<created_by>` (the store's record of the writer; verified with auth on)
//   untrusted anything else, with the reason (changed after it was written, pending, forged, copied)

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../screen/index.js';

/** Context key of the stamp. */
export const DEPLOYMENT_FIELD = 'deployment';
/** Owner of tools deployed from the operator's bootstrap files. */
export const OPERATOR = 'operator';

/** A verified-at-read stamp written by the runner. */
export interface DeploymentStamp {
  v: 1;
  owner: string;
  id: string;
  version: number;
  digest: string;
  at: string;
  sig: string;
}

/** Marks a record created by the runner whose stamp is written next (never runnable by itself). */
export interface PendingStamp {
  pending: true;
  owner: string;
  request_id?: string;
}

export type Trust =
  | { kind: 'stamped'; owner: string }
  | { kind: 'direct'; owner: string }
  /** `pending`: the runner's first write of a deployment, whose stamp follows in the next version. */
  | { kind: 'untrusted'; reason: string; pending?: true };

/** The owner string of an agent (`agent:<id>`); an unknown writer is `agent:(unknown)`. */
export function agentOwner(agentId: string | null | undefined): string {
  return `agent:${agentId === null || agentId === undefined || agentId === '' ? '(unknown)' : agentId}`;
}

/** Digest of a definition's context without its stamp. */
export function definitionDigest(context: Record<string, unknown>): string {
  const { [DEPLOYMENT_FIELD]: _stamp, ...rest } = context;
  return 'sha256:' + createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

/** Signs and checks stamps with one key. */
export interface Stamper {
  stamp(args: {
    workspace: string;
    name: string;
    owner: string;
    id: string;
    version: number;
    context: Record<string, unknown>;
  }): DeploymentStamp;
  pending(owner: string, requestId?: string): PendingStamp;
  /** The trust of a record as read from the store (`/full`). */
  assess(
    record: { id: string; version: number; context: Record<string, unknown>; created_by?: string | null | undefined },
    workspace: string,
  ): Trust;
  /** True when the record carries a stamp that verifies for its current id and version. */
  isStamped(record: { id: string; version: number; context: Record<string, unknown> }, workspace: string): boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Creates the stamper over `key` (from resolveRunnerKey). */
export function createStamper(key: Buffer): Stamper {
  const mac = (fields: {
    workspace: string;
    name: string;
    owner: string;
    id: string;
    version: number;
    digest: string;
    at: string;
  }): string =>
    'hmac-sha256:' +
    createHmac('sha256', key)
      .update(canonicalJson({ v: 1, ...fields }))
      .digest('hex');

  const assess: Stamper['assess'] = (record, workspace) => {
    const { id, version, context } = record;
    const raw = context[DEPLOYMENT_FIELD];
    const name = typeof context['name'] === 'string' ? context['name'] : '';
    if (raw === undefined) {
      if (version === 1) return { kind: 'direct', owner: agentOwner(record.created_by) };
      return {
        kind: 'untrusted',
        reason: `definition ${id} was changed after it was written (store version ${version}) and not through the runner; a tool changes only through a tool.create.request.v1 of its owner with replaces_version`,
      };
    }
    if (!isObject(raw))
      return {
        kind: 'untrusted',
        reason: `definition ${id} has a "${DEPLOYMENT_FIELD}" field that is not a runner stamp`,
      };
    if (raw['pending'] === true)
      return {
        kind: 'untrusted',
        reason: `definition ${id} is being deployed (its stamp is not written yet)`,
        pending: true,
      };
    const { owner, id: stampId, version: stampVersion, digest, at, sig } = raw;
    if (
      raw['v'] !== 1 ||
      typeof owner !== 'string' ||
      typeof stampId !== 'string' ||
      !Number.isInteger(stampVersion) ||
      typeof digest !== 'string' ||
      typeof at !== 'string' ||
      typeof sig !== 'string'
    ) {
      return { kind: 'untrusted', reason: `definition ${id} has a malformed deployment stamp` };
    }
    const expected = Buffer.from(
      mac({ workspace, name, owner, id: stampId, version: stampVersion as number, digest, at }),
    );
    const given = Buffer.from(sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      return {
        kind: 'untrusted',
        reason: `definition ${id} carries a deployment stamp that does not verify with this runner's key (forged or altered, or signed by a runner with another --runner-secret)`,
      };
    }
    if (stampId !== id)
      return {
        kind: 'untrusted',
        reason: `definition ${id} carries the deployment stamp of definition ${stampId}: it was copied, not deployed`,
      };
    if (stampVersion !== version) {
      return {
        kind: 'untrusted',
        reason: `definition ${id} was changed outside the runner after its deployment (deployed as store version ${stampVersion as number}, now version ${version}); only its owner (${owner}) can change it, through tool.create.request.v1`,
      };
    }
    if (digest !== definitionDigest(context))
      return { kind: 'untrusted', reason: `definition ${id} differs from what the runner deployed` };
    return { kind: 'stamped', owner };
  };

  return {
    stamp({ workspace, name, owner, id, version, context }) {
      const fields = {
        workspace,
        name,
        owner,
        id,
        version,
        digest: definitionDigest(context),
        at: new Date().toISOString(),
      };
      return { v: 1, owner, id, version, digest: fields.digest, at: fields.at, sig: mac(fields) };
    },
    pending: (owner, requestId) => ({
      pending: true,
      owner,
      ...(requestId !== undefined ? { request_id: requestId } : {}),
    }),
    assess,
    isStamped: (record, workspace) => assess(record, workspace).kind === 'stamped',
  };
}
