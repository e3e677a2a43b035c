// Host side of `context.api`: the harness forwards each call as an 'A' frame; this module treats it
// as hostile input (shape, identifiers, call count), enforces the tool's grant, performs the call
// with the host's SandboxApi and builds the reply frame. The tool never holds a token.
//
// Framing budgets per job (the policy's own per-call caps live in src/tool-context/tool-api.ts): request
// frame bytes and frame count (over either, the caller kills the process: output_limit), host calls
// in flight at once (the rest wait in order), and reply bytes per reply and in total (over either, the
// tool gets a rate.exceeded refusal instead of the value, so the service never queues unbounded
// bytes for a process that does not read its stdin).

import { ErrorCode, coerceError } from '../errors.js';
import type { Effect } from '../result.js';
import type { EffectLog } from './effects.js';
import type { SandboxApi, SandboxTool, SandboxToolCaller } from './types.js';

/** Most context.api calls one job may make. */
export const MAX_API_CALLS = 100;
/** Most context.api request frames one job may send (refused ones included); beyond, the process is killed. */
export const MAX_API_FRAMES = 2 * MAX_API_CALLS;
/** Most bytes of context.api request frames per job; beyond, the process is killed. */
export const MAX_API_REQUEST_BYTES = 16 * 1024 * 1024;
/** Most host calls of one job running at once; later calls wait for a slot. */
export const MAX_API_IN_FLIGHT = 8;
/** Largest single reply line handed to the harness. */
export const MAX_API_REPLY_BYTES = 8 * 1024 * 1024;
/** Most reply bytes per job. */
export const MAX_API_TOTAL_REPLY_BYTES = 32 * 1024 * 1024;

/** Framing budgets of one job's context.api (defaults: the MAX_API_* constants). */
export interface ApiBudgets {
  maxCalls: number;
  maxFrames: number;
  maxRequestBytes: number;
  maxInFlight: number;
  maxReplyBytes: number;
  maxTotalReplyBytes: number;
}

const READ_OPS = new Set(['getBreadcrumb', 'searchBreadcrumbs']);
const WRITE_OPS = new Set(['createBreadcrumb', 'updateBreadcrumb']);
/** `context.tools.call`: its own grant (`permissions.tools`), performed by the SandboxToolCaller. */
const CALL_OP = 'callTool';
const TOOL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Codes that say a write was refused before the store changed (every other failure may have committed). */
const NOT_WRITTEN = new Set<string>([
  ErrorCode.InputInvalid,
  ErrorCode.PermissionDenied,
  ErrorCode.NotFound,
  ErrorCode.Conflict,
  ErrorCode.RateExceeded,
]);
const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const PARAM_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** The reply frame to one context.api call (value, or a code and message for the tool). */
export interface ApiReply {
  id: number;
  ok: boolean;
  value?: unknown;
  code?: string;
  message?: string;
}

/** Per-job handler of context.api frames. */
export interface ApiProxy {
  /**
   * Charges one 'A' frame of `bytes` payload bytes to the job's request budgets before it is parsed;
   * returns why the process must be killed when a budget is exhausted, else undefined.
   */
  admit(bytes: number): string | undefined;
  /** Handles one 'A' payload; undefined when the frame itself is malformed (the process is then killed). */
  handle(payload: string): Promise<ApiReply> | undefined;
  /** The reply line (with its newline) for the harness, within the reply budgets. */
  replyLine(reply: ApiReply): string;
  readonly calls: number;
  /** Starts a new budget window (a continuous run's budgets are a rate, src/sandbox/run-job.ts). */
  renew(): void;
}

class Refusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkId(op: string, value: unknown): string {
  if (typeof value !== 'string' || !ID.test(value)) {
    throw new Refusal(
      ErrorCode.InputInvalid,
      `context.api.${op}: invalid breadcrumb id ${JSON.stringify(value)?.slice(0, 140)}`,
    );
  }
  return value;
}

function checkObject(op: string, what: string, value: unknown): Record<string, unknown> {
  if (!isPlainObject(value))
    throw new Refusal(
      ErrorCode.InputInvalid,
      `context.api.${op}: ${what} must be an object, got ${JSON.stringify(value)?.slice(0, 140)}`,
    );
  return value;
}

function checkParams(value: unknown): Record<string, unknown> {
  const params = checkObject('searchBreadcrumbs', 'params', value ?? {});
  for (const [key, v] of Object.entries(params)) {
    if (!PARAM_KEY.test(key))
      throw new Refusal(
        ErrorCode.InputInvalid,
        `context.api.searchBreadcrumbs: invalid parameter name ${JSON.stringify(key.slice(0, 70))}`,
      );
    if (!['string', 'number', 'boolean'].includes(typeof v)) {
      throw new Refusal(
        ErrorCode.InputInvalid,
        `context.api.searchBreadcrumbs: parameter "${key}" must be a string, number or boolean`,
      );
    }
  }
  return params;
}

