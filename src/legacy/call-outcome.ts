// What a transport hands back to executeHostTool: the tool's answer (or failure) and the facts for
// the audit line. Also the text hygiene shared by both transports: messages and logs are cleaned
// exactly as the sandbox cleans code tools' text (src/text.ts: no terminal escapes, no C0/C1
// controls, no bidi or zero-width characters), and error messages
// are capped at 1000 bytes (as agentcli caps them).

import type { ExecutionFailure } from '../result.js';
import { stripUnsafe } from '../text.js';
import type { AuditRecord } from './audit.js';

/** Audit fields a transport knows; executeHostTool adds ts, tool, ms, outcome, approval. */
export type TransportAudit = Pick<AuditRecord, 'argv' | 'cwd' | 'exit' | 'stdoutBytes' | 'stderrBytes' | 'truncated' | 'envKeys'> &
  Partial<Pick<AuditRecord, 'signal' | 'status'>>;

/** A transport's answer to the caller. */
export type CallAnswer = ({ ok: true; output: unknown } | { ok: false; error: ExecutionFailure }) & {
  logs: string[];
  logsTruncated: boolean;
};

/** A transport's answer plus its audit facts. */
export type CallOutcome = CallAnswer & { audit: TransportAudit };

/** Largest error message taken from tool text (bytes of UTF-8). */
export const MAX_MESSAGE_BYTES = 1000;
/** Log text kept from a successful call's stderr. */
export const MAX_LOG_BYTES = 16 * 1024;

/** Removes terminal escapes, control and bidi characters the way the sandbox does (tabs and newlines stay; CR LF becomes LF). */
export function sanitizeText(text: string): string {
  return stripUnsafe(text.replace(/\r\n?/g, '\n'), true);
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes without splitting a character; appends "…" when cut. */
export function capBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let out = '';
  let used = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch);
    if (used + size > maxBytes - 3) break;
    out += ch;
    used += size;
  }
  return out + '…';
}

/** Splits program output into sanitised, non-empty log lines, keeping at most MAX_LOG_BYTES. */
export function toLogLines(text: string): { logs: string[]; logsTruncated: boolean } {
  const logs: string[] = [];
  let used = 0;
  for (const line of sanitizeText(text).split('\n')) {
    if (line.trim() === '') continue;
    const size = Buffer.byteLength(line) + 1;
    if (used + size > MAX_LOG_BYTES) return { logs, logsTruncated: true };
    logs.push(line);
    used += size;
  }
  return { logs, logsTruncated: false };
}
