// Trusted code of every sandbox process, run before anything else: the service strips its types and
// runs it as the body of a strict function from a one-line entry module (src/sandbox/harness-file.ts:
// Deno's own import scan of a module would cost every boot ~1.5 ms for this file); without esbuild it is
// the entry module itself. Either way it is strict, its bindings are its own scope's, and it never
// imports anything: tool code is loaded by a computed `data:` import, which Deno permission-checks (a
// static import or the entry module would not be), or, for a self-contained tool, compiled as a script,
// which cannot hold an import declaration at all (compileFactory). Protocol, one line per frame:
//   host -> harness (stdin):  {"t":"job",...} and {"t":"api",...} replies, JSON per line
//   harness -> host (stdout): "TRH2" once at start, then "\n<nonce><T><seq> <json>\n" frames,
//                             T = R (result value), E (error), A (context.api request),
//                             N (a network use, written BEFORE the connection is attempted),
//                             W (the call waits on the event loop: a hint for lending its CPU slot)
//   harness -> host (stderr): "\n<nonce>S<seq> \n" right before an R/E frame, so the host knows that
//                             every stderr line the tool wrote during the call has arrived
// The nonce is random per process, chosen by the host (a CSPRNG there) and sent in the process's first
// job line only, which this code reads synchronously before any tool code exists (readFirstJob): it
// lives only in this code's closure and the host's memory, and never again crosses stdin, where a
// tool in a reused process could read. (Drawing it here cost every boot ~0.2 ms of CPU: the first
// touch of `crypto` loads Deno's Web Crypto module, bench/journal/2026-11-rounds.md.) Anything else on stdout or
// stderr is untrusted log text.
//
// Tool code shares this heap and may replace or hook any global, prototype method, getter, setter or
// species constructor (issue 9 item 8). So once tool code can run, nothing here reaches the nonce, a
// frame's text or its bytes through anything the tool can touch:
// - every primitive is captured below, before the tool module is imported, and called uncurried
//   (`uncurry(f)(thisArg, ...args)` holds the original Function.prototype.call, so later patches of
//   call/apply/bind do not matter); no method is looked up on an object at call time;
// - frame bytes live in buffers this module allocates with captured constructors and sizes itself
//   (no `length` getter, no subarray/species, no TextEncoder.prototype lookups);
// - property descriptors and records are null-prototype objects (no Object.prototype setters/getters);
// - promises of stdin reads get an own `constructor: undefined`, so `then` never consults a species;
// - Deno's internal namespace (`Deno[Deno.internal]`: core ops, webidl converters, promise hooks) is
//   removed before the tool loads.
//
// Network effects: `fetch`, `Deno.connect`, `Deno.connectTls`, `WebSocket` and `EventSource` are
// replaced by wrappers that turn their target into a string ONCE, ask Deno whether the host is
// granted, and if so write an N frame (synchronously, with the nonce) before calling the captured
// original with that same string. The tool cannot reach the originals (prototype `constructor`s point
// at the wrappers) nor un-write a frame. Paths that would bypass the wrappers are closed: the node:
// built-ins are mapped away by the import map of the spawn command (src/sandbox/command.ts),
// `process.getBuiltinModule`/`binding`/`dlopen` are removed, and `Worker` (fresh, unwrapped globals)
// is refused in a process that has network access (the host passes `net` as the harness's argument).

type AnyFn = (...args: never[]) => unknown;
const uncurry = Function.prototype.bind.bind(Function.prototype.call) as <F extends AnyFn>(
  fn: F,
) => (self: unknown, ...args: Parameters<F>) => ReturnType<F>;
const getter = (proto: object, name: PropertyKey) =>
  uncurry(Object.getOwnPropertyDescriptor(proto, name)!.get as () => unknown);

const P = Promise;
const U8 = Uint8Array;
const AB = ArrayBuffer;
const ErrorCtor = Error;
const StringCtor = String;
const parse = JSON.parse;
const stringify = JSON.stringify;
const freeze = Object.freeze;
const hasOwn = Object.hasOwn;
const defineProperty = Object.defineProperty;
const createObject = Object.create;
const getProto = Object.getPrototypeOf;
const setProto = Object.setPrototypeOf;
const getOwnDescriptor = Object.getOwnPropertyDescriptor;
const TypedArrayProto = Object.getPrototypeOf(U8.prototype) as object;
const taLength = getter(TypedArrayProto, 'length') as (a: Uint8Array) => number;
const taBuffer = getter(TypedArrayProto, 'buffer') as (a: Uint8Array) => ArrayBuffer;
const taOffset = getter(TypedArrayProto, 'byteOffset') as (a: Uint8Array) => number;
const u8IndexOf = uncurry(U8.prototype.indexOf) as (a: Uint8Array, v: number, from?: number) => number;
const u8Set = uncurry(U8.prototype.set) as (a: Uint8Array, src: Uint8Array, at: number) => void;
const strSlice = uncurry(String.prototype.slice) as (s: string, from: number, to: number) => string;
const strIndexOf = uncurry(String.prototype.indexOf) as (s: string, search: string) => number;
const charCodeAt = uncurry(String.prototype.charCodeAt) as (s: string, i: number) => number;
const promiseThen = uncurry(P.prototype.then) as (
  p: Promise<unknown>,
  ok: (v: unknown) => void,
  fail: (e: unknown) => void,
) => unknown;
const hasInstance = uncurry(Function.prototype[Symbol.hasInstance]) as (ctor: unknown, value: unknown) => boolean;
const preventDefault = uncurry(Event.prototype.preventDefault) as (e: Event) => void;
const rejectionReason = getter(PromiseRejectionEvent.prototype, 'reason') as (e: Event) => unknown;
const errorEventError = getter(ErrorEvent.prototype, 'error') as (e: Event) => unknown;
const exit = Deno.exit;
const NotCapable = Deno.errors.NotCapable;
const PermissionDenied = Deno.errors.PermissionDenied;
const inspect = Deno.inspect;
const readIn = Deno.stdin.read.bind(Deno.stdin);
const readInSync = Deno.stdin.readSync.bind(Deno.stdin);
const writeOut = Deno.stdout.writeSync.bind(Deno.stdout);
const writeErr = Deno.stderr.writeSync.bind(Deno.stderr);
const addListener = globalThis.addEventListener.bind(globalThis);
const PERMISSION_TEXTS = ['Requires ', '--no-npm is specified', '--no-remote is specified'];

