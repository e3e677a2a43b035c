// Schema patterns on a linear-time regular-expression engine, under a work budget.
//
// Tool schemas are written by agents, and their `pattern`s / `patternProperties` run inside the Node
// service on every request (inputs are validated before the sandbox, results after it). A
// backtracking engine can take exponential time (`^(.*){16}x$` blocked the event loop ~60 s on 18
// characters), and no static check can tell every such pattern apart. So ajv is given this engine
// instead of `RegExp`: RE2 semantics (re2js, a pure-JS port of RE2 — the native `re2` binding needs a
// compiler and Node >= 22), which matches in time linear in the input and never backtracks.
//
// Linear is not yet cheap: RE2's worst case is (input length x program size) steps, up to ~250 ns
// each here (a cold lazy DFA building a new state per character). Every validation therefore gets a
// budget of such steps (`budget`, charged before each test as `(length + 1) x (programSize + 16)`,
// the 16 standing for the per-character overhead); a validation that would exceed it fails with a
// message naming the pattern instead of running. A pattern must be valid ECMA-262 (`u` mode, what JSON Schema means) AND
// compile on RE2: back-references and lookaround do not, and are definition errors. RE2 keeps a lazy
// DFA per pattern (up to ~8 MB of states); it is dropped after each validation so that memory stays
// bounded however many schemas are cached.
//
// States of an engine: idle (no budget open) or running (inside `run`, with `remaining` steps and the
// set of patterns used so far, released when `run` ends). A test outside `run` opens its own run.

import { RE2JS } from 're2js';
import { quote } from './types.js';

/** Longest pattern source accepted in a schema. */
export const MAX_PATTERN_LENGTH = 1000;
/** Largest RE2 program (instructions) one pattern may compile to. */
export const MAX_PROGRAM_SIZE = 2000;
/** Default regex work budget of one validation, in (character x instruction) steps (~40 ms worst case measured in plain Node, ~100 ms under vitest on a loaded 2-core VM). */
export const DEFAULT_REGEX_BUDGET = 150_000;
/** Steps charged per character on top of the program size. */
export const PER_CHARACTER_STEPS = 16;

/** The outcome of checking one schema pattern: its RE2 program size, or why it cannot be used. */
export type PatternCheck = { ok: true; programSize: number } | { ok: false; reason: string };

/** A compiled pattern: the ajv-facing `test`, charged against the engine's budget. */
export interface SafePattern {
  readonly source: string;
  readonly programSize: number;
  test(text: string): boolean;
  toString(): string;
}

/** Thrown by `SafePattern.test` when a validation would exceed its work budget. */
export class RegexBudgetError extends Error {
  constructor(
    readonly pattern: string,
    readonly length: number,
    readonly budget: number,
  ) {
    super(
      `checking a string of ${length} characters against pattern ${quote(pattern)} would exceed the regex work budget of ${budget} steps for one validation (cost: length x pattern size); send shorter strings or use a simpler pattern`,
    );
    this.name = 'RegexBudgetError';
  }
}

/** The ajv `code.regExp` engine plus the budget scope that validations run in. */
export interface PatternEngine {
  /** For ajv's `code.regExp` option; throws (with the reason) for a pattern that cannot be used. */
  readonly regExp: ((pattern: string, flags: string) => SafePattern) & { code: string };
  /** Runs `fn` (one validation) with a fresh budget and releases the patterns' caches afterwards. */
  run<T>(fn: () => T): T;
}

const UNSUPPORTED =
  'is not supported by the linear-time regex engine (RE2: no back-references, lookahead or lookbehind)';

interface Compiled {
  re: RE2JS;
  programSize: number;
}

function compileRe2(source: string): Compiled | { reason: string } {
  if (source.length > MAX_PATTERN_LENGTH)
    return { reason: `is ${source.length} characters long; at most ${MAX_PATTERN_LENGTH} are allowed` };
  try {
    // Syntax must be ECMA-262 (what JSON Schema specifies); RegExp only parses here, it never runs.
    new RegExp(source, 'u');
  } catch (err) {
    return { reason: `is not a valid regular expression: ${(err as Error).message}` };
  }
  // In `u` mode a `\k` or `\1`..`\9` that parsed is a back-reference; the RE2 translation would
  // silently turn some of them into literals, so they are refused here, by name.
  const backReference = /\\(?:k<[^>]*>|[1-9]\d*)/.exec(source.replace(/\\\\/g, '  '));
  if (backReference) return { reason: `${UNSUPPORTED}: back-reference ${quote(backReference[0])}` };
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(source));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { reason: `${UNSUPPORTED}: ${why}` };
  }
  const programSize = re.programSize();
  if (programSize > MAX_PROGRAM_SIZE) {
    return {
      reason: `compiles to ${programSize} instructions; at most ${MAX_PROGRAM_SIZE} are allowed (shrink counted repetitions like {0,1000})`,
    };
  }
  return { re, programSize };
}

/** Checks that `source` can be used as a schema pattern; the reason reads after `Pattern "<source>" `. */
export function checkSchemaPattern(source: string): PatternCheck {
  const compiled = compileRe2(source);
  return 'reason' in compiled
    ? { ok: false, reason: compiled.reason }
    : { ok: true, programSize: compiled.programSize };
}

/** Drops the lazy DFA RE2 keeps per program (re2js 2.10 internals; harmless if the field changes). */
function release(re: RE2JS): void {
  re.reset();
  const inner = re.re2Input as unknown as { lazyDFA?: unknown };
  if (inner && 'lazyDFA' in inner) inner.lazyDFA = null;
}

/** Creates an engine whose validations each get `budget` steps (default DEFAULT_REGEX_BUDGET). */
export function createPatternEngine(options: { budget?: number } = {}): PatternEngine {
  const budget = options.budget ?? DEFAULT_REGEX_BUDGET;
  let remaining = budget;
  let depth = 0;
  const used = new Set<RE2JS>();

  const run = <T>(fn: () => T): T => {
    if (depth === 0) remaining = budget;
    depth++;
    try {
      return fn();
    } finally {
      depth--;
      if (depth === 0) {
        for (const re of used) release(re);
        used.clear();
      }
    }
  };

  const regExp = (source: string): SafePattern => {
    const compiled = compileRe2(source);
    if ('reason' in compiled) throw new Error(`pattern ${quote(source)} ${compiled.reason}`);
    const { re, programSize } = compiled;
    return {
      source,
      programSize,
      // ajv keys its compiled patterns by toString(): it must be the source, or patterns would be mixed up
      toString: () => source,
      test(text) {
        return run(() => {
          const cost = (text.length + 1) * (programSize + PER_CHARACTER_STEPS);
          if (cost > remaining) throw new RegexBudgetError(source, text.length, budget);
          remaining -= cost;
          used.add(re);
          return re.test(text);
        });
      },
    };
  };
  // ajv only reads `code` when generating standalone modules, which the runner never does.
  return { regExp: Object.assign(regExp, { code: 'tools-runner linear-time pattern engine' }), run };
}
