// How soon V8 optimises the service's code. V8 moves a function from its interpreter and baseline
// tiers to optimised (TurboFan) code after the function has run a few "ticks", each tick a fixed
// budget of interpreted bytecode (`--interrupt-budget`, 66 KB in Node 20's V8). A runner's per-call
// path is many medium-sized functions run once or twice per call, so at the default budget they
// reach TurboFan only after ~1,000–2,000 calls: a fresh runner spends its first few thousand calls
// in unoptimised code (bench/journal/2026-11-rounds.md, "JIT and shapes"). A sixteenth of the budget optimises
// the same functions sixteen times sooner.
//
// It is set once the service is ready, not at start: start-up runs much code once (screening the
// catalog, compiling schemas), and with the small budget V8 optimised that too (+1.1 s of CPU and
// +0.6 s until ready, measured). V8 reads the flag whenever it renews a function's budget, so code
// that ran during start-up gets the small budget at its next tick. Measured in bench/journal/2026-11-rounds.md
// ("How soon V8 optimises the service"). An `--interrupt-budget` given to Node itself
// (`node --interrupt-budget=N dist/cli/main.js start`) wins.

import v8 from 'node:v8';

/** The budget the service runs with once ready: 1/16 of V8 11.3's default (67,584 bytes). */
export const INTERRUPT_BUDGET = 4224;

/** The V8 flags to set for a process started with `execArgv`: none when Node was given its own budget. */
export function tieringFlags(execArgv: readonly string[]): string[] {
  if (execArgv.some((arg) => /^--interrupt[-_]budget(=|$)/.test(arg))) return [];
  return [`--interrupt-budget=${INTERRUPT_BUDGET}`];
}

/** Sets the tiering flags of this process (the service and the store call it once they serve). */
export function applyTieringFlags(execArgv: readonly string[] = process.execArgv): void {
  for (const flag of tieringFlags(execArgv)) v8.setFlagsFromString(flag);
}
