// Redaction of evidence: replaces, in every string of a value (keys included), first the literal
// values a call handled (resolved secrets of any length; passed-through environment values of 4+
// characters), then every match of the operator's `redact` regexes, with `***REDACTED***`. Literals
// go first so a regex that matches part of a secret cannot leave the rest of it behind. A pattern
// that is not a valid regex is matched literally (as agentcli does).

import { longestFirst, redactLiterals } from '../text.js';

/** Replacement text of redacted values in audit records, approval previews and host-tool results. */
export const REDACTED = '***REDACTED***';

/** Replaces sensitive values in strings and in whole JSON values. */
export interface Redactor {
  text(value: string): string;
  deep<T>(value: T): T;
}

/** Builds a redactor for the literal values `literals` (empty ones ignored) and the regexes `patterns`. */
export function createRedactor(literals: Iterable<string>, patterns: readonly string[] = []): Redactor {
  const values = longestFirst(literals);
  const regexes = patterns
    .filter((p) => p !== '')
    .map((pattern) => {
      try {
        return new RegExp(pattern, 'g');
      } catch {
        return new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g');
      }
    });
  const text = (value: string): string => {
    let out = redactLiterals(value, values, REDACTED);
    for (const regex of regexes) out = out.replace(regex, (match) => (match === '' ? match : REDACTED));
    return out;
  };
  const deep = (value: unknown): unknown => {
    if (typeof value === 'string') return text(value);
    if (Array.isArray(value)) return value.map(deep);
    if (typeof value === 'object' && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(value)) out[text(key)] = deep(child);
      return out;
    }
    return value;
  };
  return { text, deep: <T>(value: T) => deep(value) as T };
}