function checkGrant(tool: SandboxTool, op: string): void {
  if (tool.api === false) {
    throw new Refusal(ErrorCode.PermissionDenied, `context.api.${op} denied: tool "${tool.name}" has no api grant`);
  }
  if (WRITE_OPS.has(op) && tool.api !== 'write') {
    throw new Refusal(
      ErrorCode.PermissionDenied,
      `context.api.${op} denied: tool "${tool.name}" has the "read" api grant; ${op} needs "write"`,
    );
  }
}

function checkToolsGrant(tool: SandboxTool, target: unknown): string {
  if (typeof target !== 'string' || !TOOL_NAME.test(target)) {
    throw new Refusal(
      ErrorCode.InputInvalid,
      `context.tools.call: the tool name must match ${TOOL_NAME.source}, got ${JSON.stringify(target)?.slice(0, 140)}`,
    );
  }
  const grant = tool.tools;
  if (grant === undefined)
    throw new Refusal(
      ErrorCode.PermissionDenied,
      `context.tools.call("${target}") denied: tool "${tool.name}" has no permissions.tools grant`,
    );
  if (grant !== true && !grant.includes(target)) {
    throw new Refusal(
      ErrorCode.PermissionDenied,
      `context.tools.call("${target}") denied: tool "${tool.name}" may call only ${JSON.stringify(grant)} (permissions.tools)`,
    );
  }
  return target;
}

function checkCallOptions(value: unknown): { version?: string; idempotencyKey?: string } {
  const options = checkObject('callTool', 'options', value);
  const out: { version?: string; idempotencyKey?: string } = {};
  for (const [key, v] of Object.entries(options)) {
    if (key !== 'version' && key !== 'idempotencyKey')
      throw new Refusal(
        ErrorCode.InputInvalid,
        `context.tools.call: unknown option ${JSON.stringify(key.slice(0, 70))} (version and idempotencyKey are known)`,
      );
    if (typeof v !== 'string' || v === '' || v.length > 200)
      throw new Refusal(
        ErrorCode.InputInvalid,
        `context.tools.call: option ${key} must be a non-empty string of at most 200 characters, got ${JSON.stringify(v)?.slice(0, 140)}`,
      );
    out[key] = v;
  }
  return out;
}

async function perform(api: SandboxApi, op: string, args: unknown[]): Promise<unknown> {
  switch (op) {
    case 'getBreadcrumb':
      return api.getBreadcrumb(checkId(op, args[0]));
    case 'searchBreadcrumbs':
      return api.searchBreadcrumbs(checkParams(args[0]));
    case 'createBreadcrumb':
      return api.createBreadcrumb(checkObject(op, 'body', args[0]));
    default: {
      const id = checkId(op, args[0]);
      const version = args[1];
      if (version !== undefined && version !== null && !(Number.isSafeInteger(version) && (version as number) >= 1)) {
        throw new Refusal(
          ErrorCode.InputInvalid,
          `context.api.updateBreadcrumb: version must be a positive integer, got ${JSON.stringify(version)}`,
        );
      }
      return api.updateBreadcrumb(id, (version ?? undefined) as number | undefined, checkObject(op, 'patch', args[2]));
    }
  }
}

/**
 * Creates the per-job proxy for `tool`, backed by `api` (absent: granted calls fail as dependency.unavailable).
 * Every write it performs is recorded in `effects` when it begins (kept unless it was refused before the store changed).
 */
