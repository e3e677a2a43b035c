// Terminal safety for everything the CLI prints. Tool names, request ids, messages and outputs are
// chosen by agents and tools (hostile): raw, an ESC or C1 CSI (0x9B) sequence recolours or rewrites
// the operator's terminal, an OSC 8 sequence plants a hidden hyperlink, a CR overwrites the line
// already shown, and bidi overrides (U+202E) make text read differently than it is.
//
// Every such character is shown as a `\uXXXX` escape instead. That spelling is also a valid JSON
// string escape, so JSON output stays valid JSON with the same data after escaping.

// Which characters count (C0 controls, DEL, C1 controls, separators, bidi, zero-width, BOM) is
// defined once, in src/text.ts.

import { escapeUnsafe } from '../text.js';

/** One field on one line (a tool name, a request id): every control character escaped, newlines too. */
export function safeField(value: unknown): string {
  return escapeUnsafe(String(value));
}

/** A block of output: tabs and newlines kept, every other control, C1 and bidi character escaped. */
export function safeText(text: string): string {
  return escapeUnsafe(text, 'lines');
}

/** JSON for a terminal: JSON.stringify, then C1, DEL, bidi and separator characters as `\uXXXX` (still valid JSON). */
export function safeJson(value: unknown, indent?: number): string {
  return safeText(JSON.stringify(value, null, indent) ?? 'null');
}
