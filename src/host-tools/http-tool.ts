// The http transport of Runloop host tools: fill the URL template from the arguments, resolve
// `${secret:NAME}` in static headers, send the arguments as a JSON body (POST, PUT, PATCH), and
// map the answer: 2xx JSON validated against result_schema; 5xx, timeouts and connection errors
// -> dependency.unavailable (retryable); 400/422 input.invalid, 401/403 permission.denied, 404
// tool.error, 409 conflict, 429 rate.exceeded (retryable), other 4xx tool.error; redirects are not
// followed (a redirect could leave the granted host) and answer tool.error.

import { ErrorCode } from '../errors.js';
import { failure, type ExecutionFailure } from '../result.js';
import { capBytes, neverSent, sanitizeText, type CallOutcome, type OnSend } from './call-outcome.js';
import type { TransportFacts } from '../audit/audit-log.js';
import { describeIssues, type SchemaCache } from './schema-validator.js';
import { fillSecretPlaceholders } from './secrets.js';
import type { HostTool, HttpTransport } from './types.js';

/** Inputs of one http call, already checked and with secrets resolved. */
export interface HttpToolCall {
  tool: HostTool;
  transport: HttpTransport;
  input: Record<string, unknown>;
  secrets: ReadonlyMap<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
  schemas: SchemaCache;
  signal?: AbortSignal;
  /** Called with the filled URL right before the request is sent (the call's effect). */
  onSend?: OnSend;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const STATUS_CODES: Record<number, ErrorCode> = {
  400: ErrorCode.InputInvalid,
  422: ErrorCode.InputInvalid,
  401: ErrorCode.PermissionDenied,
  403: ErrorCode.PermissionDenied,
  404: ErrorCode.ToolError,
  409: ErrorCode.Conflict,
  429: ErrorCode.RateExceeded,
};

/** Fills `{name}` placeholders with encodeURIComponent(argument); a missing or non-scalar one is an error. */
export function fillUrlTemplate(
  template: string,
  input: Record<string, unknown>,
): { ok: true; url: string } | { ok: false; message: string } {
  let problem: string | undefined;
  const url = template.replace(/\{([^{}]*)\}/g, (_whole, name: string) => {
    const value = input[name];
    if (value === undefined || value === null)
      problem ??= `url placeholder {${name}} has no value: argument ${JSON.stringify(name)} is missing`;
    else if (typeof value === 'object')
      problem ??= `url placeholder {${name}} needs a string, number or boolean argument (got ${Array.isArray(value) ? 'array' : 'object'})`;
    else if (value === '.' || value === '..')
      problem ??= `url placeholder {${name}} cannot be ${JSON.stringify(value)}`;
    else return encodeURIComponent(String(value));
    return '';
  });
  return problem === undefined ? { ok: true, url } : { ok: false, message: problem };
}

function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

async function readCapped(res: Response, max: number): Promise<{ body: Buffer; total: number; over: boolean }> {
  const chunks: Buffer[] = [];
  let total = 0;
  if (!res.body) return { body: Buffer.alloc(0), total, over: false };
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return { body: Buffer.concat(chunks), total, over: true };
    }
    chunks.push(Buffer.from(value));
  }
  return { body: Buffer.concat(chunks), total, over: false };
}

function fetchFailure(err: unknown, call: HttpToolCall, timeout: AbortSignal, what: string): ExecutionFailure {
  if (call.signal?.aborted)
    return {
      ...failure(ErrorCode.Internal, `host tool ${JSON.stringify(call.tool.name)} was cancelled before it finished`),
      retryable: false,
    };
  if (timeout.aborted)
    return failure(ErrorCode.DependencyUnavailable, `${what} timed out after ${call.timeoutMs} ms`, {
      timeoutMs: call.timeoutMs,
    });
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  const reason =
    typeof cause?.code === 'string'
      ? cause.code
      : typeof cause?.message === 'string'
        ? cause.message
        : err instanceof Error
          ? err.message
          : String(err);
  return failure(ErrorCode.DependencyUnavailable, `${what} failed: ${sanitizeText(reason)}`);
}

