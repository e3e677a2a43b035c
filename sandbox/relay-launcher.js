// The Deno relay launcher (src/sandbox/relay-launcher.ts starts it): one long-lived Deno process that
// starts every single-use sandbox process with Deno.Command and relays its stdin, stdout, stderr and
// exit over this process's own stdin/stdout, as binary frames (src/sandbox/relay-protocol.ts):
//   [type u8][id u32 big-endian][payload length u32 big-endian][payload]
// in (service -> launcher):  1 spawn {file,args,env,cwd,group} (JSON) | 2 stdin bytes | 3 stdin end |
//                            4 pause / 5 resume the stream of the payload's one byte (0 stdout, 1 stderr) |
//                            6 stdin bytes not to acknowledge (the service sends at most 64 KiB of
//                            those per child before a write of type 2, whose acknowledgement covers them)
// out (launcher -> service): 1 spawned (pid u32) | 2 spawn failed (message) | 3 stdout bytes |
//                            4 stderr bytes | 5 stdout end | 6 stderr end | 7 exit {code,signal} (JSON) |
//                            8 one stdin frame written to the child
// A child stays in this launcher's session and process group (the service SIGKILLs it by its pid), unless
// its request says `group: true` (a sandbox that may start programs): then it leads a session and
// process group of its own (the service SIGKILLs the whole group), started through the setsid program
// (argument 2) when there is one, else with `detached: true` — which makes Deno fork its whole address
// space instead of posix_spawn (+0.8 ms of CPU per spawn, measured; setsid's exec costs the child
// ~0.5-0.9 ms). A request without `group` gets one (the safe side).
// Backpressure: output is written to our stdout (blocking) in the turn it was read, and a paused stream
// is not read at all (also after the child exited), so this process holds at most a chunk per child.
// When the service goes away (our stdin ends, or our stdout fails) every child's process group is
// SIGKILLed and the launcher exits. SIGINT is ignored (it runs in a session of its own anyway).
// Permissions: only --allow-run for the Deno binary (argument 1), setsid and the kill program (argument
// 3; arguments 2 and 3 may be empty): Deno.kill of a process group needs every run permission, a kill
// program only its own path. The one program this launcher starts is the Deno binary: any other file
// in a spawn request is refused here (setsid itself could run anything).

const [denoPath = '', setsidPath = '', killPath = ''] = Deno.args;
const HEADER = 9;
const CHUNK = 65536;
const MAX_IN = 1 << 20;
const IN_SPAWN = 1;
const IN_STDIN = 2;
const IN_STDIN_END = 3;
const IN_PAUSE = 4;
const IN_RESUME = 5;
const IN_STDIN_QUIET = 6;
const OUT_SPAWNED = 1;
const OUT_FAILED = 2;
const OUT_DATA = [3, 4];
const OUT_END = [5, 6];
const OUT_EXIT = 7;
const OUT_ACK = 8;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const EMPTY = new Uint8Array(0);

/**
 * id -> {child, pid, group, writer, chain, paused: [bool, bool], wake: [fn?, fn?], exited, open} of every child
 * until it exited and both its outputs ended (a paused output can still be resumed after the exit).
 */
const children = new Map();
let closing = false;

// Output frames queued in this turn are written together, synchronously (an asynchronous write of
// stdout costs Deno a hop to a blocking thread per write): a full pipe blocks the whole launcher,
// which is the backpressure of a service that does not read. They are encoded into one buffer that is
// reused from turn to turn (the write is synchronous), so a frame allocates nothing.
let out = new Uint8Array(4 * CHUNK);
let outView = new DataView(out.buffer);
let queued = 0;
let scheduled = false;

function send(type, id, payload = EMPTY) {
  const need = queued + HEADER + payload.length;
  if (need > out.length) {
    const bigger = new Uint8Array(Math.max(need, 2 * out.length));
    bigger.set(out.subarray(0, queued));
    out = bigger;
    outView = new DataView(out.buffer);
  }
  out[queued] = type;
  outView.setUint32(queued + 1, id);
  outView.setUint32(queued + 5, payload.length);
  out.set(payload, queued + HEADER);
  queued = need;
  if (!scheduled) {
    scheduled = true;
    queueMicrotask(flush);
  }
}

function flush() {
  scheduled = false;
  const buf = out.subarray(0, queued);
  queued = 0;
  try {
    for (let done = 0; done < buf.length; ) done += Deno.stdout.writeSync(buf.subarray(done));
  } catch {
    // the service is gone
    void shutdown();
  }
  // (a burst's big buffer is not kept)
  if (out.length > 4 * CHUNK) {
    out = new Uint8Array(4 * CHUNK);
    outView = new DataView(out.buffer);
  }
}