/**
 * Names `fn` as tool code sees it. The service minifies the harness's identifiers too (a shorter text
 * boots faster, src/sandbox/transpile.ts), so every function or class the harness hands to tool code
 * is named here, as Deno's originals are.
 */
function named(fn: object, name: string): void {
  defineProperty(fn, 'name', { __proto__: null, value: name, configurable: true } as PropertyDescriptor);
}

// Native string <-> UTF-8 of Deno's (frozen) core when present; else the code below / TextDecoder.
const internalKey = (Deno as unknown as { internal?: symbol }).internal;
const internal =
  internalKey === undefined
    ? undefined
    : (Deno as unknown as Record<symbol, { core?: { encode?: unknown; decode?: unknown } } | undefined>)[internalKey];
const coreEncode =
  typeof internal?.core?.encode === 'function' ? (internal.core.encode as (s: string) => Uint8Array) : undefined;
const coreDecode =
  typeof internal?.core?.decode === 'function' ? (internal.core.decode as (b: Uint8Array) => string) : undefined;
// The W hint's timer: Deno's core timer when present. Reading the `setTimeout` global makes Deno load
// its (Node-compatible) timers module, ~10 ms of CPU at every boot (measured: `setTimeout;` alone
// takes a bare `deno run` from 20 to 30 ms of CPU); a tool that uses timers pays that in its own call.
type CoreTimers = { createTimer?: unknown; cancelTimer?: unknown };
const coreTimers = internal?.core as CoreTimers | undefined;
const coreCreateTimer = coreTimers?.createTimer;
const coreCancelTimer = coreTimers?.cancelTimer;
const hasCoreTimers = typeof coreCreateTimer === 'function' && typeof coreCancelTimer === 'function';
const setTimer: (fn: () => void, ms: number) => unknown = hasCoreTimers
  ? (fn, ms) => (coreCreateTimer as (...a: unknown[]) => unknown)(fn, ms, undefined, false, true, false)
  : setTimeout;
const clearTimer: (timer: unknown) => void = hasCoreTimers
  ? (coreCancelTimer as (timer: unknown) => void)
  : (clearTimeout as (timer: unknown) => void);
// The tool's module factory is compiled as a script named like a tool module (below, compileFactory):
// Deno's core evalContext when present, else an indirect eval, captured before any tool code runs.
const coreEvalContext = (internal?.core as { evalContext?: unknown } | undefined)?.evalContext;
const evalScript: ((source: string, name: string) => [unknown, unknown]) | undefined =
  typeof coreEvalContext === 'function'
    ? (coreEvalContext as (source: string, name: string) => [unknown, unknown])
    : undefined;
const indirectEval = eval;
const textDecoder = new TextDecoder();
const textDecode = uncurry(TextDecoder.prototype.decode) as (d: TextDecoder, b: Uint8Array) => string;

// Persistent storage survives the process otherwise (keyed by the main module path under DENO_DIR);
// Deno's internal namespace hands tool code core ops, promise hooks and the webidl converters.
for (const name of ['localStorage', 'sessionStorage', 'caches']) delete (globalThis as Record<string, unknown>)[name];
if (internalKey !== undefined) delete (Deno as unknown as Record<symbol, unknown>)[internalKey];

/** UTF-8 of `text` (lone surrogates become U+FFFD), in a buffer this module allocated. */
function utf8(text: string): Uint8Array {
  if (coreEncode !== undefined) return coreEncode(text);
  const n = text.length;
  let size = 0;
  for (let i = 0; i < n; i++) {
    const c = charCodeAt(text, i);
    if (c < 0x80) size += 1;
    else if (c < 0x800) size += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < n && (charCodeAt(text, i + 1) & 0xfc00) === 0xdc00) {
      size += 4;
      i++;
    } else size += 3;
  }
  const out = new U8(new AB(size));
  let j = 0;
  for (let i = 0; i < n; i++) {
    let c = charCodeAt(text, i);
    if (c < 0x80) {
      out[j++] = c;
      continue;
    }
    if (c < 0x800) {
      out[j++] = 0xc0 | (c >> 6);
      out[j++] = 0x80 | (c & 63);
      continue;
    }
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < n && (charCodeAt(text, i + 1) & 0xfc00) === 0xdc00) {
      c = 0x10000 + ((c - 0xd800) << 10) + (charCodeAt(text, ++i) - 0xdc00);
      out[j++] = 0xf0 | (c >> 18);
      out[j++] = 0x80 | ((c >> 12) & 63);
      out[j++] = 0x80 | ((c >> 6) & 63);
      out[j++] = 0x80 | (c & 63);
      continue;
    }
    if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
    out[j++] = 0xe0 | (c >> 12);
    out[j++] = 0x80 | ((c >> 6) & 63);
    out[j++] = 0x80 | (c & 63);
  }
  return out;
}