export function createApiProxy(options: {
  tool: SandboxTool;
  api: SandboxApi | undefined;
  tools?: SandboxToolCaller;
  maxCalls?: number;
  budgets?: Partial<ApiBudgets>;
  effects?: EffectLog;
  /** Told each rate.exceeded refusal (a continuous run counts them). */
  onRefusal?: (message: string) => void;
}): ApiProxy {
  const { tool, api, effects } = options;
  const budgets: ApiBudgets = {
    maxCalls: options.maxCalls ?? MAX_API_CALLS,
    maxFrames: MAX_API_FRAMES,
    maxRequestBytes: MAX_API_REQUEST_BYTES,
    maxInFlight: MAX_API_IN_FLIGHT,
    maxReplyBytes: MAX_API_REPLY_BYTES,
    maxTotalReplyBytes: MAX_API_TOTAL_REPLY_BYTES,
    ...options.budgets,
  };
  const maxCalls = budgets.maxCalls;
  let calls = 0;
  let frames = 0;
  let requestBytes = 0;
  let replyBytes = 0;
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  // a slot among maxInFlight host calls; released in order
  const slot = async (): Promise<void> => {
    if (inFlight < budgets.maxInFlight) {
      inFlight++;
      return;
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else inFlight--;
  };
  return {
    get calls() {
      return calls;
    },
    renew() {
      calls = frames = requestBytes = replyBytes = 0;
    },
    admit(bytes) {
      frames++;
      requestBytes += bytes;
      if (frames > budgets.maxFrames) return `more than ${budgets.maxFrames} context.api requests in one execution`;
      if (requestBytes > budgets.maxRequestBytes)
        return `more than ${budgets.maxRequestBytes} bytes of context.api requests in one execution`;
      return undefined;
    },
    replyLine(reply) {
      let line: string;
      try {
        line = JSON.stringify({ t: 'api', ...reply });
      } catch (err) {
        line = JSON.stringify({
          t: 'api',
          id: reply.id,
          ok: false,
          code: ErrorCode.Internal,
          message: `context.api reply is not JSON: ${(err as Error).message}`,
        });
      }
      const bytes = Buffer.byteLength(line) + 1;
      if (bytes > budgets.maxReplyBytes || replyBytes + bytes > budgets.maxTotalReplyBytes) {
        const message =
          bytes > budgets.maxReplyBytes
            ? `context.api reply of ${bytes} bytes is over the limit of ${budgets.maxReplyBytes} bytes per reply`
            : `context.api replies exceeded ${budgets.maxTotalReplyBytes} bytes in one execution`;
        line = JSON.stringify({ t: 'api', id: reply.id, ok: false, code: ErrorCode.RateExceeded, message });
        options.onRefusal?.(message);
      } else if (!reply.ok && reply.code === ErrorCode.RateExceeded) options.onRefusal?.(reply.message ?? '');
      replyBytes += Buffer.byteLength(line) + 1;
      return line + '\n';
    },
    handle(payload) {
      let frame: unknown;
      try {
        frame = JSON.parse(payload);
      } catch {
        return undefined;
      }
      if (
        !isPlainObject(frame) ||
        !Number.isSafeInteger(frame.id) ||
        typeof frame.op !== 'string' ||
        !Array.isArray(frame.args)
      )
        return undefined;
      const id = frame.id as number;
      const op = frame.op;
      const args = frame.args as unknown[];
      const run = async (): Promise<ApiReply> => {
        let entry: Effect | undefined;
        try {
          if (op === CALL_OP) {
            const target = checkToolsGrant(tool, args[0]);
            const callOptions = checkCallOptions(args[2] ?? {});
            calls++;
            if (calls > maxCalls)
              throw new Refusal(ErrorCode.RateExceeded, `context.api: more than ${maxCalls} calls in one execution`);
            if (!options.tools)
              throw new Refusal(
                ErrorCode.DependencyUnavailable,
                `context.tools.call("${target}"): nested calls are not available to this call`,
              );
            // A nested call waits for another tool's answer: it holds no in-flight slot of the store
            // calls, and its effects are the nested request's own (listed in that request's answer).
            const value = await options.tools.call(target, args[1], callOptions);
            return { id, ok: true, value: value === undefined ? null : value };
          }
          if (!READ_OPS.has(op) && !WRITE_OPS.has(op))
            throw new Refusal(ErrorCode.InputInvalid, `context.api has no method ${JSON.stringify(op.slice(0, 60))}`);
          if (args.length > 3)
            throw new Refusal(ErrorCode.InputInvalid, `context.api.${op}: too many arguments (${args.length})`);
          checkGrant(tool, op);
          calls++;
          if (calls > maxCalls)
            throw new Refusal(ErrorCode.RateExceeded, `context.api: more than ${maxCalls} calls in one execution`);
          if (!api)
            throw new Refusal(
              ErrorCode.DependencyUnavailable,
              `context.api.${op}: the breadcrumb API is not available to this call`,
            );
          await slot();
          try {
            entry = WRITE_OPS.has(op)
              ? effects?.add(
                  op === 'createBreadcrumb' ? 'store.create' : 'store.update',
                  op === 'createBreadcrumb' ? '(new record)' : String(args[0]),
                )
              : undefined;
            const value = await perform(api, op, args);
            if (entry && op === 'createBreadcrumb' && isPlainObject(value) && typeof value.id === 'string')
              effects?.settle(entry, value.id);
            return { id, ok: true, value: value === undefined ? null : value };
          } finally {
            release();
          }
        } catch (err) {
          if (err instanceof Refusal) {
            if (entry) effects?.drop(entry);
            return { id, ok: false, code: err.code, message: err.message };
          }
          const coerced = coerceError(err);
          if (entry && NOT_WRITTEN.has(coerced.code)) effects?.drop(entry);
          return {
            id,
            ok: false,
            code: coerced.code,
            message: op === CALL_OP ? coerced.message : `context.api.${op} failed: ${coerced.message}`,
          };
        }
      };
      return run();
    },
  };
}
