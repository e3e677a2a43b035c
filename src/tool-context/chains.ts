// What one causal chain of subscription triggers may write (docs/autonomy.md "Subscriptions"). A
// chain starts at the breadcrumb that first triggered a subscription (its seed); every run it
// causes — triggered runs and their nested calls — carries the seed in its sealed origin, and each
// record such a run creates through `context.api` carries the mark `created-by:chain:<seed>`, so a
// trigger by that record continues the same chain. Depth bounds the links of a chain, not its
// fan-out: this ledger counts the records each chain's runs created on this replica and refuses
// the one past `subscriptionChainMaxRecords` (`rate.exceeded`). A refused record triggers nothing,
// so the runs a chain causes are bounded too. Chains are kept least-recently-used (MAX_CHAINS).

import { BoundedMap } from '../bounded.js';
import { ErrorCode, RunnerError } from '../errors.js';

const MAX_CHAINS = 10_000;

/** The per-replica count of records written by each chain's runs. */
export interface ChainLedger {
  /** Counts one record of `seed`'s chain written by `tool`, or throws `rate.exceeded` past the limit. */
  charge(seed: string, tool: string): void;
}

/** A ledger allowing `maxRecords` records per chain. */
export function createChainLedger(maxRecords: number): ChainLedger {
  const written = new BoundedMap<string, number>(MAX_CHAINS);
  return {
    charge(seed, tool) {
      const count = written.touch(seed) ?? 0;
      if (count >= maxRecords)
        throw new RunnerError(
          ErrorCode.RateExceeded,
          `the chain of triggered runs started by breadcrumb "${seed}" has written ${count} records on this replica, the limit (subscriptionChainMaxRecords ${maxRecords}); tool "${tool}" may create no more records for it`,
        );
      written.set(seed, count + 1);
    },
  };
}
