// What the exports read of a catalog entry's side effect: its canonical contract (src/contract,
// `contract.side_effect` / `contract.idempotent` of the tool), mapped by the one side-effect
// crosswalk (`sideEffectPolicy` in src/contract/contract.ts). No contract, or a class we do not know, is
// unknown: exported fail-closed (readOnly F / destructive T / idempotent F / openWorld T).

import { SIDE_EFFECTS, sideEffectPolicy, type SideEffect, type SideEffectPolicy } from '../contract/contract.js';

/** The side-effect class a catalog entry's contract declares, or undefined (unknown). */
export function sideEffectOf(entry: Record<string, unknown>): SideEffect | undefined {
  const contract = entry['contract'];
  const value = typeof contract === 'object' && contract !== null ? (contract as Record<string, unknown>)['side_effect'] : undefined;
  return typeof value === 'string' && (SIDE_EFFECTS as readonly string[]).includes(value) ? (value as SideEffect) : undefined;
}

/** The crosswalk row of a catalog entry (its contract's class, idempotency and open-world facts). */
export function policyOf(entry: Record<string, unknown>): SideEffectPolicy {
  const contract = entry['contract'];
  const facts: { idempotent?: boolean; openWorld?: boolean } = {};
  if (typeof contract === 'object' && contract !== null) {
    const idempotent = (contract as Record<string, unknown>)['idempotent'];
    if (typeof idempotent === 'boolean') facts.idempotent = idempotent;
  }
  if (typeof entry['openWorld'] === 'boolean') facts.openWorld = entry['openWorld'];
  return sideEffectPolicy(sideEffectOf(entry), facts);
}
