// Trusted entry module of every sandbox process. It never imports anything: tool code is loaded by a
// computed `data:` import, which Deno permission-checks (a static import or the entry module would not
// be). Protocol, one line per frame:
//   host -> harness (stdin):  {"t":"job",...} and {"t":"api",...} replies, JSON per line
//   harness -> host (stdout): "TRH1 <nonce>" once at start, then "\n<nonce><T><seq> <json>\n" frames,
//                             T = R (result value), E (error), A (context.api request)
//   harness -> host (stderr): "\n<nonce>S<seq> \n" right before an R/E frame, so the host knows that
//                             every stderr line the tool wrote during the call has arrived
// The nonce is random per process and lives only in this module's closure; anything else on stdout or
// stderr is untrusted log text. Everything used after tool code runs is captured first, because tool
// code shares this heap and may patch globals and prototypes.

const P = Promise;
const parse = JSON.parse;
const stringify = JSON.stringify;
const StringCtor = String;
const ErrorCtor = Error;
const slice = Function.prototype.call.bind(String.prototype.slice) as (s: string, from: number, to: number) => string;
const exit = Deno.exit;
const NotCapable = Deno.errors.NotCapable;
const PermissionDenied = Deno.errors.PermissionDenied;
const inspect = Deno.inspect;
const readIn = Deno.stdin.read.bind(Deno.stdin);
const writeOut = Deno.stdout.writeSync.bind(Deno.stdout);
const writeErr = Deno.stderr.writeSync.bind(Deno.stderr);
const encoder = new TextEncoder();
const encode = encoder.encode.bind(encoder);
const decoder = new TextDecoder();
const decode = decoder.decode.bind(decoder);
const u8IndexOf = Function.prototype.call.bind(Uint8Array.prototype.indexOf) as (a: Uint8Array, v: number, from?: number) => number;
const u8Sub = Function.prototype.call.bind(Uint8Array.prototype.subarray) as (a: Uint8Array, s: number, e?: number) => Uint8Array;
const u8Set = Function.prototype.call.bind(Uint8Array.prototype.set) as (a: Uint8Array, src: Uint8Array, at: number) => void;
const regexTest = Function.prototype.call.bind(RegExp.prototype.test) as (r: RegExp, s: string) => boolean;
const freeze = Object.freeze;
const addListener = globalThis.addEventListener.bind(globalThis);
const PERMISSION_TEXT = /Requires \w+ access to|--no-npm is specified|--no-remote is specified/;

// Persistent storage survives the process otherwise (keyed by the main module path under DENO_DIR).
for (const name of ['localStorage', 'sessionStorage', 'caches']) delete (globalThis as Record<string, unknown>)[name];

const nonceBytes = crypto.getRandomValues(new Uint8Array(16));
let nonce = '';
for (const b of nonceBytes) nonce += (b < 16 ? '0' : '') + b.toString(16);

interface Job {
  t: 'job'; seq: number; source64: string; input: unknown; secrets: Record<string, string>;
  request: { id: string; workspace: string; agentId?: string }; maxResultBytes: number; reuse: boolean;
}
type Waiter = { resolve: (v: unknown) => void; reject: (e: unknown) => void };

let current: Job | null = null;
let apiSeq = 0;
const waiters: Record<number, Waiter> = Object.create(null);

class ApiError extends Error {
  code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
  }
}

function writeAll(write: (b: Uint8Array) => number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += write(u8Sub(bytes, off));
}

function frame(type: string, seq: number, json: string): void {
  if (type !== 'A') writeAll(writeErr, encode('\n' + nonce + 'S' + seq + ' \n'));
  writeAll(writeOut, encode('\n' + nonce + type + seq + ' ' + json + '\n'));
}

function text(value: unknown, fallback: string): string {
  try {
    return typeof value === 'string' ? value : value === undefined ? fallback : StringCtor(value);
  } catch {
    return fallback;
  }
}

function isPermission(err: unknown, message: string): boolean {
  if (err instanceof NotCapable || err instanceof PermissionDenied) return true;
  if (err instanceof ApiError) return err.code === 'permission.denied';
  return regexTest(PERMISSION_TEXT, message);
}

function sendError(seq: number, err: unknown, kind?: 'output'): void {
  let name = 'Error';
  let message = '';
  let stack = '';
  try {
    const e = err as { name?: unknown; message?: unknown; stack?: unknown; cause?: unknown } | null;
    if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
      name = text(e.name, 'Error');
      message = text(e.message, '');
      stack = text(e.stack, '');
      const cause = e.cause as { message?: unknown } | undefined;
      if (cause !== null && typeof cause === 'object' && typeof cause.message === 'string') message += ': ' + cause.message;
    } else {
      message = 'non-error value thrown: ' + text(err, '?');
    }
  } catch {
    message = 'unreadable error thrown';
  }
  const resolved = kind ?? (isPermission(err, message) ? 'permission' : 'tool');
  frame('E', seq, stringify({ kind: resolved, name: slice(name, 0, 200), message: slice(message, 0, 8192), stack: slice(stack, 0, 16384) }));
}

function finish(job: Job): void {
  current = null;
  if (!job.reuse) exit(0);
}

