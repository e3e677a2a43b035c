// Runs one job on a ready sandbox process and turns whatever happens into an ExecutionResult.
// The first ending wins (result frame, error frame, kill, exit); every timer, listener and memory
// watch is removed when it does. In process mode the process is killed afterwards; in warm mode it
// is handed back only when the harness itself ended the call with a result frame (any error,
// timeout, kill or crash retires it).

import { ErrorCode } from '../errors.js';
import { Execution, failure, withExecution, type ExecutionFailure, type ExecutionResult } from '../result.js';
import { createApiProxy } from './api-proxy.js';
import { startCpuLimit, type CpuLimit } from './cpu-limit.js';
import { createEffectLog, NET_EFFECT_KINDS } from './effects.js';
import type { MemoryGuard, Watched } from './memory-guard.js';
import { errorFrameFailure, exitFailure, killFailure, type MemoryEvidence, type OutcomeContext } from './outcome.js';
import type { SandboxProcess } from './process.js';
import { createLogCollector, redactSecrets } from './sanitise.js';
import type { SandboxJob } from './types.js';

/** Per-call settings, already normalised by the sandbox. */
export interface JobSettings {
  seq: number;
  /** base64 of the tool source (computed once per tool version by the caller). */
  source64: string;
  /** Media type of source64: transpiled JavaScript, or TypeScript Deno transpiles itself. */
  lang: 'js' | 'ts';
  /**
   * Run the tool through its module factory (transpile.ts) instead of importing source64; `code` only
   * when this process has not compiled that factory yet.
   */
  factory?: { id: string; code?: string };
  /** Maps positions of transpiled code back to the tool source (for error stacks). */
  mapPosition?: OutcomeContext['mapPosition'];
  timeoutMs: number;
  reuse: boolean;
  maxResultBytes: number;
  maxOutputBytes: number;
  maxLogBytes: number;
  /** performance.now() when run() was called (durations include waiting for a process). */
  startedAt: number;
  /** The harness said the call waits on its event loop (a W frame): a hint for lending its CPU slot. */
  onWaiting?: () => void;
}

/** Longest wait for the stderr sync marker after a result frame (it is written just before it). */
const SYNC_GRACE_MS = 1000;

// A crash before the job reached the sandbox: the tool never started.
const notSent = (message: string): ExecutionFailure =>
  withExecution(failure(ErrorCode.SandboxCrashed, message), Execution.NeverStarted);

/** The result of a call and whether its process may be reused. */
export interface JobOutcome {
  result: ExecutionResult;
  /** The process finished the call cleanly and may serve another call (reuse mode). */
  reusable: boolean;
}

