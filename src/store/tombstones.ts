// Tombstones of requests removed by retention: a caller asking for a swept request by id learns it
// expired (410 `expired`, with when) instead of a 404 it cannot tell from "never existed" — and
// polling for its answer, that the answer will never come rather than "not yet". One small row
// (id, owner, reason, time) per removed request, pruned with the Idempotency-Keys (twice the
// retention). Both backends keep them in a `removed_requests` table.

import { HttpError } from './http-util.js';

/** Schemas whose retention removal leaves a tombstone (the records a caller polls about). */
const TOMBSTONED: ReadonlySet<string> = new Set(['tool.request.v1', 'tool.create.request.v1']);

/** Whether removing a record of `schema` for `reason` leaves a tombstone. */
export function leavesTombstone(schema: string | null, reason: string | undefined): boolean {
  return reason === 'retention' && schema !== null && TOMBSTONED.has(schema);
}

/** A tombstone as stored. */
export interface Tombstone {
  owner_id: string;
  reason: string;
  removed_at: string;
}

/** The 410 for a read of a removed record (`undefined` when there is none, or it is another owner's for a scoped reader). */
export function expired(
  id: string,
  tomb: Tombstone | undefined,
  actor: { scoped: boolean; ownerId: string },
): HttpError | undefined {
  if (!tomb || (actor.scoped && tomb.owner_id !== actor.ownerId)) return undefined;
  return new HttpError(
    410,
    'expired',
    `breadcrumb "${id}" expired: removed by ${tomb.reason} at ${tomb.removed_at} (its answer, if any, went with it)`,
    { reason: tomb.reason, removed_at: tomb.removed_at },
  );
}
