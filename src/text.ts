// Text hygiene for everything the runner passes on from agents and tools (log data, tool logs and
// messages, host-tool output, CLI output): the one definition of the characters that fool a terminal
// or a reader, and the one literal redaction.
//
// Unsafe characters: C0 controls, DEL, C1 controls (NEL, the 8-bit CSI 0x9B ...), the Arabic letter
// mark, the Mongolian vowel separator, zero-width characters and bidi marks (U+200B-U+200F), line
// and paragraph separators and bidi embeddings/overrides (U+2028-U+202E), word joiner, invisible
// operators and bidi isolates (U+2060-U+2069), the BOM and the interlinear annotation characters.
// They are either stripped (tool text that becomes result data; terminal escape sequences go
// whole) or escaped as `\uXXXX` (log lines and CLI output, where the reader should see them).

const UNSAFE_ABOVE_C0 =
  '\\u007f-\\u009f\\u061c\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2069\\ufeff\\ufff9-\\ufffb';

/** The unsafe characters except those of `keep` (C0 layout characters: tab, newline). */
function unsafeChars(keep: string): RegExp {
  let c0 = '';
  for (let code = 0; code < 0x20; code++) {
    if (!keep.includes(String.fromCharCode(code))) c0 += `\\u${code.toString(16).padStart(4, '0')}`;
  }
  return new RegExp(`[${c0}${UNSAFE_ABOVE_C0}]`, 'g');
}

/** Which C0 layout characters a cleaning keeps: none, tabs, or tabs and newlines. */
export type KeepLayout = 'none' | 'tab' | 'lines';

const UNSAFE: Record<KeepLayout, RegExp> = {
  none: unsafeChars(''),
  tab: unsafeChars('\t'),
  lines: unsafeChars('\t\n'),
};
const CSI = /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]/g;
const OSC = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g;
const ESC = /\x1b[@-_]?/g;

const escapeChar = (ch: string): string => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Shows every unsafe character (other than those `keep` allows) as `\uXXXX` (also a valid JSON string escape). */
export function escapeUnsafe(text: string, keep: KeepLayout = 'none'): string {
  return text.replace(UNSAFE[keep], escapeChar);
}

/** Removes terminal escape sequences whole, then every unsafe character; keeps tabs, and newlines when `multiline`. */
export function stripUnsafe(text: string, multiline = false): string {
  return text
    .replace(OSC, '')
    .replace(CSI, '')
    .replace(ESC, '')
    .replace(UNSAFE[multiline ? 'lines' : 'tab'], '');
}

/** `values` without empty ones and duplicates, longest first (so a value containing another is replaced whole). */
export function longestFirst(values: Iterable<string>): string[] {
  return [...new Set([...values].filter((value) => value !== ''))].sort((a, b) => b.length - a.length);
}

/** Replaces every occurrence of each of `values` (in the order given: pass them longestFirst) with `replacement`. */
export function redactLiterals(text: string, values: readonly string[], replacement: string): string {
  let out = text;
  for (const value of values) {
    if (value !== '' && out.includes(value)) out = out.split(value).join(replacement);
  }
  return out;
}