function fromUtf8(bytes: Uint8Array): string {
  return coreDecode !== undefined ? coreDecode(bytes) : textDecode(textDecoder, bytes);
}

/** A view of `len` bytes of `bytes` from `from`, made without subarray (no species lookup). */
function view(bytes: Uint8Array, from: number, len: number): Uint8Array {
  return new U8(taBuffer(bytes), taOffset(bytes) + from, len);
}

/** The frames' nonce: '' until the first job brings it (takeNonce). */
let nonce = '';
const NONCE_CHARS = 32;

/** Keeps the nonce of the process's first job (32 lowercase hex digits); false when it has none. */
function takeNonce(job: unknown): boolean {
  const value = own(job, 'nonce');
  if (typeof value !== 'string' || value.length !== NONCE_CHARS) return false;
  for (let i = 0; i < NONCE_CHARS; i++) {
    const c = charCodeAt(value, i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  nonce = value;
  return true;
}

interface Job {
  t: 'job';
  seq: number;
  source64: string;
  lang: 'js' | 'ts';
  input: unknown;
  secrets: Record<string, string>;
  request: { id: string; workspace: string; agentId?: string };
  maxResultBytes: number;
  reuse: boolean;
  /** The frames' nonce: in the process's first job only. */
  nonce?: string;
  /** The tool as a module factory (compiled once per process; its text `code` only the first time). */
  factory?: { id: string; code?: string };
}
type Waiter = { resolve: (v: unknown) => void; reject: (e: unknown) => void };

let current: Job | null = null;
let apiSeq = 0;
const waiters: Record<number, Waiter> = createObject(null);

class ApiError extends ErrorCtor {
  code: string;
  constructor(code: string, message: string) {
    super(message);
    defineProperty(this, 'name', {
      __proto__: null,
      value: 'ApiError',
      writable: true,
      configurable: true,
    } as PropertyDescriptor);
    defineProperty(this, 'code', {
      __proto__: null,
      value: code,
      writable: true,
      enumerable: true,
      configurable: true,
    } as PropertyDescriptor);
  }
}
named(ApiError, 'ApiError');

function own(record: unknown, key: string): unknown {
  return record !== null && typeof record === 'object' && hasOwn(record, key)
    ? (record as Record<string, unknown>)[key]
    : undefined;
}

function writeAll(write: (b: Uint8Array) => number, bytes: Uint8Array): void {
  const total = taLength(bytes);
  let off = 0;
  while (off < total) {
    const n = write(off === 0 ? bytes : view(bytes, off, total - off));
    if (!(n > 0)) return;
    off += n;
  }
}

function frame(type: string, seq: number, json: string): void {
  if (type === 'R' || type === 'E') writeAll(writeErr, utf8('\n' + nonce + 'S' + seq + ' \n'));
  writeAll(writeOut, utf8('\n' + nonce + type + seq + ' ' + json + '\n'));
}

function text(value: unknown, fallback: string): string {
  try {
    if (typeof value === 'string') return value;
    if (value === undefined) return fallback;
    const s = StringCtor(value);
    return typeof s === 'string' ? s : fallback;
  } catch {
    return fallback;
  }
}

function isPermission(err: unknown, message: string): boolean {
  try {
    if (hasInstance(NotCapable, err) || hasInstance(PermissionDenied, err)) return true;
    if (hasInstance(ApiError, err)) return own(err, 'code') === 'permission.denied';
  } catch {
    // a hostile prototype chain (Proxy): classify by the message only
  }
  for (let i = 0; i < PERMISSION_TEXTS.length; i++) {
    const needle = PERMISSION_TEXTS[i] as string;
    const at = strIndexOf(message, needle);
    if (at !== -1 && (needle !== 'Requires ' || strIndexOf(strSlice(message, at, at + 40), ' access to') !== -1))
      return true;
  }
  return false;
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
      if (cause !== null && typeof cause === 'object' && typeof cause.message === 'string')
        message += ': ' + cause.message;
    } else {
      message = 'non-error value thrown: ' + text(err, '?');
    }
  } catch {
    message = 'unreadable error thrown';
  }
  const resolved = kind ?? (isPermission(err, message) ? 'permission' : 'tool');
  // A tool may classify its own failure with `error.code` (one of a few codes, checked by the host).
  let code: unknown;
  try {
    code = own(err, 'code');
  } catch {
    code = undefined;
  }
  const json = stringify({
    __proto__: null,
    kind: resolved,
    name: strSlice(name, 0, 200),
    message: strSlice(message, 0, 8192),
    stack: strSlice(stack, 0, 16384),
    code: typeof code === 'string' ? strSlice(code, 0, 64) : undefined,
  });
  frame('E', seq, json);
}

function finish(job: Job): void {
  current = null;
  if (!job.reuse) exit(0);
}

