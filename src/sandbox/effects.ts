// The effects of one call, recorded as they happen at the host boundary: context.api writes the host
// performs (api-proxy.ts) and network effect frames the trusted harness sends before a connection
// is made (run-job.ts). Every ending of the call (result, error, timeout, kill, crash) carries the
// list, so a call killed while it hangs still says what it did.
//
// The list is capped (MAX_EFFECTS entries; the rest are only counted). Targets are untrusted text
// from the tool: control characters are stripped, the tool's secret values redacted, length capped.

import type { Effect } from '../result.js';
import { cutUtf8, redactSecrets, stripControl } from './sanitise.js';

/** Most effects listed per call; later ones are counted in `dropped`. */
export const MAX_EFFECTS = 200;
/** Longest effect target kept. */
const MAX_TARGET_BYTES = 300;

/** Kinds a harness effect frame may name (store writes are only ever recorded by the host itself). */
export const NET_EFFECT_KINDS: ReadonlySet<string> = new Set(['net.fetch', 'net.connect']);

/** The effect log of one call. */
export interface EffectLog {
  /** Records an effect that begins now; returns the entry (its target may be filled in later). */
  add(kind: Effect['kind'], target: string): Effect;
  /** Removes an entry that turned out to be no effect (the write was refused before it was made). */
  drop(entry: Effect): void;
  /** Sets the target of an entry once known (a created record's id). */
  settle(entry: Effect, target: string): void;
  /** A copy of the list and the number of effects beyond it. */
  snapshot(): { effects: Effect[]; dropped: number };
}

/** Creates the log; `startedAt` is the call's performance.now() origin, `secrets` its secret values. */
export function createEffectLog(startedAt: number, secrets: readonly string[]): EffectLog {
  const list: Effect[] = [];
  let dropped = 0;
  const clean = (target: string): string => cutUtf8(redactSecrets(stripControl(target), secrets), MAX_TARGET_BYTES);
  return {
    add(kind, target) {
      const entry: Effect = { kind, target: clean(target), at_ms: Math.round(performance.now() - startedAt) };
      if (list.length < MAX_EFFECTS) list.push(entry);
      else dropped++;
      return entry;
    },
    drop(entry) {
      const at = list.indexOf(entry);
      if (at !== -1) list.splice(at, 1);
      else if (dropped > 0) dropped--;
    },
    settle(entry, target) {
      entry.target = clean(target);
    },
    snapshot: () => ({ effects: list.map((e) => ({ ...e })), dropped }),
  };
}
