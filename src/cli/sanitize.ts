// Terminal safety for everything the CLI prints. Tool names, request ids, messages and outputs are
// chosen by agents and tools (hostile): raw, an ESC or C1 CSI (0x9B) sequence recolours or rewrites
// the operator's terminal, an OSC 8 sequence plants a hidden hyperlink, a CR overwrites the line
// already shown, and bidi overrides (U+202E) make text read differently than it is.
//
// Every such character is shown as a `\uXXXX` escape instead. That spelling is also a valid JSON
// string escape, so JSON output stays valid JSON with the same data after escaping.

// C0 controls, DEL, C1 controls, line/paragraph separators, bidi embeddings/overrides/isolates and
// marks, zero-width characters and the BOM.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/g;
const UNSAFE_KEEP_LAYOUT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/g;

const escape = (ch: string): string => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** One field on one line (a tool name, a request id): every control character escaped, newlines too. */
export function safeField(value: unknown): string {
  return String(value).replace(UNSAFE, escape);
}

/** A block of output: tabs and newlines kept, every other control, C1 and bidi character escaped. */
export function safeText(text: string): string {
  return text.replace(UNSAFE_KEEP_LAYOUT, escape);
}

/** JSON for a terminal: JSON.stringify, then C1, DEL, bidi and separator characters as `\uXXXX` (still valid JSON). */
export function safeJson(value: unknown, indent?: number): string {
  return safeText(JSON.stringify(value, null, indent) ?? 'null');
}
