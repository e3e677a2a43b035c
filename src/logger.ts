// A small structured logger: one JSON object per line, constant messages, data in meta.
//
// Logs go to stderr so that stdout stays free for the CLI's own output (`store listening on ...`).
// Format `json` (default) writes one JSON object per line; `text` writes `HH:MM:SS.mmm LEVEL msg
// key=value ...` for a person at a terminal. Either way no raw control, C1 or bidi character is
// written (log data carries agent-chosen strings): JSON escapes them as `\uXXXX`, text likewise.
// Secret values must never reach a log: callers register them with `redact()` on the root logger
// and every line written by it or its children has those strings replaced before it leaves — also
// in the encodings a tool or a library might print them in (JSON-escaped, hex, URL-encoded, and
// base64/base64url at any byte alignment inside a longer encoded string).

import { escapeUnsafe, redactLiterals } from './text.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export type LogFormat = 'json' | 'text';

export interface Logger {
  debug(msg: string, meta?: Record<string, unknown>): void;
  info(msg: string, meta?: Record<string, unknown>): void;
  warn(msg: string, meta?: Record<string, unknown>): void;
  error(msg: string, meta?: Record<string, unknown>): void;
  /** A logger whose lines all carry `bindings` (e.g. `{requestId, tool}`). */
  child(bindings: Record<string, unknown>): Logger;
  /** Never write `value` again in any line of this logger family (min 4 chars). */
  redact(value: string): void;
}

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface LoggerOptions {
  level?: LogLevel;
  /** `json` (default): one object per line; `text`: human-readable lines. */
  format?: LogFormat;
  /** Where lines go; defaults to process.stderr. */
  write?: (line: string) => void;
  bindings?: Record<string, unknown>;
}

interface Shared {
  min: number;
  format: LogFormat;
  write: (line: string) => void;
  /** Every form to replace (each secret and its encodings), longest first. */
  secrets: string[];
}

/** The base64 characters that depend only on `bytes` when they sit at byte offset 0, 1 or 2 of a longer encoded run. */
function base64Fragments(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let pad = 0; pad < 3; pad++) {
    const encoded = Buffer.concat([Buffer.alloc(pad), bytes]).toString('base64').replace(/=+$/, '');
    const start = [0, 2, 3][pad] as number;
    const end = Math.floor(((pad + bytes.length) * 8) / 6);
    if (end - start >= 4) out.push(encoded.slice(start, end));
  }
  return out;
}

/** A secret and the encodings it may appear in, each also as it reads inside a JSON string. */
export function secretForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const b64 = base64Fragments(bytes);
  const url = encodeURIComponent(value);
  const forms = new Set<string>([
    value,
    bytes.toString('hex'),
    bytes.toString('hex').toUpperCase(),
    url,
    url.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    url.replace(/%20/g, '+'),
    ...b64,
    ...b64.map((f) => f.replace(/\+/g, '-').replace(/\//g, '_')),
  ]);
  for (const form of [...forms]) forms.add(JSON.stringify(form).slice(1, -1));
  return [...forms].filter((form) => form.length >= 4);
}

/** Creates the root logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const shared: Shared = {
    min: LEVELS[options.level ?? 'info'],
    format: options.format ?? 'json',
    write: options.write ?? ((line) => process.stderr.write(line)),
    secrets: [],
  };
  return build(shared, options.bindings ?? {});
}

/** A logger that drops everything; for tests and library use. */
export function silentLogger(): Logger {
  return createLogger({ level: 'silent' });
}

function build(shared: Shared, bindings: Record<string, unknown>): Logger {
  const emit = (level: Exclude<LogLevel, 'silent'>, msg: string, meta?: Record<string, unknown>): void => {
    if (LEVELS[level] < shared.min) return;
    const record = { time: new Date().toISOString(), level, msg, ...bindings, ...normalise(meta) };
    const line = shared.format === 'text' ? textLine(record) : safeJson(record);
    shared.write(redactLiterals(line, shared.secrets, '[REDACTED]') + '\n');
  };
  return {
    debug: (msg, meta) => emit('debug', msg, meta),
    info: (msg, meta) => emit('info', msg, meta),
    warn: (msg, meta) => emit('warn', msg, meta),
    error: (msg, meta) => emit('error', msg, meta),
    child: (more) => build(shared, { ...bindings, ...more }),
    redact: (value) => {
      if (value.length < 4 || shared.secrets.includes(value)) return;
      const known = new Set(shared.secrets);
      for (const form of secretForms(value)) if (!known.has(form)) shared.secrets.push(form);
      // Longest first, so a form that contains another is replaced whole.
      shared.secrets.sort((a, b) => b.length - a.length);
    },
  };
}

function normalise(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!meta) return {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(meta)) {
    out[key] = value instanceof Error ? { name: value.name, message: value.message, code: (value as { code?: unknown }).code } : value;
  }
  return out;
}

// Unsafe characters (src/text.ts) are escaped: JSON.stringify already escapes C0 controls, and
// leaves raw the rest (DEL, C1, separators, bidi and zero-width characters), which escapeUnsafe shows.

function safeJson(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch {
    text = JSON.stringify({ level: 'error', msg: 'unserialisable log record' });
  }
  return escapeUnsafe(text);
}

function textValue(value: unknown): string {
  const text = typeof value === 'string' ? value : safeJson(value);
  const escaped = escapeUnsafe(text);
  return typeof value === 'string' && (escaped === '' || /[\s="]/.test(escaped)) ? `"${escaped.replace(/"/g, '\\"')}"` : escaped;
}

function textLine(record: Record<string, unknown>): string {
  const { time, level, msg, ...rest } = record;
  const clock = typeof time === 'string' ? time.slice(11, 23) : '';
  const fields = Object.entries(rest).map(([key, value]) => `${key}=${textValue(value)}`);
  return [clock, String(level).toUpperCase().padEnd(5), escapeUnsafe(String(msg)), ...fields].join(' ');
}