/** Sends `job` to `proc` and resolves with its outcome; never rejects. */
export function runJob(
  proc: SandboxProcess,
  job: SandboxJob,
  settings: JobSettings,
  guard: MemoryGuard,
): Promise<JobOutcome> {
  const secrets = Object.values(job.secrets);
  let logs = createLogCollector(settings.maxLogBytes, secrets);
  const ctx: OutcomeContext = {
    tool: job.tool.name,
    timeoutMs: settings.timeoutMs,
    memoryMb: proc.memoryMb,
    limitBytes: proc.limitBytes,
    maxOutputBytes: settings.maxOutputBytes,
    maxResultBytes: settings.maxResultBytes,
    secrets,
    ...(settings.mapPosition ? { mapPosition: settings.mapPosition } : {}),
  };
  // effects are recorded as they arrive, so every ending (a timeout or kill included) lists them
  const effects = createEffectLog(settings.startedAt, secrets);
  const proxy = createApiProxy({
    tool: job.tool,
    api: job.api,
    ...(job.tools ? { tools: job.tools } : {}),
    effects,
    ...(job.lasting ? { onRefusal: job.lasting.onRefusal } : {}),
  });

  return new Promise<JobOutcome>((resolve) => {
    let done = false;
    let ending = false;
    let synced = false;
    let pendingEnding: (() => void) | undefined;
    let syncTimer: NodeJS.Timeout | undefined;
    let cpuLimit: CpuLimit | undefined;
    // An R/E frame ends the call only once the stderr marker written before it has arrived, so that
    // no stderr log line of the call is lost to the race between the two pipes.
    const afterSync = (ending: () => void): void => {
      if (synced) return ending();
      pendingEnding = ending;
      syncTimer = setTimeout(ending, SYNC_GRACE_MS);
    };
    // A lasting run's budgets are a rate: each window starts them anew (the last window's logs are kept).
    const window = job.lasting
      ? setInterval(() => {
          proxy.renew();
          proc.renewOutput();
          logs = createLogCollector(settings.maxLogBytes, secrets);
        }, job.lasting.windowMs)
      : undefined;
    const finish = (outcome: { output: unknown } | { error: ExecutionFailure }, reusable: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(window);
      clearTimeout(syncTimer);
      job.signal?.removeEventListener('abort', onAbort);
      guard.unwatch(watched);
      // continues a process the duty cycle stopped, before it is parked or killed
      void cpuLimit?.end();
      proc.attach(null);
      const keep = reusable && settings.reuse;
      if (!keep) proc.kill('finished');
      const recorded = effects.snapshot();
      const base = {
        durationMs: Math.round((performance.now() - settings.startedAt) * 1000) / 1000,
        logs: logs.lines,
        logsTruncated: logs.truncated,
        ...(recorded.effects.length > 0 ? { effects: recorded.effects } : {}),
        ...(recorded.dropped > 0 ? { effectsDropped: recorded.dropped } : {}),
      };
      resolve({
        result:
          'error' in outcome
            ? { ok: false, error: outcome.error, ...base }
            : { ok: true, output: outcome.output, ...base },
        reusable: keep,
      });
    };
    const fail = (error: ExecutionFailure, reusable = false): void => finish({ error }, reusable);
    // (finish() kills the process: a malformed frame is never reusable)
    const malformed = (what: string): void =>
      fail(
        failure(ErrorCode.OutputInvalid, `tool ${JSON.stringify(job.tool.name)} produced a malformed ${what} frame`),
      );

    const onAbort = (): void => proc.kill('aborted');
    // the host's own record of the call's memory: evidence for a heap-OOM death (see outcome.ts)
    const memory: MemoryEvidence = { baselineBytes: undefined, peakBytes: 0 };
    const watched: Watched = {
      pid: proc.pid ?? -1,
      limitBytes: proc.limitBytes,
      overLimit: (rss) => proc.kill('memory_limit', String(rss)),
      sampled: (rss) => {
        memory.baselineBytes ??= rss;
        if (rss > memory.peakBytes) memory.peakBytes = rss;
      },
    };

    proc.attach({
      log: (text, cut) => {
        if (!done) logs.add(text, cut);
      },
      // a complete result frame that only waits for its sync marker wins over a later kill or exit
      killed: (reason, detail) => (pendingEnding ? pendingEnding() : fail(killFailure(ctx, reason, detail))),
      exited: (info) =>
        pendingEnding
          ? pendingEnding()
          : fail(info.killReason ? killFailure(ctx, info.killReason, undefined) : exitFailure(ctx, info, memory)),
      frame: (type, seq, payload, bytes) => {
        if (done) return;
        if (seq !== settings.seq) return malformed(`out-of-sequence (${seq} instead of ${settings.seq})`);
        if (type === 'S') {
          synced = true;
          return pendingEnding?.();
        }
        if (type === 'R' || type === 'E') {
          // one ending per call: a second result/error frame is never parsed
          if (ending) return malformed(`second ${type === 'R' ? 'result' : 'error'}`);
          ending = true;
        }
        if (type === 'R') {
          if (bytes > settings.maxResultBytes) {
            proc.kill('frame_too_large', 'R');
            return;
          }
          let output: unknown;
          try {
            output = JSON.parse(payload);
          } catch {
            return malformed('result');
          }
          return afterSync(() => finish({ output }, true));
        }
        if (type === 'E') {
          const error = errorFrameFailure(ctx, payload);
          // a call that ended in an error retires its process, even in warm mode
          return error ? afterSync(() => fail(error, false)) : malformed('error');
        }
        if (type === 'N') {
          // the harness reports a network use before it is made (it waits for nothing from us)
          const effect = netEffect(payload);
          if (!effect) return malformed('effect');
          effects.add(effect.kind, effect.target);
          return;
        }
        if (type === 'W') {
          settings.onWaiting?.();
          return;
        }
        if (type === 'P') {
          // context.progress(value): forwarded as it comes, secrets redacted (the size cap is the harness's
          // and, for a hostile tool, the output cap that counts every frame byte)
          let value: unknown;
          try {
            value = JSON.parse(redactSecrets(payload, secrets));
          } catch {
            return; // only a redaction can break the harness's JSON (a secret like "1"): drop that report
          }
          try {
            job.onProgress?.(value);
          } catch {
            // a listener's fault is not the tool's
          }
          return;
        }
        if (type === 'A') {
          const over = proxy.admit(bytes);
          if (over !== undefined) return proc.kill('api_limit', over);
          const reply = proxy.handle(payload);
          if (!reply) return malformed('context.api');
          void reply.then((answer) => {
            if (!done) proc.send(proxy.replyLine(answer));
          });
          return;
        }
        malformed(`unknown (${type})`);
      },
    });

    const timer = setTimeout(() => proc.kill('timeout'), settings.timeoutMs);
    if (job.signal?.aborted) return proc.kill('aborted');
    job.signal?.addEventListener('abort', onAbort, { once: true });
    if (proc.state !== 'ready' && proc.state !== 'idle') {
      return fail(notSent(`the sandbox process was ${proc.state} before the job was sent`));
    }
    guard.watch(watched);
    let frame: string;
    try {
      frame = JSON.stringify({
        t: 'job',
        seq: settings.seq,
        source64: settings.factory ? '' : settings.source64,
        lang: settings.lang,
        ...(settings.factory ? { factory: settings.factory } : {}),
        input: job.input,
        secrets: job.secrets,
        request: job.request,
        maxResultBytes: settings.maxResultBytes,
        reuse: settings.reuse,
      });
    } catch (err) {
      return fail(
        failure(
          ErrorCode.InputInvalid,
          `input of tool ${JSON.stringify(job.tool.name)} is not JSON: ${(err as Error).message}`,
        ),
      );
    }
    if (!proc.startJob(frame + '\n')) {
      return fail(notSent(`the sandbox process was ${proc.state} before the job was sent`));
    }
    const percent = job.tool.cpuPercent;
    if (percent !== undefined && percent < 100 && proc.pid !== undefined) {
      void startCpuLimit({ pid: proc.pid, grouped: proc.grouped, percent, cgroup: proc.cgroup }).then((limit) => {
        if (done) void limit.end();
        else cpuLimit = limit;
      });
    }
  });
}

/** The `{kind, target}` of a harness effect frame, or undefined when it is not one. */
function netEffect(payload: string): { kind: 'net.fetch' | 'net.connect'; target: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { kind, target } = value as { kind?: unknown; target?: unknown };
  if (
    typeof kind !== 'string' ||
    !NET_EFFECT_KINDS.has(kind) ||
    typeof target !== 'string' ||
    target === '' ||
    target.length > 1024
  )
    return undefined;
  return { kind: kind as 'net.fetch' | 'net.connect', target };
}
