// The `rap` transport of host tools: one call of a remote RAP tool.
//
// The invocation `{operation, arguments, id, call_id, callback_url, group_id}` is POSTed to the
// toolset's endpoint; `id` is derived from the request breadcrumb's id, so a re-run of the same
// request (after a takeover) sends the same id and a deduplicating server runs it once. The
// callback URL carries a fresh random token per call: only a holder of that URL can settle it.
//
// States of one call: INVOKING (5xx and 429 retried with backoff; a refused or failed connection is
// `dependency.unavailable` at once; any other non-2xx, or 5xx after the retries, ends the call
// with the reference runtime's synthetic text) -> WAITING for the `tool_result` callback ->
// settled by the callback, by the timeout or by the job's abort. On timeout or abort the runtime
// POSTs `{base}/cancel_tool_call` once, best effort. A result text starting `Error:` is an
// error (`Error: <code>: <message>` keeps a known code, else `tool.error`).

import { randomBytes, createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode } from '../errors.js';
import { neverSent, REFUSED_BEFORE_ACTING, type CallOutcome, type RemoteCall } from '../host-tools/index.js';
import type { TransportFacts } from '../audit/audit-log.js';
import type { Logger } from '../logger.js';
import { failure } from '../result.js';
import { renderDisplay } from './display-script.js';
import { HttpError } from '../http.js';
import { quoteValue } from './toolset.js';
import { backoffMs } from '../backoff.js';

/** The longest wait between two invocation retries. */
const MAX_RETRY_DELAY_MS = 30_000;

/** Inputs of the caller. */
export interface RapCallerOptions {
  workspace: string;
  logger: Logger;
  /** Base of the callback URLs (`{base}/callback/<token>`), reachable by the tool servers. */
  callbackBase(): string;
  /** Largest callback body accepted (bytes). */
  maxResultBytes: number;
  /** 5xx/429 answers to an invocation are retried this many times. */
  invokeRetries?: number;
  retryDelayMs?: number;
  invokeTimeoutMs?: number;
  /** The bearer token for the server of this base URL (`--rap-server-tokens`), if any. */
  tokenFor?(base: string): string | undefined;
}

/** One call as the service hands it over (RemoteCall plus the request's identity). */
export type RapCall = RemoteCall & { requestBreadcrumbId: string; rid: string };

/** The caller: runs calls and settles them from the callback route. */
export interface RapCaller {
  call(call: RapCall): Promise<CallOutcome>;
  /** Handles `POST /callback/<token>`; throws HttpError for a 4xx. */
  callback(token: string, body: unknown): { settled: boolean };
  pending(): number;
}

interface PendingCall {
  id: string;
  settle(text: string): void;
}

/** The synthetic error text of a failed invocation (exactly the reference runtime's). */
export function synthesizedError(operation: string, endpoint: string, status: number): string {
  return `Error: RAP tool '${operation}' failed: the server at ${endpoint} responded with HTTP ${status}. No result will arrive for this call.`;
}

const KNOWN_CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));

/** A tool_result text as an answer: `Error:` texts are errors, anything else is `{text}`. */
export function answerOf(
  text: string,
): { ok: true; output: unknown } | { ok: false; error: ReturnType<typeof failure> } {
  if (!text.startsWith('Error:')) return { ok: true, output: { text } };
  const rest = text.slice('Error:'.length).trimStart();
  const match = /^([a-z_-]+(?:\.[a-z_-]+)?): ([\s\S]*)$/.exec(rest); // partial-effect has a hyphen
  if (match && KNOWN_CODES.has(match[1] as string))
    return { ok: false, error: failure(match[1] as ErrorCode, match[2] as string) };
  return { ok: false, error: failure(ErrorCode.ToolError, text) };
}

