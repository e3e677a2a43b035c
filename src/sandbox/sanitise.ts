// Cleaning of untrusted text from a sandbox process (log lines, error messages, stacks) before it
// reaches a result: no ANSI/terminal escapes, no control or bidi characters, no secret values, and a
// byte cap for logs. The character set and the redaction are src/text.ts's, shared with the logger,
// the CLI and host tools.

import { longestFirst, redactLiterals, stripUnsafe } from '../text.js';

const DATA_URL = /data:application\/(?:typescript|javascript);base64,[A-Za-z0-9+/=.]*(?:#\d+)?/g;
const MIN_SECRET_LENGTH = 4;

/** Strips terminal escapes and unsafe characters (src/text.ts); keeps tabs, and newlines when `multiline`. */
export const stripControl = stripUnsafe;

/** Replaces every secret value (of at least 4 characters; longest first) with [REDACTED]. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  return redactLiterals(
    text,
    longestFirst(secrets.filter((secret) => secret.length >= MIN_SECRET_LENGTH)),
    '[REDACTED]',
  );
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const buf = Buffer.from(text).subarray(0, Math.max(0, maxBytes));
  if (buf.length === 0) return '';
  let start = buf.length - 1; // start of the last (possibly incomplete) character
  while (start > 0 && ((buf[start] as number) & 0xc0) === 0x80) start--;
  const lead = buf[start] as number;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return buf.subarray(0, buf.length - start < need ? start : buf.length).toString('utf8');
}

/**
 * Turns a tool error's message or stack into caller-safe text: the tool's data: URL becomes
 * `tool.ts` (Deno maps line numbers to the tool's own source), harness and runtime frames are
 * dropped, escapes and secrets removed.
 */
export function cleanToolText(text: string, secrets: readonly string[], maxBytes: number, multiline: boolean): string {
  let out = text.replace(DATA_URL, 'tool.ts');
  if (!multiline) out = out.replace(/\s*\n\s*/g, ' ');
  if (multiline) {
    out = out
      .split('\n')
      .filter((line) => !/^\s+at .*(?:file:\/\/|ext:|node:)/.test(line))
      .join('\n');
  }
  return cutUtf8(redactSecrets(stripControl(out, multiline), secrets), maxBytes).trimEnd();
}

/** Collects a call's log lines: sanitised, redacted, capped at `maxBytes` in total. */
export interface LogCollector {
  /** Adds one line; `cut` marks a line that was longer than the cap (the log is then truncated). */
  add(line: string, cut?: boolean): void;
  readonly lines: string[];
  readonly truncated: boolean;
}

/** Creates a LogCollector; empty lines are dropped, the line crossing the cap is cut. */
export function createLogCollector(maxBytes: number, secrets: readonly string[]): LogCollector {
  const lines: string[] = [];
  let used = 0;
  let truncated = false;
  return {
    add(raw: string, cut = false): void {
      if (truncated) return;
      if (cut) truncated = true;
      const line = redactSecrets(stripControl(raw), secrets);
      if (line.trim() === '') return;
      const bytes = Buffer.byteLength(line);
      if (used + bytes <= maxBytes) {
        lines.push(line);
        used += bytes;
        return;
      }
      const rest = cutUtf8(line, maxBytes - used);
      if (rest !== '') lines.push(rest);
      used = maxBytes;
      truncated = true;
    },
    lines,
    get truncated() {
      return truncated;
    },
  };
}
