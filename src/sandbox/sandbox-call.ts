// One call of the sandbox (sandbox.ts): normalises the job's limits and permissions, picks a process
// (a parked warm one of the same tool version, a busy one's hand-over, or a spare of the permission
// set), runs the job on it and gives the process back to the pool.

import type { Config } from '../config/index.js';
import { ErrorCode, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { cpuSlotOf } from '../queue/cpu-slot.js';
import { errorResult, type ExecutionResult } from '../result.js';
import type { ActivityMonitor } from './activity.js';
import type { MemoryGuard } from './memory-guard.js';
import type { Pool } from './pool.js';
import type { SandboxProcess } from './process.js';
import { runJob } from './run-job.js';
import { clamp, type Permissions } from './sandbox-permissions.js';
import type { ToolCompiler } from './transpile.js';
import type { SandboxJob } from './types.js';
import { warmKey } from './warm-key.js';

/** What a call needs of its sandbox. */
export interface CallContext {
  config: Config;
  logger: Logger;
  pool: Pool;
  guard: MemoryGuard;
  compiler: ToolCompiler;
  permissions: Permissions;
  activity: ActivityMonitor;
  isClosed(): boolean;
}

/** Runs a call; `split.gotAt` is set when it got its process. */
export type CallRunner = (job: SandboxJob, startedAt: number, split: { gotAt?: number }) => Promise<ExecutionResult>;

/** Milliseconds since `startedAt`, to the microsecond. */
const elapsed = (startedAt: number): number => Math.round((performance.now() - startedAt) * 1000) / 1000;

function crashed(message: string, startedAt: number, details?: Record<string, unknown>): ExecutionResult {
  return errorResult(ErrorCode.SandboxCrashed, message, details, elapsed(startedAt));
}

export function createCallRunner(ctx: CallContext): CallRunner {
  const { config, logger, pool, permissions, compiler } = ctx;
  let nextSeq = 0;
  // warm processes that imported a tool's module factory: later calls send only its id
  const factoryLoaded = new WeakMap<SandboxProcess, string>();

  return async (job, startedAt, split) => {
    const { tool } = job;
    if (ctx.isClosed())
      return crashed(`the sandbox is closed; tool ${JSON.stringify(tool.name)} was not run`, startedAt, {
        reason: 'closed',
      });
    if (job.signal?.aborted)
      return crashed(`the call of tool ${JSON.stringify(tool.name)} was aborted by the runner`, startedAt, {
        reason: 'aborted',
      });
    for (const value of Object.values(job.secrets)) logger.redact(value);
    let net: string[];
    let privateNet: string[];
    try {
      net = permissions.netOf(tool);
      privateNet = permissions.privateNetOf(tool);
    } catch (err) {
      const coerced = coerceError(err, ErrorCode.PermissionDenied);
      return errorResult(coerced.code, coerced.message, undefined, elapsed(startedAt));
    }
    // validation bounds agent tools by maxTimeoutMs and the operator's files by bootstrapMaxTimeoutMs
    const timeoutMs = clamp(
      tool.timeoutMs,
      config.defaultTimeoutMs,
      1,
      Math.max(config.maxTimeoutMs, config.bootstrapMaxTimeoutMs),
    );
    const { extra, refused } = permissions.extraOf(tool);
    if (refused.length > 0) {
      return errorResult(
        ErrorCode.PermissionDenied,
        `tool ${JSON.stringify(tool.name)} asks for permission(s) the operator does not allow: ${refused.join(', ')}`,
        undefined,
        elapsed(startedAt),
      );
    }
    const spec = permissions.specFor(net, permissions.memoryOf(tool), extra, privateNet);
    // The caller's demand (job.isolation) and the tool's own both beat the operator's warm settings.
    const reuse =
      job.isolation !== 'process' &&
      tool.isolation !== 'process' &&
      (config.isolation === 'warm' || config.reuseTools.includes(tool.name));
    const compiled = compiler.compile(tool.source);
    // A warm process serves exactly one tool version with one permission set, limits and secrets.
    const reuseKey = reuse ? warmKey(tool, spec.key, timeoutMs, job.secrets) : '';

    let proc = reuse ? pool.acquireReuse(reuseKey) : undefined;
    // every process of this version busy: wait for one when that is cheaper than a spawn (pool.ts)
    if (reuse && !usable(proc)) {
      const next = pool.waitForReuse(reuseKey, spec.key);
      if (next) proc = await next;
    }
    // a process can die between being handed out and receiving its job (rare): then take another once
    for (let attempt = 0; attempt < 2 && !usable(proc); attempt++) {
      const pending = pool.acquire(spec);
      try {
        proc = await raceAbort(pending, job.signal);
      } catch (err) {
        if (err === ABORTED) {
          pending.then(
            (p) => pool.giveBack(p),
            () => undefined,
          );
          return crashed(`the call of tool ${JSON.stringify(tool.name)} was aborted by the runner`, startedAt, {
            reason: 'aborted',
          });
        }
        logger.error('sandbox process unavailable', { tool: tool.name, error: coerceError(err) });
        return crashed(
          `could not start a Deno sandbox process for tool ${JSON.stringify(tool.name)}: ${coerceError(err).message}`,
          startedAt,
          { reason: 'spawn_failed' },
        );
      }
    }
    if (!usable(proc))
      return crashed(`no live Deno sandbox process for tool ${JSON.stringify(tool.name)}`, startedAt, {
        reason: 'spawn_failed',
      });
    split.gotAt = performance.now();
    const slot = cpuSlotOf(job.signal);
    const tracked = slot && proc.pid !== undefined ? ctx.activity.track(proc.pid, slot) : undefined;
    if (reuse) pool.callStarted(reuseKey);
    // the tool's module factory, compiled once per process, called once per call; in process mode it
    // saves Deno's module load of an import (~1 ms of the process's CPU per call, bench/journal/2026-11-rounds.md)
    const factory = compiled.factory;
    const mapPosition = factory ? factory.mapPosition : compiled.mapPosition;
    const outcome = await runJob(
      proc,
      job,
      {
        seq: ++nextSeq,
        source64: compiled.source64,
        lang: compiled.lang,
        ...(factory
          ? {
              factory:
                factoryLoaded.get(proc) === factory.id ? { id: factory.id } : { id: factory.id, code: factory.code },
            }
          : {}),
        ...(mapPosition ? { mapPosition } : {}),
        timeoutMs,
        reuse,
        maxResultBytes: config.maxResultBytes,
        maxOutputBytes: config.maxOutputBytes,
        maxLogBytes: config.maxLogBytes,
        startedAt,
        ...(tracked ? { onWaiting: tracked.waiting } : {}),
      },
      ctx.guard,
    );
    tracked?.stop();
    if (factory && outcome.reusable) factoryLoaded.set(proc, factory.id);
    if (reuse) pool.callEnded(reuseKey, performance.now() - split.gotAt, outcome.reusable);
    if (outcome.reusable) pool.park(proc, reuseKey);
    pool.release(spec);
    const result = outcome.result;
    logger.debug('sandbox call finished', {
      tool: tool.name,
      code: result.ok ? 'ok' : result.error.code,
      durationMs: result.durationMs,
      reuse,
    });
    return result;
  };
}

const ABORTED = Symbol('aborted');

function usable(proc: SandboxProcess | undefined): proc is SandboxProcess {
  return proc?.state === 'ready' || proc?.state === 'idle';
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(ABORTED);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
