// Lease renewal, in one place: every claim this replica holds is renewed by one timer (as bullmq's
// LockManager renews the locks of its active jobs), every third of the claim TTL, until the job that
// holds it lets go. A renewal that fails is logged and tried again on the next tick; one that finds
// the request answered elsewhere stops renewing that claim.

import type { Logger } from '../logger.js';
import type { HeldClaim } from './claims.js';

export interface LeaseKeeper {
  /** Renews `claim` until the returned function is called (the job's `finally`). */
  keep(claim: HeldClaim, logger: Logger): () => void;
  /** Claims being renewed now. */
  size(): number;
}

/** Creates the keeper of one replica's leases (`ttlMs`: the claim TTL). */
export function createLeaseKeeper(options: { ttlMs: number }): LeaseKeeper {
  const everyMs = Math.max(250, Math.floor(options.ttlMs / 3));
  const held = new Map<HeldClaim, { logger: Logger; renewing: boolean }>();
  let timer: NodeJS.Timeout | undefined;

  const tick = (): void => {
    for (const [claim, entry] of held) {
      if (entry.renewing) continue; // the previous renewal of this claim is still on its way
      entry.renewing = true;
      claim
        .renew()
        .then((alive) => {
          if (!alive) held.delete(claim);
        })
        .catch((error: unknown) => entry.logger.warn('claim renewal failed', { error }))
        .finally(() => {
          entry.renewing = false;
        });
    }
  };

  return {
    keep(claim, logger) {
      held.set(claim, { logger, renewing: false });
      timer ??= setInterval(tick, everyMs);
      return () => {
        held.delete(claim);
        if (held.size === 0 && timer !== undefined) {
          clearInterval(timer);
          timer = undefined;
        }
      };
    },
    size: () => held.size,
  };
}