function sendResult(job: Job, value: unknown): void {
  const max = job.maxResultBytes;
  if (value === undefined)
    return sendError(job.seq, new ErrorCtor('execute() returned undefined; a tool must return a JSON value'), 'output');
  if (typeof value === 'string' && value.length > max) {
    return sendError(
      job.seq,
      new ErrorCtor(`result is ${value.length} characters, over the limit of ${max} bytes`),
      'output',
    );
  }
  let json: unknown;
  try {
    json = stringify(value);
  } catch (err) {
    let why = '?';
    try {
      why = text((err as Error)?.message, '?');
    } catch {
      // unreadable
    }
    return sendError(job.seq, new ErrorCtor(`result is not JSON-serialisable: ${why}`), 'output');
  }
  if (typeof json !== 'string')
    return sendError(job.seq, new ErrorCtor(`result of type ${typeof value} is not JSON`), 'output');
  const bytes = json.length > max ? json.length : taLength(utf8(json));
  if (bytes > max)
    return sendError(
      job.seq,
      new ErrorCtor(`result is ${bytes} bytes of JSON, over the limit of ${max} bytes`),
      'output',
    );
  frame('R', job.seq, json);
}

function rejected(err: unknown): Promise<never> {
  return new P<never>((_resolve, reject) => reject(err));
}

function apiCall(job: Job, op: string, args: unknown[]): Promise<unknown> {
  if (current !== job) return rejected(new ApiError('conflict', `context.api.${op} called after the call ended`));
  let json: unknown;
  const id = ++apiSeq;
  try {
    json = stringify({ __proto__: null, id, op, args });
  } catch (err) {
    return rejected(
      new ApiError('input.invalid', `context.api.${op} arguments are not JSON: ${text((err as Error)?.message, '?')}`),
    );
  }
  if (typeof json !== 'string')
    return rejected(new ApiError('input.invalid', `context.api.${op} arguments are not JSON`));
  const bytes = json.length > job.maxResultBytes ? json.length : taLength(utf8(json));
  if (bytes > job.maxResultBytes) {
    return rejected(
      new ApiError(
        'input.invalid',
        `context.api.${op} arguments are ${bytes} bytes, over the limit of ${job.maxResultBytes}`,
      ),
    );
  }
  return new P((resolve, reject) => {
    const waiter: Waiter = createObject(null);
    waiter.resolve = resolve;
    waiter.reject = reject;
    waiters[id] = waiter;
    if (!reading) readMore(); // the reply comes on stdin (a single-use process reads it from now on)
    frame('A', job.seq, json as string);
  });
}

function log(...args: unknown[]): void {
  let line = '';
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    line += (i > 0 ? ' ' : '') + (typeof a === 'string' ? a : inspect(a, { colors: false, depth: 4 }));
  }
  writeAll(writeErr, utf8(line + '\n'));
}
named(log, 'log');

/** Largest progress value (characters of its JSON); bigger ones throw in the tool. */
const PROGRESS_MAX_CHARS = 4096;

/**
 * `context.progress(value)`: a JSON value (e.g. `{ text: "token" }`) reported while the call runs,
 * framed like the result (nonce + 'P' + seq); the host forwards it to the caller's onProgress.
 * Ignored after the call ended. Every frame counts against the call's output cap.
 */
function progress(job: Job, value: unknown): void {
  if (current !== job) return;
  let json: unknown;
  try {
    json = stringify(value);
  } catch {
    throw new TypeError('context.progress: the value is not JSON-serialisable');
  }
  if (typeof json !== 'string') throw new TypeError('context.progress: the value is not JSON');
  if (json.length > PROGRESS_MAX_CHARS)
    throw new RangeError(
      `context.progress: ${json.length} characters of JSON, over the limit of ${PROGRESS_MAX_CHARS}`,
    );
  frame('P', job.seq, json);
}

function makeContext(job: Job): unknown {
  const call =
    (op: string) =>
    (...args: unknown[]) =>
      apiCall(job, op, args);
  return freeze({
    secrets: freeze({ ...job.secrets }),
    request: freeze({ ...job.request }),
    api: freeze({
      getBreadcrumb: call('getBreadcrumb'),
      createBreadcrumb: call('createBreadcrumb'),
      updateBreadcrumb: call('updateBreadcrumb'),
      searchBreadcrumbs: call('searchBreadcrumbs'),
    }),
    // Nested calls: the host writes a tool.request.v1 for the named tool and relays its answer
    // (src/tool-context/tool-calls.ts); refused there unless the tool has a `permissions.tools` grant.
    tools: freeze({
      call: (name: unknown, input?: unknown, options?: unknown) =>
        apiCall(job, 'callTool', [name, input ?? {}, options ?? {}]),
    }),
    log,
    progress: (value: unknown) => progress(job, value),
  });
}

