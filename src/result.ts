// The outcome of one tool execution, whatever ran it (Deno sandbox, exec or http host tool).
//
// Expected endings — the tool threw, timed out, ran out of memory, wrote too much, returned
// garbage — are data of this shape, not exceptions. The pipeline turns it into tool.response.v1.

import { isRetryable, type ErrorCode } from './errors.js';

export interface ExecutionFailure {
  code: ErrorCode;
  /** Human-readable; names the offending value; never contains secret values or ANSI codes. */
  message: string;
  retryable: boolean;
  /** Tool stack (tool.error), limits hit, validation paths... safe to show to the caller. */
  details?: Record<string, unknown>;
}

/** What a call did outside itself, counted at the harness/host boundary (see docs/tool-contracts.md "Effects and timeouts"). */
export interface Effect {
  kind: 'store.create' | 'store.update' | 'net.fetch' | 'net.connect' | 'host.exec' | 'rap.invoke';
  /** The record id (`(new record)` until a create's id is known), `host:port`, or the command/endpoint. */
  target: string;
  /** When it began, ms after the call started. */
  at_ms?: number;
}

interface ExecutionBase {
  /** Wall-clock time from job start to its ending, in milliseconds. */
  durationMs: number;
  /** Log lines the tool wrote (console.*, context.log, stray stdout/stderr), sanitised and capped. */
  logs: string[];
  /** True when logs were cut at the configured cap. */
  logsTruncated: boolean;
  /** Effects the call had (or began: a write in flight when the call ended is listed), in order. */
  effects?: Effect[];
  /** Effects beyond the ones listed (the list is capped). */
  effectsDropped?: number;
  /** Transport facts for the audit line (host tools; already redacted). */
  evidence?: Record<string, unknown>;
}

export interface ExecutionSuccess extends ExecutionBase {
  ok: true;
  output: unknown;
}

export interface ExecutionError extends ExecutionBase {
  ok: false;
  error: ExecutionFailure;
}

export type ExecutionResult = ExecutionSuccess | ExecutionError;

/**
 * What is known of a failed call's action, from the claim and the sandbox (`details.execution`):
 * it never started (nothing left the sandbox: the job was never sent, or every way out is counted
 * and none was used, and no earlier attempt ran), it may have run (an earlier attempt on another
 * replica, or a way out the runner cannot count), or it ran and its result was lost (effects were
 * counted). docs/reliability.md "What an error answer says ran".
 */
export const Execution = {
  NeverStarted: 'never_started',
  MayHaveRun: 'may_have_run',
  RanResultLost: 'ran_result_lost',
} as const;
export type Execution = (typeof Execution)[keyof typeof Execution];

/** The one mapping from what is known to an answer's error: `details.execution`, and `retryable` only when nothing can have run. */
export function withExecution(error: ExecutionFailure, execution: Execution): ExecutionFailure {
  return {
    ...error,
    retryable: execution === Execution.NeverStarted && isRetryable(error.code),
    details: { ...error.details, execution },
  };
}

const EXECUTION_TEXT: Record<Execution, string> = {
  never_started: 'it never ran',
  may_have_run: 'it may have run: check before retrying',
  ran_result_lost: 'it ran and its result was lost: check before retrying',
};

/** The one text of a failed answer for callers (MCP content, RAP tool_result): `<code>: <message>` and what is known of what ran. */
export function failureText(error: {
  code: string;
  message: string;
  retryable?: boolean;
  details?: Record<string, unknown>;
}): string {
  const execution = error.details?.['execution'];
  const known = typeof execution === 'string' ? EXECUTION_TEXT[execution as Execution] : undefined;
  if (known === undefined) return `${error.code}: ${error.message}`;
  const retry = execution === Execution.NeverStarted ? (error.retryable ? ': safe to retry' : '') : '';
  return `${error.code}: ${error.message} (${known}${retry})`;
}

/** Builds an ExecutionFailure with the code's default retryability. */
export function failure(code: ErrorCode, message: string, details?: Record<string, unknown>): ExecutionFailure {
  return { code, message, retryable: isRetryable(code), ...(details ? { details } : {}) };
}

/** The result of a call that ended before its tool produced anything: no logs, `durationMs` 0 unless given. */
export function errorResult(
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
  durationMs = 0,
): ExecutionError {
  return { ok: false, error: failure(code, message, details), durationMs, logs: [], logsTruncated: false };
}

/** Deepest nesting of a tool's input or output (the store refuses contexts deeper than 256 levels). */
export const MAX_JSON_DEPTH = 128;

/** Whether `value` nests objects/arrays deeper than `max` levels (iterative: no stack to blow). */
export function jsonDepthExceeds(value: unknown, max = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: Array<[object, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [object, number];
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child as object, depth + 1]);
    }
  }
  return false;
}
