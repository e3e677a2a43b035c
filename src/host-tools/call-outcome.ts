// What a transport hands back to executeHostTool: the tool's answer (or failure) and the facts for
// the audit line (TransportFacts, src/audit/audit-log.ts). Also the text hygiene shared by both transports: messages and logs are cleaned
// exactly as the sandbox cleans code tools' text (src/text.ts: no terminal escapes, no C0/C1
// controls, no bidi or zero-width characters), and error messages
// are capped at 1000 bytes (as agentcli caps them).

import type { ExecutionFailure } from '../result.js';
import { stripUnsafe } from '../text.js';
import type { TransportFacts } from '../audit/audit-log.js';

/** A transport's answer to the caller. */
export type CallAnswer = ({ ok: true; output: unknown } | { ok: false; error: ExecutionFailure }) & {
  logs: string[];
  logsTruncated: boolean;
};

/** A transport's answer plus its audit facts. */
export type CallOutcome = CallAnswer & { audit: TransportFacts };

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

/** Connection errors that mean a request never left (nothing reached the receiver). */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_INVALID_URL',
]);

/** Whether a failed fetch certainly never reached its receiver (so it was no effect). */
export function neverSent(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === 'string' && NOT_SENT.has(cause.code);
}

/** Codes of a receiver's answer that say it refused the call before acting on it (so it was no effect). */
export const REFUSED_BEFORE_ACTING: ReadonlySet<string> = new Set([
  'input.invalid',
  'permission.denied',
  'approval.required',
  'secret.missing',
  'not_found',
  'conflict',
  'rate.exceeded',
]);

/**
 * Called by a transport right before it sends a request (the call's effect); returns the effect's
 * withdrawal, for when the request never left or the receiver refused it (a 4xx answer) before acting.
 */
export type OnSend = (url: string) => () => void;
