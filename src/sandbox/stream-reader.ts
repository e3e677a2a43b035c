// Splits a sandbox process's stdout/stderr bytes into harness frames and untrusted log lines.
//
// States of a reader: stdout starts in 'hello' (the first line, written by the harness before any
// tool code exists; the per-process nonce is the host's, sent in the first job). After that, each
// line is classified as soon as its first bytes are known: a line starting with the nonce is a frame
// (bounded by `maxFrameBytes`), anything else is log text. Log bytes are counted as they arrive, so a
// flood without newlines is still caught; a log line longer than `maxLogLineBytes` is handed over cut
// at that length (marked cut) and the rest of it is only counted.

const HELLO = 'TRH2';
const NONCE_LENGTH = 32;
const MAX_HELLO_BYTES = 128;

/** Callbacks of a stream reader. */
export interface StreamEvents {
  /** The harness's first stdout line: it waits for its first job. */
  hello?(): void;
  /** The first stdout line was not a valid hello. */
  badHello?(line: string): void;
  /** A complete frame: type letter, job sequence number, JSON payload text and its byte length. */
  frame?(type: string, seq: number, payload: string, bytes: number): void;
  /** A frame grew beyond the limit (type letter, or '?' when unknown). */
  frameTooLarge?(type: string): void;
  /** A frame line that is not `<type><seq> <json>`. */
  badFrame?(line: string): void;
  /** A log line (cut = it was longer than the per-line cap and only its start is given). */
  log(text: string, cut: boolean): void;
  /** Bytes that are not frames (counted toward the output cap). */
  output(bytes: number): void;
}

type Kind = 'hello' | 'pending' | 'frame' | 'log' | 'skip';

/** Push-based reader of one output stream. */
export interface StreamReader {
  push(chunk: Buffer): void;
  /** Flushes a final unterminated line. */
  end(): void;
}

/** Configuration of createStreamReader. */
export interface StreamReaderOptions {
  /** stdout: the first line is the hello. */
  expectHello: boolean;
  /** The nonce once known ('' before the hello). */
  nonce: () => string;
  maxFrameBytes: number;
  maxLogLineBytes: number;
  events: StreamEvents;
}

/** Creates a reader for one of the two output streams of a sandbox process. */
export function createStreamReader(options: StreamReaderOptions): StreamReader {
  const { events, maxFrameBytes } = options;
  const maxLogLine = Math.max(1, options.maxLogLineBytes);
  let kind: Kind = options.expectHello ? 'hello' : 'pending';
  let parts: Buffer[] = [];
  let stored = 0;

  const reset = (next: Kind): void => {
    parts = [];
    stored = 0;
    kind = next;
  };
  const joined = (): Buffer => (parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts));

  const toLog = (): void => {
    kind = 'log';
    events.output(stored);
    if (stored >= maxLogLine) cutLog();
  };
  const cutLog = (): void => {
    events.log(joined().subarray(0, maxLogLine).toString('utf8'), true);
    reset('skip');
  };

  const classify = (): void => {
    const nonce = options.nonce();
    if (nonce === '') return toLog();
    if (stored < NONCE_LENGTH) return;
    if (joined().subarray(0, NONCE_LENGTH).toString('latin1') === nonce) kind = 'frame';
    else toLog();
  };

  const append = (piece: Buffer): void => {
    if (piece.length === 0) return;
    if (kind === 'log' || kind === 'skip') events.output(piece.length);
    if (kind === 'skip') return;
    parts.push(piece);
    stored += piece.length;
    if (kind === 'pending') classify();
    if (kind === 'log' && stored >= maxLogLine) return cutLog();
    if (kind === 'hello' && stored > MAX_HELLO_BYTES) {
      events.badHello?.(joined().subarray(0, MAX_HELLO_BYTES).toString('latin1'));
      return reset('skip');
    }
    if (kind === 'frame' && stored > maxFrameBytes) {
      const type = String.fromCharCode(joined()[NONCE_LENGTH] ?? 63);
      reset('skip');
      events.frameTooLarge?.(type);
    }
  };

  const parseFrame = (line: Buffer): void => {
    const text = line.subarray(NONCE_LENGTH).toString('utf8');
    const match = /^([A-Z])(\d{1,15}) /.exec(text);
    if (!match?.[1] || !match[2]) {
      events.badFrame?.(text.slice(0, 200));
      return;
    }
    const payload = text.slice(match[0].length);
    events.frame?.(match[1], Number(match[2]), payload, line.length - NONCE_LENGTH - match[0].length);
  };

  const lineEnd = (): void => {
    const was = kind;
    const line = stored > 0 ? joined() : Buffer.alloc(0);
    reset('pending');
    switch (was) {
      case 'hello': {
        const text = line.toString('latin1');
        if (text === HELLO) events.hello?.();
        else events.badHello?.(text);
        return;
      }
      case 'frame':
        return parseFrame(line);
      case 'skip':
        return events.output(1);
      default:
        // 'pending' (shorter than a nonce, e.g. the empty separator before a frame) or 'log'
        if (was === 'pending') events.output(line.length);
        events.output(1);
        if (line.length > 0) events.log(line.toString('utf8'), false);
    }
  };

  return {
    push(chunk: Buffer): void {
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(10, start);
        if (nl === -1) return append(chunk.subarray(start));
        append(chunk.subarray(start, nl));
        lineEnd();
        start = nl + 1;
      }
    },
    end(): void {
      if (stored > 0 && (kind === 'log' || kind === 'pending')) {
        if (kind === 'pending') events.output(stored);
        events.log(joined().toString('utf8'), false);
      }
      reset('skip');
    },
  };
}