// ---- network effects (see the header) ----
const netAccess = Deno.args[0] === 'net';
const origFetch = globalThis.fetch;
const origConnect = Deno.connect;
const origConnectTls = Deno.connectTls;
const OrigWorker = globalThis.Worker;
const URLCtor = URL;
const TypeErrorCtor = TypeError;
const construct = Reflect.construct;
const apply = Reflect.apply;
const assign = Object.assign;
const urlHref = getter(URL.prototype, 'href') as (u: URL) => string;
const urlProtocol = getter(URL.prototype, 'protocol') as (u: URL) => string;
const urlHostname = getter(URL.prototype, 'hostname') as (u: URL) => string;
const urlPort = getter(URL.prototype, 'port') as (u: URL) => string;
// Reading `Request` makes Deno load its fetch classes (~10 ms of every boot): the class and its `url`
// getter are captured on the first read of the global (before tool code gets it) or the first fetch
// of an object, whichever comes first; a Request instance cannot be had before either.
const requestGet = getOwnDescriptor(globalThis, 'Request')?.get;
let RequestCtor: unknown;
let requestUrl: ((r: Request) => string) | undefined;
function loadRequest(): void {
  if (requestUrl !== undefined) return;
  const R = requestGet === undefined ? Request : (uncurry(requestGet as () => unknown)(globalThis) as typeof Request);
  requestUrl = uncurry(getOwnDescriptor(R.prototype, 'url')!.get as () => string) as (r: Request) => string;
  RequestCtor = R;
}
if (requestGet === undefined) loadRequest();
else {
  defineProperty(globalThis, 'Request', {
    __proto__: null,
    get() {
      loadRequest();
      return RequestCtor;
    },
    set(value: unknown) {
      defineProperty(globalThis, 'Request', {
        __proto__: null,
        value,
        writable: true,
        configurable: true,
        enumerable: false,
      } as PropertyDescriptor);
    },
    configurable: true,
    enumerable: getOwnDescriptor(globalThis, 'Request')!.enumerable,
  } as PropertyDescriptor);
}
const permissions = Deno.permissions;
const querySync = uncurry(Deno.permissions.querySync) as (
  self: Deno.Permissions,
  d: Deno.PermissionDescriptor,
) => Deno.PermissionStatus;
const permState = getter(Deno.PermissionStatus.prototype, 'state') as (s: Deno.PermissionStatus) => string;
const DEFAULT_PORTS: Record<string, string> = createObject(null);
DEFAULT_PORTS['http:'] = '80';
DEFAULT_PORTS['https:'] = '443';
DEFAULT_PORTS['ws:'] = '80';
DEFAULT_PORTS['wss:'] = '443';

/** Reports a use of `host:port` (when Deno grants it) before it happens; an Error when it must not happen. */
function reportNet(kind: string, hostname: string, port: string): Error | undefined {
  const job = current;
  if (job === null) return new ApiError('conflict', 'network use after the call ended');
  let state = 'granted';
  try {
    const descriptor = createObject(null) as Deno.NetPermissionDescriptor;
    descriptor.name = 'net';
    descriptor.host = hostname + ':' + port;
    state = permState(querySync(permissions, descriptor));
  } catch {
    // unknown: count it (over-counting is the safe side)
  }
  // Not granted: Deno refuses the call itself, nothing reaches out.
  if (state !== 'granted') return undefined;
  frame('N', job.seq, stringify({ __proto__: null, kind, target: hostname + ':' + port }));
  return undefined;
}

/** Reports the use of an http(s)/ws(s) URL; other schemes (data:, blob:) are no network use. */
function reportUrl(kind: string, href: string): Error | undefined {
  const url = new URLCtor(href);
  const protocol = urlProtocol(url);
  const fallback = DEFAULT_PORTS[protocol];
  if (fallback === undefined) return undefined;
  let hostname = urlHostname(url);
  if (hostname === '') return undefined;
  if (charCodeAt(hostname, 0) === 91) hostname = strSlice(hostname, 1, hostname.length - 1); // [v6]
  const port = urlPort(url);
  return reportNet(kind, hostname, port === '' ? fallback : port);
}

/** A URL argument as one string (read once: a hostile object cannot answer differently later). */
function hrefOf(value: unknown): string {
  if (value !== null && typeof value === 'object') {
    try {
      if (hasInstance(URLCtor, value)) return urlHref(value as URL);
    } catch {
      // a Proxy passing instanceof: use its string
    }
  }
  return StringCtor(value);
}

function wrappedFetch(input: unknown, init?: unknown): Promise<unknown> {
  let arg: unknown;
  let href: string;
  try {
    let isRequest = false;
    if (input !== null && typeof input === 'object') {
      try {
        loadRequest();
        isRequest = hasInstance(RequestCtor, input);
        if (isRequest) href = requestUrl!(input as Request);
      } catch {
        isRequest = false;
      }
    }
    if (isRequest) arg = input;
    else arg = href = hrefOf(input);
    const refused = reportUrl('net.fetch', href!);
    if (refused !== undefined) return rejected(refused);
  } catch (err) {
    return rejected(err);
  }
  return apply(origFetch, undefined, init === undefined ? [arg] : [arg, init]) as Promise<unknown>;
}

/** Deno.connect / connectTls: the options copied once, the copy reported and handed on. */
function wrapConnect(orig: (o: never) => Promise<unknown>): (options: unknown) => Promise<unknown> {
  return function connect(options: unknown): Promise<unknown> {
    let copy: Record<string, unknown>;
    try {
      copy = assign(createObject(null), options) as Record<string, unknown>;
      const transport = copy.transport ?? 'tcp';
      if (transport === 'tcp') {
        const hostname = copy.hostname === undefined ? '127.0.0.1' : StringCtor(copy.hostname);
        copy.hostname = hostname;
        const refused = reportNet('net.connect', hostname, StringCtor(copy.port));
        if (refused !== undefined) return rejected(refused);
      }
    } catch (err) {
      return rejected(err);
    }
    return apply(orig, undefined, [copy]) as Promise<unknown>;
  };
}

/** A constructor taking a URL first (WebSocket, EventSource) that reports before it constructs. */
function wrapUrlClass(Orig: new (...args: never[]) => unknown, kind: string): unknown {
  const Wrapper = function (this: unknown, url: unknown, second?: unknown): unknown {
    if (new.target === undefined) throw new TypeErrorCtor('Failed to construct: please use the "new" operator');
    const href = hrefOf(url);
    const refused = reportUrl(kind, href);
    if (refused !== undefined) throw refused;
    return construct(Orig, second === undefined ? [href] : [href, second], new.target === Wrapper ? Orig : new.target);
  };
  adopt(Wrapper, Orig);
  return Wrapper;
}

