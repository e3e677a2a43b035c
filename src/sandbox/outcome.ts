// Maps every way a sandboxed call can end to one stable ExecutionFailure code (plus safe details).
//
//   ok                 result frame within maxResultBytes, valid JSON
//   tool.error         the tool threw (or an uncaught error/rejection happened during the call)
//   permission.denied  a Deno permission error, a refused import, or a context.api grant refusal
//   timeout            wall-clock limit; the process group was SIGKILLed
//   memory_limit       RSS sampler / cgroup OOM kill, or V8 heap OOM: death by SIGTRAP *and* the host's
//                      own RSS samples show the call really filled its heap. Never an exit code or a
//                      signal alone: tool code picks its exit code (Deno.exit(133)) and may signal its
//                      own pid without permission (Deno.kill(Deno.pid, "SIGTRAP"/"SIGKILL"))
//   output_limit       more than maxOutputBytes on stdout+stderr (frame-looking bytes included), or
//                      context.api request frames over their budget (api-proxy.ts)
//   output.invalid     no result, forged/malformed frame, oversized, non-JSON (circular, BigInt, undefined)
//   sandbox.crashed    anything else, with exit code/signal; also aborts and a closed sandbox

import { ErrorCode } from '../errors.js';
import { failure, type ExecutionFailure } from '../result.js';
import type { ExitInfo, KillReason } from './process.js';
import { cleanToolText } from './sanitise.js';

const MAX_MESSAGE_BYTES = 4096;
const MAX_STACK_BYTES = 16384;

/** What the failure messages of one call need to know. */
export interface OutcomeContext {
  tool: string;
  timeoutMs: number;
  memoryMb: number;
  limitBytes: number;
  maxOutputBytes: number;
  maxResultBytes: number;
  secrets: readonly string[];
  /** Maps a `tool.ts:L:C` of the transpiled module back to the tool's source (code caching). */
  mapPosition?: (line: number, column: number) => { line: number; column: number } | undefined;
}

/** Rewrites `tool.ts:L:C` positions of transpiled code to the tool's own lines and columns. */
function mapPositions(ctx: OutcomeContext, text: string): string {
  const map = ctx.mapPosition;
  if (!map) return text;
  return text.replace(/tool\.ts:(\d+):(\d+)/g, (whole, line: string, column: string) => {
    const at = map(Number(line), Number(column));
    return at ? `tool.ts:${at.line}:${at.column}` : whole;
  });
}

const MIB = 1024 * 1024;
/** RSS a Deno process holds besides its JS heap, at least (idle RSS is ~32 MB; conservative). */
const MIN_RUNTIME_RSS = 28 * MIB;

/** The host's own memory samples of one call (RSS, from the memory guard). */
export interface MemoryEvidence {
  /** First sample of the call; undefined when none was taken. */
  baselineBytes: number | undefined;
  peakBytes: number;
}

/**
 * Whether the host's samples show a heap that reached `memoryMb`: RSS grew by half the heap size
 * during the call, or stood above heap + runtime. V8 spends hundreds of ms in last-resort GCs at the
 * full heap before it gives up, so the 10 ms sampler sees it.
 */
export function heapFilled(memory: MemoryEvidence | undefined, memoryMb: number): boolean {
  if (!memory || memory.baselineBytes === undefined) return false;
  const heap = memoryMb * MIB;
  return memory.peakBytes - memory.baselineBytes >= heap / 2 || memory.peakBytes >= heap + MIN_RUNTIME_RSS;
}

