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
//
// Invariant: logging never throws and never raises an error event, whatever it is given (cyclic,
// huge or binary values, getters or toJSON that throw, Proxies, Symbols, BigInt) and wherever it
// writes: a value is first copied into a bounded plain tree (./log-value.js) with every read
// guarded, and a sink that fails (a closed pipe: EPIPE) is dropped, its lost lines counted
// (`droppedLines()`). So the uncaught-error guard, which logs, cannot feed itself.

import { plainFields, plainString, type Budget } from './log-value.js';
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
  /** Lines lost because the sink failed (e.g. EPIPE: the reader went away); for a stream, counted per stream. */
  droppedLines(): number;
}

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** The most characters of data one line carries; what does not fit is cut, marked `…`. */
export const MAX_LINE_CHARS = 65_536;

export interface LoggerOptions {
  level?: LogLevel;
  /** `json` (default): one object per line; `text`: human-readable lines. */
  format?: LogFormat;
  /** Where lines go (a function); a sink that throws or returns false loses that line, counted. */
  write?: (line: string) => unknown;
  /** Or the stream lines go to (through `guardedWriter`); default process.stderr. */
  stream?: NodeJS.WritableStream;
  bindings?: Record<string, unknown>;
}

interface Shared {
  min: number;
  format: LogFormat;
  write: (line: string) => unknown;
  /** Lines lost by the sink of this family (it threw, or reported the line dropped). */
  dropped: number;
  /** Lines lost after the write was handed over (an asynchronous stream error). */
  lostLater: () => number;
  /** Every form to replace (each secret and its encodings), longest first. */
  secrets: string[];
}

/** The base64 characters that depend only on `bytes` when they sit at byte offset 0, 1 or 2 of a longer encoded run. */
function base64Fragments(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let pad = 0; pad < 3; pad++) {
    const encoded = Buffer.concat([Buffer.alloc(pad), bytes])
      .toString('base64')
      .replace(/=+$/, '');
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
  // (a lone surrogate has no URL encoding: encodeURIComponent throws; its UTF-8 bytes are U+FFFD)
  const url = encodeURIComponent(Buffer.from(bytes).toString('utf8'));
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

/** What a guarded writer knows about its stream (one per stream: the stream is process-wide). */
interface StreamState {
  broken: boolean;
  dropped: number;
  error?: string;
}

// Keyed by the stream object, which is itself process-wide (process.stdout/stderr): every writer
// of one stream must agree that it is broken, and its error listener is added once.
const streamStates = new WeakMap<NodeJS.WritableStream, StreamState>();

function stateOf(stream: NodeJS.WritableStream): StreamState {
  let state = streamStates.get(stream);
  if (!state) {
    const created: StreamState = { broken: false, dropped: 0 };
    state = created;
    streamStates.set(stream, created);
    // Without a listener a failed write (EPIPE when the reader went away) is an uncaught error.
    stream.on('error', (error: unknown) => {
      if (!created.broken) created.dropped += 1;
      created.broken = true;
      created.error =
        (error as { code?: unknown })?.code === undefined ? 'error' : String((error as { code?: unknown }).code);
    });
  }
  return state;
}

/** A writer for a process stream that never throws and never raises an uncaught error: after a failure (EPIPE) it drops and counts. */
export function guardedWriter(stream: NodeJS.WritableStream): {
  write(text: string): boolean;
  dropped(): number;
  broken(): boolean;
} {
  const state = stateOf(stream);
  return {
    write(text) {
      const destroyed = (stream as { destroyed?: boolean }).destroyed === true;
      if (state.broken || destroyed) {
        state.broken = true;
        state.dropped += 1;
        return false;
      }
      try {
        stream.write(text);
        return true;
      } catch {
        state.broken = true;
        state.dropped += 1;
        return false;
      }
    },
    dropped: () => state.dropped,
    broken: () => state.broken,
  };
}

/** Creates the root logger. */
export function createLogger(options: LoggerOptions = {}): Logger {
  let write = options.write;
  let lostLater = (): number => 0;
  if (!write) {
    // Looked up on first use only, so a logger that never writes adds no listener to stderr.
    const stream = options.stream ?? process.stderr;
    let sink: ReturnType<typeof guardedWriter> | undefined;
    write = (line) => void (sink ??= guardedWriter(stream)).write(line);
    lostLater = () => sink?.dropped() ?? 0;
  }
  const shared: Shared = {
    min: LEVELS[options.level ?? 'info'] ?? LEVELS.info,
    format: options.format === 'text' ? 'text' : 'json',
    write,
    dropped: 0,
    lostLater,
    secrets: [],
  };
  return build(shared, plainFields(options.bindings, newBudget(shared)));
}

/** A logger that drops everything; for tests and library use. */
export function silentLogger(): Logger {
  return createLogger({ level: 'silent' });
}

function newBudget(shared: Shared): Budget {
  return { left: MAX_LINE_CHARS, secrets: shared.secrets };
}

/** A copy of `value` when it is a plain object of primitive data fields only, else undefined (plainFields deals with it). */
function primitiveCopy(value: unknown): Record<string, unknown> | undefined {
  try {
    // (a Proxy or a getter may throw anywhere here: then plainFields deals with it)
    if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype)
      return undefined;
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if (descriptor === undefined || !('value' in descriptor)) return undefined; // an accessor: not read here
      const field: unknown = descriptor.value;
      const type = typeof field;
      if (field !== null && type !== 'string' && type !== 'number' && type !== 'boolean' && type !== 'undefined')
        return undefined;
      copy[key] = field;
    }
    return copy;
  } catch {
    return undefined;
  }
}