const CONSTANT_STATICS = ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED'];
/**
 * Makes `Wrapper` stand in for `Orig`: same prototype and statics, and the prototype points back at it.
 * (May run after tool code patched globals, see wrapLazyGlobal: captured functions and indexed loops only.)
 */
function adopt(Wrapper: object, Orig: { prototype: unknown; name: string }): void {
  const proto = Orig.prototype as object;
  defineProperty(Wrapper, 'prototype', { __proto__: null, value: proto, writable: false } as PropertyDescriptor);
  defineProperty(proto, 'constructor', {
    __proto__: null,
    value: Wrapper,
    writable: true,
    configurable: true,
    enumerable: false,
  } as PropertyDescriptor);
  defineProperty(Wrapper, 'name', { __proto__: null, value: Orig.name, configurable: true } as PropertyDescriptor);
  setProto(Wrapper, getProto(Orig));
  for (let i = 0; i < 4; i++) {
    const key = CONSTANT_STATICS[i]!;
    if (hasOwn(Orig, key))
      defineProperty(Wrapper, key, {
        __proto__: null,
        value: (Orig as unknown as Record<string, unknown>)[key],
        enumerable: true,
      } as PropertyDescriptor);
  }
}

function replaceGlobal(owner: object, name: string, value: unknown): void {
  defineProperty(owner, name, {
    __proto__: null,
    value,
    writable: true,
    configurable: true,
    enumerable: false,
  } as PropertyDescriptor);
}

named(wrappedFetch, 'fetch');
replaceGlobal(globalThis, 'fetch', wrappedFetch);
const wrappedConnect = wrapConnect(origConnect as never);
named(wrappedConnect, 'connect');
replaceGlobal(Deno, 'connect', wrappedConnect);
const wrappedConnectTls = wrapConnect(origConnectTls as never);
named(wrappedConnectTls, 'connectTls');
replaceGlobal(Deno, 'connectTls', wrappedConnectTls);
/**
 * Replaces global `name` with `wrap(original)`. Deno creates some globals (WebSocket, EventSource) only
 * when first read, ~3 and ~9 ms of every boot: those keep a getter that wraps the original on that
 * first read, so the original never reaches tool code either way.
 */
function wrapLazyGlobal(name: string, wrap: (orig: never) => unknown): void {
  const desc = getOwnDescriptor(globalThis, name);
  if (desc === undefined) return;
  if (desc.get === undefined) {
    if (desc.value !== undefined) replaceGlobal(globalThis, name, wrap(desc.value as never));
    return;
  }
  const get = uncurry(desc.get as () => unknown);
  let wrapped: unknown;
  let done = false;
  defineProperty(globalThis, name, {
    __proto__: null,
    get() {
      if (!done) {
        const orig = get(globalThis);
        wrapped = orig === undefined ? undefined : wrap(orig as never);
        done = true;
      }
      return wrapped;
    },
    set(value: unknown) {
      replaceGlobal(globalThis, name, value);
    },
    configurable: true,
    enumerable: desc.enumerable,
  } as PropertyDescriptor);
}

wrapLazyGlobal('WebSocket', (orig) => wrapUrlClass(orig, 'net.connect'));
wrapLazyGlobal('EventSource', (orig) => wrapUrlClass(orig, 'net.fetch'));
if (netAccess && OrigWorker !== undefined) {
  const NoWorker = function (): never {
    throw new ErrorCtor('Worker is not available to a tool with network access: its network use could not be counted');
  };
  adopt(NoWorker, OrigWorker as never);
  replaceGlobal(globalThis, 'Worker', NoWorker);
}
// node: built-ins would bypass the wrappers (the import map refuses their import specifiers), and so
// would `process.getBuiltinModule`/`binding`/`dlopen`. Deno builds `process` (and its Node layer) only
// when the global is first read, which costs ~30 ms of every boot; so instead of reading it here, the
// lazy getters of the Node globals (process, Buffer, setImmediate, clearImmediate) are replaced by ones
// that strip those functions from `process` before any of them hands a value to tool code.
const PROCESS_ESCAPES = ['getBuiltinModule', 'binding', '_linkedBinding', 'dlopen'];
const NODE_GLOBALS = ['process', 'Buffer', 'setImmediate', 'clearImmediate'];
// (may run after tool code patched globals: indexed loops and captured functions only)
function closeProcessObject(nodeProcess: unknown): void {
  if (nodeProcess === undefined || nodeProcess === null) return;
  for (let i = 0; i < 4; i++) {
    let owner: object | null = nodeProcess as object;
    while (owner !== null) {
      if (hasOwn(owner, PROCESS_ESCAPES[i]!)) delete (owner as Record<string, unknown>)[PROCESS_ESCAPES[i]!];
      owner = getProto(owner) as object | null;
    }
  }
}
const processGet = getOwnDescriptor(globalThis, 'process')?.get;
let processClosed = false;
const closeProcess = (): void => {
  if (processClosed) return;
  closeProcessObject(uncurry(processGet as () => unknown)(globalThis));
  processClosed = true;
};
if (processGet === undefined) closeProcessObject((globalThis as unknown as { process?: unknown }).process);
else {
  for (let i = 0; i < 4; i++) {
    const name = NODE_GLOBALS[i]!;
    const desc = getOwnDescriptor(globalThis, name);
    if (desc === undefined || desc.get === undefined) continue;
    const get = uncurry(desc.get as () => unknown);
    const enumerable = desc.enumerable;
    defineProperty(globalThis, name, {
      __proto__: null,
      get() {
        closeProcess();
        return get(globalThis);
      },
      set(value: unknown) {
        defineProperty(globalThis, name, {
          __proto__: null,
          value,
          writable: true,
          configurable: true,
          enumerable,
        } as PropertyDescriptor);
      },
      configurable: true,
      enumerable,
    } as PropertyDescriptor);
  }
}