function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** Creates the caller. */
export function createRapCaller(options: RapCallerOptions): RapCaller {
  const { logger } = options;
  const pending = new Map<string, PendingCall>();
  const retries = options.invokeRetries ?? 3;
  const retryDelayMs = options.retryDelayMs ?? 200;
  const invokeTimeoutMs = options.invokeTimeoutMs ?? 30_000;

  const auth = (base: string): Record<string, string> => {
    const token = options.tokenFor?.(base);
    return token !== undefined ? { authorization: `Bearer ${token}` } : {};
  };

  const cancelRemote = (base: string, groupId: string, id: string): void => {
    const url = base.replace(/\/+$/, '') + '/cancel_tool_call';
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth(base) },
      body: JSON.stringify({ thread_id: groupId, tool_call_id: id }),
      redirect: 'manual',
      signal: AbortSignal.timeout(5_000),
    })
      .then((res) => res.body?.cancel())
      .catch((error: unknown) => logger.debug('rap cancel not delivered', { url, reason: reasonOf(error) }));
  };

  const call = async (c: RapCall): Promise<CallOutcome> => {
    const t = c.transport;
    const id = `tr-${createHash('sha256').update(`${options.workspace}\0${c.requestBreadcrumbId}`).digest('base64url').slice(0, 32)}`;
    const groupId = `tools-runner/${options.workspace}`;
    const token = randomBytes(24).toString('base64url');
    const callbackUrl = `${options.callbackBase().replace(/\/+$/, '')}/callback/${token}`;
    const audit: TransportFacts = {
      argv: ['POST', t.endpoint],
      cwd: null,
      exit: null,
      stdoutBytes: 0,
      stderrBytes: 0,
      truncated: false,
      envKeys: [],
    };
    const display = renderDisplay(t.operation, t.displayScript, c.input);
    const log = logger.child({ rid: c.rid, tool: c.tool.name });
    const logs = [`display: ${display}`];
    const done = (answer: ReturnType<typeof answerOf>): CallOutcome => ({
      ...answer,
      logs,
      logsTruncated: false,
      audit,
    });
    const fail = (code: ErrorCode, message: string, details?: Record<string, unknown>): CallOutcome =>
      done({ ok: false, error: failure(code, message, details) });

    let settle!: (text: string) => void;
    const result = new Promise<string>((resolve) => (settle = resolve));
    pending.set(token, { id, settle });
    try {
      const body = JSON.stringify({
        operation: t.operation,
        arguments: c.input,
        id,
        call_id: c.rid,
        callback_url: callbackUrl,
        group_id: groupId,
      });
      log.info('rap call', { display, endpoint: t.endpoint });
      let status = 0;
      let withdraw: (() => void) | undefined;
      for (let attempt = 0; ; attempt++) {
        const timeout = AbortSignal.timeout(invokeTimeoutMs);
        // each invocation sent is an effect, withdrawn when it never left or was refused (4xx)
        withdraw = c.onSend?.(t.endpoint);
        try {
          const res = await fetch(t.endpoint, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json', ...auth(t.base) },
            body,
            redirect: 'manual',
            signal: c.signal ? AbortSignal.any([c.signal, timeout]) : timeout,
          });
          await res.body?.cancel().catch(() => undefined);
          status = res.status;
          if (status >= 400 && status < 500) withdraw?.();
        } catch (error) {
          if (neverSent(error)) withdraw?.();
          if (c.signal?.aborted)
            return fail(
              ErrorCode.Internal,
              `RAP tool '${t.operation}' was cancelled before the server at ${t.endpoint} acknowledged it`,
            );
          const reason = timeout.aborted ? `no answer within ${invokeTimeoutMs} ms` : reasonOf(error);
          return fail(
            ErrorCode.DependencyUnavailable,
            `RAP tool '${t.operation}': the server at ${t.endpoint} could not be reached (${reason})`,
            { endpoint: t.endpoint },
          );
        }
        audit.status = status;
        const retryable = status >= 500 || status === 429;
        if (!retryable || attempt >= retries) break;
        log.warn('rap invocation answered with a retryable status, retrying', { status, attempt: attempt + 1 });
        const aborted = await sleep(
          backoffMs({ initialMs: retryDelayMs, maxMs: MAX_RETRY_DELAY_MS }, attempt),
          undefined,
          c.signal ? { signal: c.signal } : {},
        ).then(
          () => false,
          () => true,
        );
        if (aborted)
          return fail(
            ErrorCode.Internal,
            `RAP tool '${t.operation}' was cancelled while its invocation was being retried`,
          );
      }
      if (status < 200 || status > 299) {
        const code = status >= 500 || status === 429 ? ErrorCode.DependencyUnavailable : ErrorCode.ToolError;
        const hint =
          status !== 401
            ? ''
            : options.tokenFor?.(t.base) === undefined
              ? ` The server requires a bearer token: give one for ${t.base} in --rap-server-tokens.`
              : ` The token given for ${t.base} in --rap-server-tokens was refused.`;
        return fail(code, synthesizedError(t.operation, t.endpoint, status) + hint, { status, endpoint: t.endpoint });
      }

      const timeout = AbortSignal.timeout(c.timeoutMs);
      const stop = c.signal ? AbortSignal.any([c.signal, timeout]) : timeout;
      const stopped = new Promise<'stopped'>((resolve) => {
        if (stop.aborted) resolve('stopped');
        else stop.addEventListener('abort', () => resolve('stopped'), { once: true });
      });
      const text = await Promise.race([result, stopped]);
      if (text === 'stopped') {
        cancelRemote(t.base, groupId, id);
        if (c.signal?.aborted)
          return fail(ErrorCode.Internal, `RAP tool '${t.operation}' was cancelled while waiting for its result`);
        return fail(
          ErrorCode.Timeout,
          `RAP tool '${t.operation}' sent no result within ${c.timeoutMs} ms (the server at ${t.endpoint} acknowledged the call)`,
          { timeoutMs: c.timeoutMs },
        );
      }
      audit.stdoutBytes = Buffer.byteLength(text);
      const answered = answerOf(text);
      // the tool refused the call before acting (input.invalid, permission.denied, ...): no effect
      if (!answered.ok && REFUSED_BEFORE_ACTING.has(answered.error.code)) withdraw?.();
      return done(answered);
    } finally {
      pending.delete(token);
    }
  };

  const callback = (token: string, body: unknown): { settled: boolean } => {
    const entry = pending.get(token);
    if (!entry)
      throw new HttpError(
        404,
        'not_found',
        'no RAP call is waiting on this callback URL (unknown, settled or timed out)',
      );
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new HttpError(400, 'input.invalid', `callback must be a JSON object, got ${quoteValue(body)}`);
    const b = body as Record<string, unknown>;
    if (b['type'] !== 'tool_result')
      throw new HttpError(
        400,
        'input.invalid',
        `callback type ${quoteValue(b['type'])} is not supported; only "tool_result" is`,
      );
    if (b['id'] !== entry.id)
      throw new HttpError(400, 'input.invalid', `callback id ${quoteValue(b['id'])} does not match the call's id`);
    if (typeof b['text'] !== 'string')
      throw new HttpError(400, 'input.invalid', `callback text must be a string, got ${quoteValue(b['text'])}`);
    pending.delete(token);
    entry.settle(b['text']);
    return { settled: true };
  };

  return { call, callback, pending: () => pending.size };
}