/** The failure for a kill the host decided on. */
export function killFailure(ctx: OutcomeContext, reason: KillReason, detail: string | undefined): ExecutionFailure {
  const tool = JSON.stringify(ctx.tool);
  switch (reason) {
    case 'timeout':
      return failure(ErrorCode.Timeout, `tool ${tool} timed out after ${ctx.timeoutMs} ms and was killed`, {
        timeoutMs: ctx.timeoutMs,
      });
    case 'memory_limit': {
      // rounded up to 0.1 MB, so that an RSS just over the limit never reads as equal to it
      const rssMb = detail ? Math.ceil((Number(detail) / MIB) * 10) / 10 : undefined;
      return failure(
        ErrorCode.MemoryLimit,
        `tool ${tool} exceeded its memory limit (${ctx.memoryMb} MB heap, ${Math.round(ctx.limitBytes / MIB)} MB total) and was killed`,
        {
          memoryMb: ctx.memoryMb,
          limitMb: Math.round(ctx.limitBytes / MIB),
          ...(rssMb !== undefined && Number.isFinite(rssMb) ? { rssMb } : {}),
        },
      );
    }
    case 'api_limit':
      return failure(
        ErrorCode.OutputLimit,
        `tool ${tool} sent ${detail ?? 'too many context.api requests'} and was killed`,
        { reason: 'api_limit' },
      );
    case 'output_limit':
      return failure(
        ErrorCode.OutputLimit,
        `tool ${tool} wrote more than ${ctx.maxOutputBytes} bytes to stdout/stderr and was killed`,
        {
          maxOutputBytes: ctx.maxOutputBytes,
        },
      );
    case 'frame_too_large':
      return detail === 'R'
        ? failure(
            ErrorCode.OutputInvalid,
            `tool ${tool} returned a result over the limit of ${ctx.maxResultBytes} bytes`,
            { maxResultBytes: ctx.maxResultBytes },
          )
        : failure(
            ErrorCode.OutputInvalid,
            `tool ${tool} produced a harness frame over the size limit (type ${JSON.stringify(detail)})`,
          );
    case 'bad_frame':
      return failure(ErrorCode.OutputInvalid, `tool ${tool} produced a malformed harness frame`);
    case 'aborted':
      return failure(ErrorCode.SandboxCrashed, `the call of tool ${tool} was aborted by the runner`, {
        reason: 'aborted',
      });
    case 'closed':
      return failure(ErrorCode.SandboxCrashed, `the sandbox was closed while tool ${tool} was running`, {
        reason: 'closed',
      });
    default:
      return failure(
        ErrorCode.SandboxCrashed,
        `the sandbox process of tool ${tool} was killed (${reason}${detail ? `: ${detail}` : ''})`,
        { reason },
      );
  }
}

/** The failure for a process that exited on its own before the call ended (`memory`: the host's samples). */
export function exitFailure(ctx: OutcomeContext, info: ExitInfo, memory?: MemoryEvidence): ExecutionFailure {
  const tool = JSON.stringify(ctx.tool);
  const details = { exitCode: info.exitCode, signal: info.signal };
  if (info.oomKilled || (info.signal === 'SIGTRAP' && heapFilled(memory, ctx.memoryMb))) {
    return failure(ErrorCode.MemoryLimit, `tool ${tool} ran out of memory (${ctx.memoryMb} MB) and was killed`, {
      memoryMb: ctx.memoryMb,
      ...details,
    });
  }
  if (info.exitCode === 0) {
    return failure(ErrorCode.OutputInvalid, `tool ${tool} exited before returning a result (Deno.exit?)`, details);
  }
  return failure(
    ErrorCode.SandboxCrashed,
    `the sandbox process of tool ${tool} died (exit code ${info.exitCode}, signal ${info.signal})`,
    details,
  );
}

/**
 * Codes a tool may give its own thrown error (`Object.assign(new Error(m), { code })`): failures of
 * what it talks to (`dependency.unavailable`, `rate.exceeded`), a refused credential
 * (`permission.denied`), bad input the schema could not catch (`input.invalid`), a missing record
 * (`not_found`). Any other code stays `tool.error`.
 */
const TOOL_CODES: ReadonlyMap<string, ErrorCode> = new Map(
  [
    ErrorCode.DependencyUnavailable,
    ErrorCode.RateExceeded,
    ErrorCode.PermissionDenied,
    ErrorCode.InputInvalid,
    ErrorCode.NotFound,
  ].map((c) => [c, c]),
);

/** The failure for an 'E' frame from the harness; undefined when the frame is malformed. */
export function errorFrameFailure(ctx: OutcomeContext, payload: string): ExecutionFailure | undefined {
  let frame: unknown;
  try {
    frame = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof frame !== 'object' || frame === null) return undefined;
  const { kind, name, message, stack, code } = frame as Record<string, unknown>;
  if (typeof kind !== 'string' || typeof message !== 'string') return undefined;
  const text =
    mapPositions(ctx, cleanToolText(message, ctx.secrets, MAX_MESSAGE_BYTES, false)) || 'tool error without a message';
  if (kind === 'output') return failure(ErrorCode.OutputInvalid, `tool ${JSON.stringify(ctx.tool)}: ${text}`);
  const details: Record<string, unknown> = {
    name: typeof name === 'string' ? cleanToolText(name, ctx.secrets, 200, false) : 'Error',
    ...(typeof stack === 'string' && stack !== ''
      ? { stack: mapPositions(ctx, cleanToolText(stack, ctx.secrets, MAX_STACK_BYTES, true)) }
      : {}),
  };
  if (kind === 'permission') return failure(ErrorCode.PermissionDenied, text, details);
  if (kind === 'tool') {
    const own = typeof code === 'string' ? TOOL_CODES.get(code) : undefined;
    return failure(own ?? ErrorCode.ToolError, text, own ? { ...details, thrownCode: code } : details);
  }
  return undefined;
}
