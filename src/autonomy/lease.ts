// One live holder across replicas (docs/autonomy.md): each continuous tool and the scheduler hold a
// lease — a claim (src/request/claims.ts) on a name of their own, under a tag intake never scans. The
// holder renews it every third of the lease; a renewal that fails (the store says it is someone
// else's, or it cannot be renewed before it runs out) aborts the holder's work, so it never goes on
// beside a new holder. When the holder dies, its lease runs out and another replica takes over within
// one lease; a holder that stops gives the lease back so another takes over at once.

import { setTimeout as sleep } from 'node:timers/promises';
import type { ExtensionContext } from '../extension.js';
import type { Logger } from '../logger.js';
import { createClaimManager, type ClaimManager, type ClaimTarget } from '../request/claims.js';

/** The claim manager of the runner's leases (its own tag: intake's takeover scan never lists them). */
export function createLeaseClaims(context: ExtensionContext, leaseMs: number): ClaimManager {
  return createClaimManager({
    client: context.client,
    workspace: `lease:${context.config.workspace}`,
    holder: context.replica,
    ttlMs: leaseMs,
    keys: context.keys,
    logger: context.logger.child({ component: 'lease' }),
  });
}

/**
 * Runs `lead` whenever this replica holds the lease on `target`, until `stop` aborts: `lead`'s signal
 * aborts when the lease is lost or `stop` aborts. `onStandby` says who holds it meanwhile.
 */
export async function whileLeased(
  options: {
    claims: ClaimManager;
    /** What the lease is on: a continuous tool (`continuous-<tool>`) or the scheduler. */
    target: ClaimTarget;
    leaseMs: number;
    stop: AbortSignal;
    log: Logger;
    onStandby?: (holder?: string) => void;
  },
  lead: (signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const { claims, target, leaseMs, stop, log } = options;
  const name = target.rid;
  const period = Math.max(250, Math.floor(leaseMs / 3));
  while (!stop.aborted) {
    const got = await claims.acquire(target).catch((error: unknown) => {
      if (!stop.aborted) log.warn('lease acquire failed', { error });
      return undefined;
    });
    if (got?.kind !== 'acquired') {
      options.onStandby?.(got?.kind === 'busy' ? got.holder : undefined);
      await sleep(period, undefined, { signal: stop }).catch(() => undefined);
      continue;
    }
    log.info('lease acquired', { lease: name, attempt: got.claim.attempt });
    const claim = got.claim;
    const lost = new AbortController();
    let lastRenewed = Date.now();
    const renewal = setInterval(() => {
      claim
        .renew()
        .then((ok) => {
          if (ok) lastRenewed = Date.now();
          else lost.abort(new Error('lease answered elsewhere'));
        })
        .catch((error: unknown) => {
          log.warn('lease renewal failed', { lease: name, error });
          // Stop before the lease can run out under us: never two live holders.
          if (Date.now() - lastRenewed > (leaseMs * 2) / 3) lost.abort(new Error('lease could not be renewed'));
        });
    }, period);
    try {
      await lead(AbortSignal.any([stop, lost.signal]));
    } finally {
      clearInterval(renewal);
      if (lost.signal.aborted) log.warn('lease lost; stopped', { lease: name, reason: String(lost.signal.reason) });
      // A lease that cannot be given back (store gone at shutdown) runs out by itself within one lease.
      await claim
        .release()
        .catch((error: unknown) => log[stop.aborted ? 'info' : 'warn']('lease release failed', { lease: name, error }));
      options.onStandby?.();
    }
  }
}