function sendResult(job: Job, value: unknown): void {
  const max = job.maxResultBytes;
  if (value === undefined) return sendError(job.seq, new ErrorCtor('execute() returned undefined; a tool must return a JSON value'), 'output');
  if (typeof value === 'string' && value.length > max) {
    return sendError(job.seq, new ErrorCtor(`result is ${value.length} characters, over the limit of ${max} bytes`), 'output');
  }
  let json: unknown;
  try {
    json = stringify(value);
  } catch (err) {
    return sendError(job.seq, new ErrorCtor(`result is not JSON-serialisable: ${text((err as Error)?.message, '?')}`), 'output');
  }
  if (typeof json !== 'string') return sendError(job.seq, new ErrorCtor(`result of type ${typeof value} is not JSON`), 'output');
  const bytes = json.length > max ? json.length : encode(json).length;
  if (bytes > max) return sendError(job.seq, new ErrorCtor(`result is ${bytes} bytes of JSON, over the limit of ${max} bytes`), 'output');
  frame('R', job.seq, json);
}

function apiCall(job: Job, op: string, args: unknown[]): Promise<unknown> {
  if (current !== job) return P.reject(new ApiError('conflict', `context.api.${op} called after the call ended`));
  let json: string;
  try {
    json = stringify({ id: ++apiSeq, op, args });
  } catch (err) {
    return P.reject(new ApiError('input.invalid', `context.api.${op} arguments are not JSON: ${text((err as Error)?.message, '?')}`));
  }
  if (json.length > job.maxResultBytes) {
    return P.reject(new ApiError('input.invalid', `context.api.${op} arguments are ${json.length} bytes, over the limit of ${job.maxResultBytes}`));
  }
  const id = apiSeq;
  return new P((resolve, reject) => {
    waiters[id] = { resolve, reject };
    frame('A', job.seq, json);
  });
}

function log(...args: unknown[]): void {
  let line = '';
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    line += (i > 0 ? ' ' : '') + (typeof a === 'string' ? a : inspect(a, { colors: false, depth: 4 }));
  }
  writeAll(writeErr, encode(line + '\n'));
}

function makeContext(job: Job): unknown {
  const call = (op: string) => (...args: unknown[]) => apiCall(job, op, args);
  return freeze({
    secrets: freeze({ ...job.secrets }),
    request: freeze({ ...job.request }),
    api: freeze({
      getBreadcrumb: call('getBreadcrumb'),
      createBreadcrumb: call('createBreadcrumb'),
      updateBreadcrumb: call('updateBreadcrumb'),
      searchBreadcrumbs: call('searchBreadcrumbs'),
    }),
    log,
  });
}

async function runJob(job: Job): Promise<void> {
  current = job;
  let execute: unknown;
  try {
    const url = 'data:application/typescript;base64,' + job.source64;
    const mod = (await import(url)) as { execute?: unknown };
    execute = mod.execute;
  } catch (err) {
    if (current === job) sendError(job.seq, err);
    return finish(job);
  }
  if (typeof execute !== 'function') {
    sendError(job.seq, new ErrorCtor('the tool does not export a function named "execute"'));
    return finish(job);
  }
  try {
    const value = await (execute as (i: unknown, c: unknown) => unknown)(job.input, makeContext(job));
    if (current === job) sendResult(job, value);
  } catch (err) {
    if (current === job) sendError(job.seq, err);
  }
  finish(job);
}

function onStray(err: unknown): void {
  const job = current;
  if (job === null) return log('uncaught error after the call ended:', text((err as Error)?.message, text(err, '?')));
  sendError(job.seq, err);
  finish(job);
}

function onFrame(line: string): void {
  const msg = parse(line) as { t?: string; id?: number; ok?: boolean; value?: unknown; code?: string; message?: string };
  if (msg.t === 'job') {
    if (current === null) void runJob(msg as unknown as Job);
    return;
  }
  if (msg.t === 'api' && typeof msg.id === 'number') {
    const waiter = waiters[msg.id];
    if (waiter === undefined) return;
    delete waiters[msg.id];
    if (msg.ok === true) waiter.resolve(msg.value);
    else waiter.reject(new ApiError(text(msg.code, 'internal'), text(msg.message, 'context.api call failed')));
  }
}

async function readLoop(): Promise<void> {
  let buf = new Uint8Array(1 << 16);
  let len = 0;
  for (;;) {
    if (len === buf.length) {
      const bigger = new Uint8Array(buf.length * 2);
      u8Set(bigger, buf, 0);
      buf = bigger;
    }
    const n = await readIn(u8Sub(buf, len));
    if (n === null) return exit(0);
    len += n;
    const filled = u8Sub(buf, 0, len);
    let start = 0;
    let nl = u8IndexOf(filled, 10, len - n);
    while (nl !== -1) {
      if (nl > start) onFrame(decode(u8Sub(filled, start, nl)));
      start = nl + 1;
      nl = u8IndexOf(filled, 10, start);
    }
    if (start > 0) {
      u8Set(buf, u8Sub(buf, start, len), 0);
      len -= start;
    }
  }
}

addListener('unhandledrejection', (e: PromiseRejectionEvent) => {
  e.preventDefault();
  onStray(e.reason);
});
addListener('error', (e: ErrorEvent) => {
  e.preventDefault();
  onStray(e.error);
});
writeAll(writeOut, encode('TRH1 ' + nonce + '\n'));
void readLoop();