function spawnChild(id, payload) {
  let child;
  let group = true;
  try {
    const req = JSON.parse(decoder.decode(payload));
    group = req.group !== false;
    if (req.file !== denoPath) throw new Error(`the relay launcher starts only ${denoPath}, not ${req.file}`);
    const viaSetsid = group && setsidPath !== '';
    child = new Deno.Command(viaSetsid ? setsidPath : req.file, {
      args: viaSetsid ? [req.file, ...req.args] : req.args,
      env: req.env,
      cwd: req.cwd,
      clearEnv: true,
      detached: group && !viaSetsid,
      stdin: 'piped',
      stdout: 'piped',
      stderr: 'piped',
    }).spawn();
  } catch (error) {
    // (Deno names the program it ran: setsid, not the Deno binary the request asked for)
    const reason = String((error && error.message) || error).replace(`'${setsidPath}'`, `'${denoPath}'`);
    send(OUT_FAILED, id, encoder.encode(reason));
    return;
  }
  const entry = {
    child,
    pid: child.pid,
    group,
    writer: child.stdin.getWriter(),
    chain: Promise.resolve(),
    paused: [false, false],
    wake: [undefined, undefined],
    exited: false,
    open: 3,
  };
  children.set(id, entry);
  const pid = new Uint8Array(4);
  new DataView(pid.buffer).setUint32(0, child.pid);
  send(OUT_SPAWNED, id, pid);
  void pump(id, entry, child.stdout, 0);
  void pump(id, entry, child.stderr, 1);
  void child.status.then((status) => {
    // (from now on its pid may be reused: it is never signalled again)
    entry.exited = true;
    done(id, entry);
    stdinDo(entry, () => entry.writer.close());
    const exit = { code: status.signal ? null : status.code, signal: status.signal ?? null };
    send(OUT_EXIT, id, encoder.encode(JSON.stringify(exit)));
  });
}

// Each output is read into one buffer of its own (a BYOB reader: the default reader allocates 64 KB
// per read); send() copies what was read before the next read takes the buffer back.
async function pump(id, entry, stream, index) {
  const reader = stream.getReader({ mode: 'byob' });
  let buffer = new ArrayBuffer(CHUNK);
  try {
    for (;;) {
      while (entry.paused[index]) await new Promise((resolve) => (entry.wake[index] = resolve));
      const { value, done } = await reader.read(new Uint8Array(buffer));
      if (done) break;
      send(OUT_DATA[index], id, value);
      buffer = value.buffer;
    }
  } catch {
    // the pipe failed: treated as its end
  }
  reader.releaseLock();
  send(OUT_END[index], id);
  done(id, entry);
}

/** One of the child's exit and its two output ends happened; after all three it is forgotten. */
function done(id, entry) {
  if (--entry.open === 0) children.delete(id);
}

/** Runs `step` on the child's stdin after every earlier step (writes are in order; a failure ends nothing else). */
function stdinDo(entry, step) {
  entry.chain = entry.chain.then(step).catch(() => undefined);
  return entry.chain;
}

function onFrame(type, id, payload) {
  const entry = children.get(id);
  switch (type) {
    case IN_SPAWN:
      return spawnChild(id, payload);
    // (payloads are views of the read buffer, which the next read reuses: a queued write keeps a copy)
    case IN_STDIN: {
      if (!entry || entry.exited) return send(OUT_ACK, id);
      const data = payload.slice();
      return void stdinDo(entry, () => entry.writer.write(data)).then(() => send(OUT_ACK, id));
    }
    case IN_STDIN_QUIET:
      if (entry && !entry.exited) {
        const data = payload.slice();
        stdinDo(entry, () => entry.writer.write(data));
      }
      return;
    case IN_STDIN_END:
      if (entry) stdinDo(entry, () => entry.writer.close());
      return;
    case IN_PAUSE:
    case IN_RESUME: {
      const index = payload[0] === 1 ? 1 : 0;
      if (!entry) return;
      entry.paused[index] = type === IN_PAUSE;
      if (type === IN_RESUME) {
        entry.wake[index]?.();
        entry.wake[index] = undefined;
      }
      return;
    }
    default:
      throw new Error(`unknown frame type ${type}`);
  }
}

async function shutdown() {
  if (closing) return;
  closing = true;
  const entries = [...children.values()].filter((entry) => !entry.exited);
  // the groups of children that lead one (the rest, and any the kill program missed, below)
  const groups = entries.filter((entry) => entry.group);
  if (groups.length > 0 && killPath !== '') {
    try {
      const args = ['-KILL', '--', ...groups.map((e) => `-${e.pid}`)];
      await new Deno.Command(killPath, {
        args,
        clearEnv: true,
        stdin: 'null',
        stdout: 'null',
        stderr: 'null',
      }).output();
    } catch {
      // fall back to the children themselves below
    }
  }
  for (const entry of entries) {
    try {
      entry.child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  Deno.exit(0);
}

Deno.addSignalListener('SIGINT', () => undefined);

async function main() {
  let pending = EMPTY;
  // one read buffer for the whole run: what must outlive the next read is copied (see onFrame)
  const chunk = new Uint8Array(CHUNK);
  for (;;) {
    let n;
    try {
      n = await Deno.stdin.read(chunk);
    } catch {
      n = null;
    }
    if (n === null) break;
    if (pending.length === 0) pending = chunk.subarray(0, n);
    else {
      const joined = new Uint8Array(pending.length + n);
      joined.set(pending, 0);
      joined.set(chunk.subarray(0, n), pending.length);
      pending = joined;
    }
    const view = new DataView(pending.buffer, pending.byteOffset, pending.length);
    let at = 0;
    while (pending.length - at >= HEADER) {
      const length = view.getUint32(at + 5);
      if (length > MAX_IN) throw new Error(`frame of ${length} bytes (at most ${MAX_IN})`);
      if (pending.length - at - HEADER < length) break;
      onFrame(pending[at], view.getUint32(at + 1), pending.subarray(at + HEADER, at + HEADER + length));
      at += HEADER + length;
    }
    // (a partial frame left in the read buffer is copied out of it)
    pending = pending.buffer === chunk.buffer ? pending.slice(at) : pending.subarray(at);
  }
}

try {
  await main();
} catch (error) {
  console.error(`tools-runner relay launcher: malformed input from the service: ${error.message}`);
}
await shutdown();