function answer(
  status: number,
  res: Response,
  body: Buffer,
  call: HttpToolCall,
  what: string,
): { ok: true; output: unknown } | { ok: false; error: ExecutionFailure } {
  const text = body.toString('utf8');
  if (status >= 300) {
    const snippet = capBytes(sanitizeText(text).replace(/\s+/g, ' ').trim(), 300);
    if (status < 400)
      return {
        ok: false,
        error: failure(ErrorCode.ToolError, `${what} answered ${status}; redirects are not followed`, { status }),
      };
    const code = STATUS_CODES[status] ?? (status >= 500 ? ErrorCode.DependencyUnavailable : ErrorCode.ToolError);
    const wait = retryAfterMs(res.headers.get('retry-after'));
    const details = { status, ...(wait === undefined ? {} : { retryAfterMs: wait }) };
    return {
      ok: false,
      error: failure(code, `${what} answered ${status}${snippet === '' ? '' : `: ${snippet}`}`, details),
    };
  }
  let output: unknown = {};
  if (text.trim() !== '') {
    try {
      output = JSON.parse(text);
    } catch (err) {
      const reason = capBytes(sanitizeText(err instanceof Error ? err.message : String(err)), 200);
      return {
        ok: false,
        error: failure(ErrorCode.OutputInvalid, `response of ${what} is not valid JSON: ${reason}`, { status }),
      };
    }
  }
  const issues = call.tool.resultSchema ? call.schemas.check(call.tool.resultSchema, output) : null;
  if (issues)
    return {
      ok: false,
      error: failure(ErrorCode.OutputInvalid, `tool result does not match result_schema: ${describeIssues(issues)}`, {
        errors: issues,
      }),
    };
  return { ok: true, output };
}

/** Calls an http host tool once. Never throws for endpoint behaviour. */
export async function runHttpTool(call: HttpToolCall): Promise<CallOutcome> {
  const { method } = call.transport;
  const audit: TransportFacts = {
    argv: [method, call.transport.url],
    cwd: null,
    exit: null,
    stdoutBytes: 0,
    stderrBytes: 0,
    truncated: false,
    envKeys: [],
  };
  const none = { logs: [] as string[], logsTruncated: false };
  const filled = fillUrlTemplate(call.transport.url, call.input);
  if (!filled.ok) return { ...none, audit, ok: false, error: failure(ErrorCode.InputInvalid, filled.message) };
  const what = `${method} ${filled.url}`;
  audit.argv = [method, filled.url];
  const headers = new Headers({ accept: 'application/json' });
  const hasBody = BODY_METHODS.has(method);
  if (hasBody) headers.set('content-type', 'application/json');
  for (const [name, value] of Object.entries(call.transport.headers))
    headers.set(name, fillSecretPlaceholders(value, call.secrets));

  const timeout = AbortSignal.timeout(call.timeoutMs);
  const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
  let withdraw: (() => void) | undefined;
  try {
    withdraw = call.onSend?.(filled.url);
    const res = await fetch(filled.url, {
      method,
      headers,
      redirect: 'manual',
      signal,
      ...(hasBody ? { body: JSON.stringify(call.input) } : {}),
    });
    audit.status = res.status;
    // a 4xx answer: the receiver refused the request before acting on it
    if (res.status >= 400 && res.status < 500) withdraw?.();
    const { body, total, over } = await readCapped(res, call.maxOutputBytes);
    audit.stdoutBytes = total;
    audit.truncated = over;
    if (over) {
      const error = failure(ErrorCode.OutputLimit, `response of ${what} is larger than ${call.maxOutputBytes} bytes`, {
        maxOutputBytes: call.maxOutputBytes,
      });
      return { ...none, audit, ok: false, error };
    }
    return { ...none, audit, ...answer(res.status, res, body, call, what) };
  } catch (err) {
    if (neverSent(err)) withdraw?.();
    return { ...none, audit, ok: false, error: fetchFailure(err, call, timeout, what) };
  }
}
