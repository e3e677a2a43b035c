// What the exports read of a catalog entry's side effect: its canonical contract (src/contract,
// `contract.side_effect` / `contract.idempotent` of the tool), mapped by the one side-effect
// crosswalk (`sideEffectPolicy` in src/contract/contract.ts). No contract, or one that does not validate
// (parseContract), is unknown: exported fail-closed (readOnly F / destructive T / idempotent F / openWorld T).

import {
  contractOrUnknown,
  sideEffectPolicy,
  type SideEffect,
  type SideEffectPolicy,
  type ToolContract,
} from '../contract/contract.js';

/** A catalog entry's contract, validated; `{}` (unknown) when absent or invalid. */
export function contractOf(entry: Record<string, unknown>): ToolContract {
  return contractOrUnknown(entry['contract']);
}

/** The side-effect class a catalog entry's contract declares, or undefined (unknown). */
export function sideEffectOf(entry: Record<string, unknown>): SideEffect | undefined {
  return contractOf(entry).side_effect;
}

/** The crosswalk row of a catalog entry (its contract's class, idempotency and open-world facts). */
export function policyOf(entry: Record<string, unknown>): SideEffectPolicy {
  const contract = contractOf(entry);
  const facts: { idempotent?: boolean; openWorld?: boolean } = {};
  if (contract.idempotent !== undefined) facts.idempotent = contract.idempotent;
  if (typeof entry['openWorld'] === 'boolean') facts.openWorld = entry['openWorld'];
  return sideEffectPolicy(contract.side_effect, facts);
}