// The module factory of this process's tool (one tool version per process): compiled once, then each
// call runs the module body in a new scope of its own (the host turned the module into CommonJS wrapped
// in `export default function (module, exports, __export, __toCommonJS) {...}`), so module-level state
// starts over every call as with a new module instance, without an import per call. In process mode
// too: compiling it as a script saves Deno's module load (URL decode, dependency scan, module graph),
// ~1 ms of CPU per process-mode call (bench/journal/2026-11-rounds.md).
let factoryId: string | undefined;
let factoryFn: unknown;

const FACTORY_HEAD = 'export default ';
// Frames of the factory read `data:application/javascript;base64,#0:L:C`, as a data: module's would
// (#0: never a call's sequence number): the host maps them to `tool.ts` and its own lines.
const FACTORY_NAME = 'data:application/javascript;base64,#0';

/**
 * The factory function of the module text `code`, compiled as a classic script: a factory has no
 * import declaration (a script cannot hold one; the host builds factories only for self-contained
 * tools), its text is strict (the directive, as a module is), its scope is its own function's, and a
 * dynamic `import()` in it is permission-checked like any other (and resolves against the data: name,
 * as from a data: module; tested). Without Deno's evalContext (another Deno), an indirect eval: the
 * same, but a relative import resolves against this file's URL (still permission-checked) and stack
 * frames read `<name>, <anonymous>:L:C`. `'use strict'; (` is as long as FACTORY_HEAD: line 1's
 * columns are the factory's.
 */
function compileFactory(code: string): unknown {
  if (strSlice(code, 0, FACTORY_HEAD.length) !== FACTORY_HEAD)
    throw new ErrorCtor('malformed job: a tool module factory must start with ' + FACTORY_HEAD);
  const script = "'use strict'; (" + strSlice(code, FACTORY_HEAD.length, code.length) + '\n)';
  if (evalScript === undefined) return indirectEval(script + '\n//# sourceURL=' + FACTORY_NAME);
  const out = evalScript(script, FACTORY_NAME);
  if (out[1] !== null && out[1] !== undefined) throw own(out[1], 'thrown');
  return out[0];
}

async function loadTool(job: Job): Promise<unknown> {
  const factory = job.factory;
  if (factory === undefined || factory === null) {
    // A fragment unique per call makes a new module instance: module-level state of one call is
    // never seen by the next call a warm process serves (the module map is keyed by the full URL).
    const url =
      (job.lang === 'js' ? 'data:application/javascript;base64,' : 'data:application/typescript;base64,') +
      job.source64 +
      '#' +
      job.seq;
    const mod = (await import(url)) as { execute?: unknown };
    return mod.execute;
  }
  const id = own(factory, 'id');
  if (typeof id !== 'string' || id === '') throw new ErrorCtor('malformed job: factory without an id');
  if (factoryId !== id) {
    const code = own(factory, 'code');
    if (typeof code !== 'string')
      throw new ErrorCtor('the tool module factory ' + id + ' was never sent to this process');
    factoryFn = compileFactory(code);
    factoryId = id;
  }
  if (typeof factoryFn !== 'function') throw new ErrorCtor('the tool module factory is not a function');
  // The module body calls `__export(tool_exports, { execute: () => execute, ... })` once: keep the
  // thunks, read `execute` through its thunk after the body ran (as an ES module's live binding).
  // These helpers replace esbuild's, which would read globals an earlier call may have patched.
  let thunks: unknown;
  const record = createObject(null) as { exports: unknown };
  record.exports = createObject(null);
  const exportAll = (_target: unknown, all: unknown): void => {
    thunks = all;
  };
  const toCommonJS = (mod: unknown): unknown => mod;
  apply(factoryFn as AnyFn, undefined, [record, record.exports, exportAll, toCommonJS]);
  const thunk = own(thunks, 'execute');
  return typeof thunk === 'function' ? apply(thunk as AnyFn, undefined, []) : undefined;
}

async function runJob(job: Job): Promise<void> {
  current = job;
  let execute: unknown;
  try {
    execute = await loadTool(job);
  } catch (err) {
    if (current === job) sendError(job.seq, err);
    return finish(job);
  }
  if (typeof execute !== 'function') {
    sendError(job.seq, new ErrorCtor('the tool does not export a function named "execute"'));
    return finish(job);
  }
  // A W frame says the call waits on the event loop (a timer, the network, a context.api reply, a
  // nested call): its promise did not settle within the microtasks of the call, so a macrotask ran
  // first. A call that only computes never sends one. The host lends the call's CPU slot only after
  // this hint AND the kernel showing the process asleep (src/sandbox/activity.ts).
  // The hint's timer is only made for a call still running HINT_HOPS microtasks after execute()
  // returned: a process's first timer costs Deno ~0.15 ms (its timer queue starts), and most calls
  // settle sooner. A timer made then still fires only after every pending microtask.
  let settled = false;
  let hint: unknown;
  try {
    const pending = (execute as (i: unknown, c: unknown) => unknown)(job.input, makeContext(job));
    afterMicrotasks(HINT_HOPS, () => {
      if (settled || current !== job) return;
      hint = setTimer(() => {
        if (current === job) frame('W', job.seq, '{}');
      }, 0);
    });
    const value = await pending;
    settled = true;
    if (current === job) sendResult(job, value);
  } catch (err) {
    settled = true;
    if (current === job) sendError(job.seq, err);
  }
  if (hint !== undefined) clearTimer(hint);
  finish(job);
}

