// The binary framing between the service and the Deno relay launcher (sandbox/relay-launcher.js): every
// frame is [type u8][child id u32 BE][payload length u32 BE][payload]. Lengths, not lines: children's
// output is arbitrary bytes. The launcher's own program repeats these numbers (it cannot import this file).

/** Bytes of a frame header. */
export const RELAY_HEADER_BYTES = 9;
/** Largest payload either side sends in one frame (bigger data is split); a bigger one from the launcher is an error. */
export const RELAY_MAX_PAYLOAD = 65_536;

/** Largest spawn request (JSON) the launcher accepts; any larger frame ends the launcher as malformed input. */
export const RELAY_MAX_SPAWN_BYTES = 1 << 20;

/**
 * Bytes of a child's stdin the service may send without the launcher's acknowledgement
 * (`ToLauncher.stdinQuiet`) before its next write waits for one: what the launcher may hold per child
 * beyond the one acknowledged write in flight. A job line usually fits, so a call costs no ack frame.
 */
export const RELAY_STDIN_WINDOW = 65_536;

/** Frames the service sends. */
export const ToLauncher = {
  spawn: 1,
  /** stdin bytes; the launcher answers `FromLauncher.stdinAck` once it has written them to the child */
  stdin: 2,
  stdinEnd: 3,
  pause: 4,
  resume: 5,
  /** stdin bytes the launcher writes without acknowledging them (within RELAY_STDIN_WINDOW) */
  stdinQuiet: 6,
} as const;

/** Frames the launcher sends. */
export const FromLauncher = {
  spawned: 1,
  failed: 2,
  stdout: 3,
  stderr: 4,
  stdoutEnd: 5,
  stderrEnd: 6,
  exit: 7,
  stdinAck: 8,
} as const;

/** One frame (header + payload) in one buffer; `payload` a string is written as UTF-8. */
export function encodeFrame(type: number, id: number, payload?: Buffer | string): Buffer {
  const length = payload === undefined ? 0 : typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  const frame = Buffer.allocUnsafe(RELAY_HEADER_BYTES + length);
  frame[0] = type;
  frame.writeUInt32BE(id, 1);
  frame.writeUInt32BE(length, 5);
  if (typeof payload === 'string') frame.write(payload, RELAY_HEADER_BYTES, 'utf8');
  else if (payload !== undefined) payload.copy(frame, RELAY_HEADER_BYTES);
  return frame;
}

/** Splits the launcher's output into frames; `onFrame` gets each whole one, `onError` the first malformed one. */
export interface FrameDecoder {
  push(chunk: Buffer): void;
}

/**
 * A decoder of the launcher's frames: a type outside FromLauncher, a payload above RELAY_MAX_PAYLOAD or an
 * `onFrame` that throws (a payload it refuses) is an error, the first and last one reported.
 */
export function createFrameDecoder(
  onFrame: (type: number, id: number, payload: Buffer) => void,
  onError: (error: Error) => void,
): FrameDecoder {
  let pending: Buffer = Buffer.alloc(0);
  let failed = false;
  return {
    push(chunk) {
      if (failed) return;
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let at = 0;
      while (pending.length - at >= RELAY_HEADER_BYTES) {
        const type = pending[at] as number;
        const id = pending.readUInt32BE(at + 1);
        const length = pending.readUInt32BE(at + 5);
        if (type < FromLauncher.spawned || type > FromLauncher.stdinAck || length > RELAY_MAX_PAYLOAD) {
          failed = true;
          onError(
            new Error(
              `the sandbox relay launcher sent a malformed frame (type ${type}, child ${id}, ${length} bytes; at most ${RELAY_MAX_PAYLOAD})`,
            ),
          );
          return;
        }
        if (pending.length - at - RELAY_HEADER_BYTES < length) break;
        const start = at + RELAY_HEADER_BYTES;
        at = start + length;
        try {
          onFrame(type, id, pending.subarray(start, at));
        } catch (error) {
          failed = true;
          onError(error as Error);
          return;
        }
      }
      pending = at === pending.length ? Buffer.alloc(0) : pending.subarray(at);
    },
  };
}
