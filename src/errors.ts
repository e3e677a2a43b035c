// Stable error codes shared by every part of the runner, and the one error class that carries them.
//
// Codes follow the ARuntime taxonomy (README "Requests, responses and error codes"): dotted,
// lower case, and stable — agents and operators match on them, so a code is never renamed once
// shipped. Expected tool outcomes (a timeout, a thrown error, bad output) travel as result data
// carrying one of these codes; only infrastructure faults are thrown, as RunnerError.

export const ErrorCode = {
  /** The request or its input failed validation; goes back to the model, never retried. */
  InputInvalid: 'input.invalid',
  /** No runnable tool of that name. */
  ToolNotFound: 'tool.not_found',
  /** The tool itself threw; message and stack are the tool's. */
  ToolError: 'tool.error',
  /** The tool exceeded its wall-clock limit and was killed. */
  Timeout: 'timeout',
  /** A side-effecting tool timed out after it had an effect: whether its action committed is unknown (never retried blindly). */
  TimeoutUnknownCommit: 'timeout.unknown-commit',
  /** A side-effecting tool timed out before any effect: safe to retry. */
  TimeoutBeforeSubmit: 'timeout.before-submit',
  /** A side-effecting tool failed after some of its effects happened; the effects are listed in details. */
  PartialEffect: 'partial-effect',
  /** The tool exceeded its memory limit and was killed. */
  MemoryLimit: 'memory_limit',
  /** The tool wrote more to stdout/stderr than allowed and was killed. */
  OutputLimit: 'output_limit',
  /** The tool's result was missing, forged, oversized, not JSON, or failed output_schema. */
  OutputInvalid: 'output.invalid',
  /** The sandbox process died for a reason that is not the tool's fault (or is unexplained). */
  SandboxCrashed: 'sandbox.crashed',
  /** The tool or caller lacks a grant (context.api, capability, creation policy). */
  PermissionDenied: 'permission.denied',
  /** A secret the tool requires could not be resolved. */
  SecretMissing: 'secret.missing',
  /** The tool requires operator confirmation and none can be given (fails closed). */
  ApprovalRequired: 'approval.required',
  /** A dependency (store, HTTP endpoint) is unreachable or answered 5xx. */
  DependencyUnavailable: 'dependency.unavailable',
  /** A rate or budget limit was hit. */
  RateExceeded: 'rate.exceeded',
  /** A write would silently overwrite someone else's state. */
  Conflict: 'conflict',
  /** The runner itself failed; a bug or an unexpected fault. */
  Internal: 'internal',
  /** Configuration is invalid; raised at startup only. */
  ConfigInvalid: 'config.invalid',
  /** A referenced record (breadcrumb, secret) does not exist. */
  NotFound: 'not_found',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCode.DependencyUnavailable,
  ErrorCode.RateExceeded,
  ErrorCode.SandboxCrashed,
  ErrorCode.Internal,
  ErrorCode.TimeoutBeforeSubmit,
]);

/** Whether a caller may retry a call that failed with `code` without risking duplicate effects. */
export function isRetryable(code: ErrorCode): boolean {
  return RETRYABLE.has(code);
}

export interface RunnerErrorOptions {
  retryable?: boolean;
  cause?: unknown;
  /** Structured detail safe to show to callers (never secret values). */
  details?: Record<string, unknown>;
}

/** The one error class of the runner: a stable code, retryability and the underlying cause. */
export class RunnerError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: RunnerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RunnerError';
    this.code = code;
    this.retryable = options.retryable ?? isRetryable(code);
    this.details = options.details;
  }

  toJSON(): { code: ErrorCode; message: string; retryable: boolean; details?: Record<string, unknown> } {
    return {
      code: this.code,
      message: this.message,
      retryable: this.retryable,
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

/** Turns anything caught into a RunnerError, keeping an existing code and the original as cause. */
export function coerceError(err: unknown, fallback: ErrorCode = ErrorCode.Internal): RunnerError {
  if (err instanceof RunnerError) return err;
  if (err instanceof Error) return new RunnerError(fallback, err.message, { cause: err });
  return new RunnerError(fallback, typeof err === 'string' ? err : safeStringify(err), { cause: err });
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