function onStray(err: unknown): void {
  const job = current;
  if (job === null) return log('uncaught error after the call ended:', text((err as Error)?.message, text(err, '?')));
  sendError(job.seq, err);
  finish(job);
}

function onFrame(line: string): void {
  const msg = parse(line) as unknown;
  const t = own(msg, 't');
  if (t === 'job') {
    if (nonce === '' && !takeNonce(msg)) {
      writeAll(writeErr, utf8('tools-runner harness: the first job carries no valid nonce\n'));
      return exit(2);
    }
    if (current === null) void runJob(msg as Job);
    return;
  }
  const id = own(msg, 'id');
  if (t === 'api' && typeof id === 'number') {
    const waiter = waiters[id];
    if (waiter === undefined) return;
    delete waiters[id];
    if (own(msg, 'ok') === true) waiter.resolve(own(msg, 'value'));
    else
      waiter.reject(
        new ApiError(text(own(msg, 'code'), 'internal'), text(own(msg, 'message'), 'context.api call failed')),
      );
  }
}

// stdin: read into a growing buffer, one JSON frame per line. The read promise is Deno's; an own
// `constructor: undefined` makes `then` use the intrinsic Promise, whatever tool code did to species.
let inBuf = new U8(new AB(1 << 16));
let inCap = 1 << 16;
let inLen = 0;
/** Whether an asynchronous read of stdin is under way (from the first readMore on, for good). */
let reading = false;
const undefinedConstructor = { __proto__: null, value: undefined } as PropertyDescriptor;

/** Microtask hops after execute() returned before a still-running call gets its W hint's timer. */
const HINT_HOPS = 16;
// A settled promise of this code's own: `then` on it never reads a species (own `constructor`).
const settledPromise = P.resolve(undefined);
defineProperty(settledPromise, 'constructor', undefinedConstructor);

/** Calls `fn` after `hops` microtasks (each hop queued behind what is queued by then). */
function afterMicrotasks(hops: number, fn: () => void): void {
  const step = (): void => {
    if (--hops > 0) promiseThen(settledPromise, step, step);
    else fn();
  };
  promiseThen(settledPromise, step, step);
}

function roomToRead(): void {
  if (inLen === inCap) {
    const bigger = new U8(new AB(inCap * 2));
    u8Set(bigger, inBuf, 0);
    inBuf = bigger;
    inCap *= 2;
  }
}

function readMore(): void {
  reading = true;
  roomToRead();
  const pending = readIn(view(inBuf, inLen, inCap - inLen));
  defineProperty(pending, 'constructor', undefinedConstructor);
  promiseThen(pending, onRead, () => exit(0));
}

// Until the first job arrives no tool code has run here, so nothing else can want the event loop:
// the wait for it blocks in a read on this thread. An asynchronous read of stdin runs on one of
// Deno's blocking-pool threads, which then wakes this one; the direct read saves that hop (a
// Node <-> Deno round trip 50 ms apart: 0.12-0.17 ms instead of 0.29-0.34 ms p50, and ~0.15 ms of
// Deno's CPU per read, measured). Every later read is asynchronous: tool code's timers, fetches
// and context.api replies share the event loop with it.
function readFirstJob(): void {
  while (current === null) {
    roomToRead();
    let n: number | null;
    try {
      n = readInSync(view(inBuf, inLen, inCap - inLen));
    } catch {
      return exit(0);
    }
    if (n === null) return exit(0);
    takeFrames(n);
  }
  // A single-use process (reuse: false) waits for nothing more on stdin unless its tool calls
  // context.api (apiCall starts reading then): starting an asynchronous read costs Deno a
  // blocking-pool thread, ~0.1 ms of CPU per process. Its end comes from the host either way: the
  // process exits after its job, or is killed (timeout; its launcher's or the service's death).
  const job = current as Job | null; // (set by takeFrames; TypeScript narrowed it to null)
  if (job === null || job.reuse !== false) readMore();
}

function onRead(result: unknown): void {
  if (typeof result !== 'number') return exit(0);
  takeFrames(result);
  readMore();
}

/** Handles every whole frame in the buffer after `n` more bytes were read into it. */
function takeFrames(n: number): void {
  inLen += n;
  let start = 0;
  let nl = u8IndexOf(inBuf, 10, inLen - n);
  while (nl !== -1 && nl < inLen) {
    if (nl > start) onFrame(fromUtf8(view(inBuf, start, nl - start)));
    start = nl + 1;
    nl = u8IndexOf(inBuf, 10, start);
  }
  if (start > 0) {
    u8Set(inBuf, view(inBuf, start, inLen - start), 0);
    inLen -= start;
  }
}

addListener('unhandledrejection', (e: PromiseRejectionEvent) => {
  preventDefault(e);
  onStray(rejectionReason(e));
});
addListener('error', (e: ErrorEvent) => {
  preventDefault(e);
  onStray(errorEventError(e));
});
writeAll(writeOut, utf8('TRH2\n'));
readFirstJob();