// `bindings` may be a function: a child's fields are merged on its first emitted line (or its first
// child), so a logger made per call costs nothing when its level drops every line (the hot path).
function build(shared: Shared, lazyBindings: Record<string, unknown> | (() => Record<string, unknown>)): Logger {
  let merged = typeof lazyBindings === 'function' ? undefined : lazyBindings;
  const fields = (): Record<string, unknown> => (merged ??= (lazyBindings as () => Record<string, unknown>)());
  const emit = (level: Exclude<LogLevel, 'silent'>, msg: unknown, meta?: unknown): void => {
    if (LEVELS[level] < shared.min) return;
    const bindings = fields();
    let line: string;
    try {
      const budget = newBudget(shared);
      const record: Record<string, unknown> = { time: new Date().toISOString(), level, msg: plainString(msg, budget) };
      for (const fields of [bindings, plainFields(meta, budget)]) {
        // A field named like the three fixed ones keeps its value under a prefixed name.
        for (const [key, value] of Object.entries(fields)) setField(record, key in RESERVED ? `_${key}` : key, value);
      }
      const text = shared.format === 'text' ? textLine(record) : escapeUnsafe(JSON.stringify(record));
      line = redactLiterals(text, shared.secrets, '[REDACTED]') + '\n';
    } catch {
      // Unreachable by construction (the record is a plain tree); kept so that a log call cannot throw.
      line = `{"level":"error","msg":"unserialisable log record"}\n`;
    }
    try {
      if (shared.write(line) === false) shared.dropped += 1;
    } catch {
      shared.dropped += 1;
    }
  };
  return {
    debug: (msg, meta) => emit('debug', msg, meta),
    info: (msg, meta) => emit('info', msg, meta),
    warn: (msg, meta) => emit('warn', msg, meta),
    error: (msg, meta) => emit('error', msg, meta),
    child: (more) => {
      // The fields as they are now (a later change to `more` is not seen), merged when first needed:
      // primitive fields (the usual rid, tool, attempt) are copied as they are, anything else made plain now.
      const copy = primitiveCopy(more);
      const eager = copy === undefined ? plainFields(more, newBudget(shared)) : undefined;
      return build(shared, () => {
        const out: Record<string, unknown> = { ...fields() };
        const plain = eager ?? plainFields(copy, newBudget(shared));
        for (const [key, value] of Object.entries(plain)) setField(out, key, value);
        return out;
      });
    },
    redact: (value) => {
      if (typeof value !== 'string' || value.length < 4 || shared.secrets.includes(value)) return;
      const known = new Set(shared.secrets);
      for (const form of secretForms(value)) if (!known.has(form)) shared.secrets.push(form);
      // Longest first, so a form that contains another is replaced whole.
      shared.secrets.sort((a, b) => b.length - a.length);
    },
    droppedLines: () => shared.dropped + shared.lostLater(),
  };
}

const RESERVED: Record<string, true> = { time: true, level: true, msg: true };

/** Sets an own enumerable property, also for keys like `__proto__`. */
function setField(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

// Unsafe characters (src/text.ts) are escaped: JSON.stringify already escapes C0 controls, and
// leaves raw the rest (DEL, C1, separators, bidi and zero-width characters), which escapeUnsafe shows.

function textValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  const escaped = escapeUnsafe(text);
  return typeof value === 'string' && (escaped === '' || /[\s="]/.test(escaped))
    ? `"${escaped.replace(/"/g, '\\"')}"`
    : escaped;
}

function textLine(record: Record<string, unknown>): string {
  const { time, level, msg, ...rest } = record;
  const clock = typeof time === 'string' ? time.slice(11, 23) : '';
  const fields = Object.entries(rest).map(([key, value]) => `${escapeUnsafe(key)}=${textValue(value)}`);
  return [clock, String(level).toUpperCase().padEnd(5), escapeUnsafe(String(msg)), ...fields].join(' ');
}
