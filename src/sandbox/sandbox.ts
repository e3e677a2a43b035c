// Composition of the sandbox: Deno binary check, memory enforcement, warm pool, tool compiler, and
// run() which normalises a job's limits, picks a process and returns an ExecutionResult for every
// ending. Isolation per call: `warm` (default) serves consecutive calls of exactly one tool version,
// permission set, limits and secrets from one process, one call at a time, each call importing a new
// module instance; `process` (config.isolation, a tool's own `isolation: 'process'`, or the caller's
// demand for one call, `job.isolation`) gives the call a fresh process that is killed afterwards.
//
// States: open -> closed. After close() every process is killed, every temp dir removed, and run()
// answers sandbox.crashed without spawning anything.

import { createHash } from 'node:crypto';
import { access, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import { ErrorCode, RunnerError, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { failure, type ExecutionFailure, type ExecutionResult } from '../result.js';
import { HARNESS_PATH, IMPORT_MAP_JSON } from './command.js';
import { resolveDeno } from './deno-binary.js';
import { createMemoryGuard, type MemoryGuard } from './memory-guard.js';
import { denyNetFor, validateNetHosts, type PrivateGrant } from './net-policy.js';
import { lookup } from 'node:dns/promises';
import { createPool, type PoolKeySpec } from './pool.js';
import { cpuSlotOf } from '../queue/cpu-slot.js';
import { createActivityMonitor } from './activity.js';
import { resolveCapacity } from './capacity.js';
import { createDirectLauncher, createSpawnerLauncher } from './launcher.js';
import { spawnSandboxProcess, sweepTempDirs, TEMP_PREFIX, type SandboxProcess } from './process.js';
import { runJob } from './run-job.js';
import { createToolCompiler, transpileHarness, type ToolCompiler } from './transpile.js';
import type { Sandbox, SandboxJob } from './types.js';

const MIN_MEMORY_MB = 16;
/** Slack on top of maxResultBytes for error frames (message + stack) and JSON escaping. */
const FRAME_SLACK_BYTES = 256 * 1024;

/** Inputs of createSandbox. */
export interface CreateSandboxOptions {
  config: Config;
  logger: Logger;
  /** Memory enforcement override (tests): a ready guard instead of detecting one. */
  guard?: MemoryGuard;
  /** Tool compiler override (tests, bench): e.g. one without a transpiler. */
  compiler?: ToolCompiler;
  /** Least spawn cost the pool assumes when it weighs waiting for a busy process (tests). */
  minSpawnCostMs?: number;
}

function clamp(value: number, fallback: number, min: number, max: number): number {
  const n = Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
  return Math.min(max, Math.max(min, n));
}

/** `net` as an extra permission is `net: true`: bare --allow-net (any host by name; the private-range deny list stays). */
const EXTRA_PERMISSIONS: ReadonlySet<string> = new Set(['read', 'write', 'env', 'run', 'sys', 'net']);

function crashed(message: string, startedAt: number, details?: Record<string, unknown>): ExecutionResult {
  return errorResult(failure(ErrorCode.SandboxCrashed, message, details), startedAt);
}

function errorResult(error: ExecutionFailure, startedAt: number): ExecutionResult {
  return {
    ok: false,
    error,
    durationMs: Math.round((performance.now() - startedAt) * 1000) / 1000,
    logs: [],
    logsTruncated: false,
  };
}

/** Resolves + checks the Deno binary and the harness, detects memory enforcement, pre-warms the default key. */
export async function createSandbox(options: CreateSandboxOptions): Promise<Sandbox> {
  const { config } = options;
  const logger = options.logger.child({ component: 'sandbox' });
  const deno = await resolveDeno(config.denoPath);
  await access(HARNESS_PATH).catch(() => {
    throw new RunnerError(ErrorCode.ConfigInvalid, `sandbox harness not found at ${HARNESS_PATH}`);
  });
  const guard = options.guard ?? (await createMemoryGuard({ logger }));
  const grants = await resolvePrivateGrants(config.allowPrivateHosts, logger);
  const capacity = resolveCapacity(config);
  logger.info('sandbox ready', {
    deno: deno.path,
    version: deno.version,
    memoryEnforcement: guard.mode,
    poolSize: config.poolSize,
    poolMax: capacity.poolMax,
  });
  const limits = {
    maxOutputBytes: config.maxOutputBytes,
    maxFrameBytes: config.maxResultBytes + FRAME_SLACK_BYTES,
    maxLogLineBytes: Math.max(1, config.maxLogBytes),
  };
  void sweepTempDirs(logger);
  const launcher = config.sandboxLauncher === 'direct' ? createDirectLauncher() : createSpawnerLauncher();
  let nextId = 0;
  let nextSeq = 0;
  let closed = false;
  const compiler = options.compiler ?? (await createToolCompiler());
  const harness = await prepareHarness();
  if (!compiler.transpiles)
    logger.warn('esbuild is not installed: tools are sent as TypeScript and Deno transpiles them on every call');
  // warm processes that imported a tool's module factory: later calls send only its id
  const factoryLoaded = new WeakMap<SandboxProcess, string>();
  // a call whose process sleeps lends its CPU slot (queue/cpu-slot.ts, activity.ts)
  const activity = createActivityMonitor();
  const pool = createPool({
    maxReuseCalls: config.warmMaxCalls,
    ...(options.minSpawnCostMs !== undefined ? { minSpawnCostMs: options.minSpawnCostMs } : {}),
    poolSize: config.poolSize,
    poolMax: capacity.poolMax,
    poolIdleMs: config.poolIdleMs,
    guard,
    logger,
    spawn: (spec) =>
      spawnSandboxProcess({
        id: ++nextId,
        key: spec.key,
        denoPath: deno.path,
        net: spec.net,
        ...(spec.deny ? { deny: spec.deny } : {}),
        extra: spec.extra,
        memoryMb: spec.memoryMb,
        limits,
        guard,
        launcher,
        logger,
        harnessPath: harness.path,
        importMapPath: harness.importMapPath,
      }),
  });
  // Last resort when the service exits without close(): detached groups are not killed by Node.
  const killAll = (): void => {
    for (const proc of pool.live()) proc.kill('closed');
  };
  process.on('exit', killAll);

  const specFor = (
    net: readonly string[],
    memoryMb: number,
    extra: readonly string[] = [],
    privateNet: readonly string[] = [],
  ): PoolKeySpec => {
    const granted = privateNet.map((entry) => grants.get(entry) ?? { entry, addresses: [] });
    const allow = [...net, ...privateNet];
    return {
      key: `${memoryMb}|${allow.join(',')}|${extra.join(',')}`,
      net: allow,
      deny: denyNetFor(net, granted),
      extra,
      memoryMb,
    };
  };
  /** The private hosts of a tool, re-checked against the operator's grants for its name (defence in depth). */
  const privateNetOf = (tool: SandboxJob['tool']): string[] => {
    const wanted = [...new Set(tool.privateNet ?? [])].sort();
    const allowed = Object.hasOwn(config.allowPrivateHosts, tool.name)
      ? (config.allowPrivateHosts[tool.name] ?? [])
      : [];
    const refused = wanted.filter((entry) => !allowed.includes(entry));
    if (refused.length > 0) {
      throw new RunnerError(
        ErrorCode.PermissionDenied,
        `tool ${JSON.stringify(tool.name)} asks for private host(s) the operator did not grant it (--allow-private-hosts): ${refused.join(', ')}`,
      );
    }
    return wanted;
  };
  pool.prewarm(specFor([], clamp(config.defaultMemoryMb, config.defaultMemoryMb, MIN_MEMORY_MB, config.maxMemoryMb)));

  // Every call reports how long it waited for a process and how long it ran on it (job.onTimings).
  const run = async (job: SandboxJob): Promise<ExecutionResult> => {
    const startedAt = performance.now();
    const split: { gotAt?: number } = {};
    const result = await runCall(job, startedAt, split);
    if (job.onTimings) {
      const endedAt = performance.now();
      const gotAt = split.gotAt ?? endedAt;
      job.onTimings({ waitMs: gotAt - startedAt, runMs: endedAt - gotAt });
    }
    return result;
  };

  const runCall = async (job: SandboxJob, startedAt: number, split: { gotAt?: number }): Promise<ExecutionResult> => {
    const { tool } = job;
    if (closed)
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
      net = validateNetHosts(tool.net);
      privateNet = privateNetOf(tool);
    } catch (err) {
      const coerced = coerceError(err, ErrorCode.PermissionDenied);
      return errorResult(failure(coerced.code, coerced.message), startedAt);
    }
    // validation bounds agent tools by maxTimeoutMs and the operator's files by bootstrapMaxTimeoutMs
    const timeoutMs = clamp(
      tool.timeoutMs,
      config.defaultTimeoutMs,
      1,
      Math.max(config.maxTimeoutMs, config.bootstrapMaxTimeoutMs),
    );
    const memoryMb = clamp(tool.memoryMb, config.defaultMemoryMb, MIN_MEMORY_MB, config.maxMemoryMb);
    // Extra permissions: only the known ones, and only what the operator allows (defence in depth:
    // validation already refused anything else for agent-created tools).
    const extra = [...new Set(tool.extraPermissions ?? [])].sort();
    const refused = extra.filter((name) => !EXTRA_PERMISSIONS.has(name) || !config.bootstrapAllow.includes(name));
    if (refused.length > 0) {
      return errorResult(
        failure(
          ErrorCode.PermissionDenied,
          `tool ${JSON.stringify(tool.name)} asks for permission(s) the operator does not allow: ${refused.join(', ')}`,
        ),
        startedAt,
      );
    }
    const spec = specFor(net, memoryMb, extra, privateNet);
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
    const tracked = slot && proc.pid !== undefined ? activity.track(proc.pid, slot) : undefined;
    if (reuse) pool.callStarted(reuseKey);
    // warm mode: the tool's module factory, imported once per process, called once per call
    const factory = reuse ? compiled.factory : undefined;
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
                factoryLoaded.get(proc) === factory.id
                  ? { id: factory.id }
                  : { id: factory.id, code64: factory.code64 },
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
      guard,
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

  return {
    run,
    stats: () => ({ ...pool.stats(), lent: activity.lent(), memoryEnforcement: guard.mode }),
    prewarm(tools) {
      const keys = new Set<string>();
      for (const tool of closed ? [] : tools) {
        let net: string[];
        let privateNet: string[];
        try {
          net = validateNetHosts(tool.net);
          privateNet = privateNetOf(tool);
        } catch {
          continue; // run() answers such a tool with permission.denied; nothing to warm
        }
        const extra = [...new Set(tool.extraPermissions ?? [])].sort();
        if (extra.some((name) => !EXTRA_PERMISSIONS.has(name) || !config.bootstrapAllow.includes(name))) continue;
        const spec = specFor(
          net,
          clamp(tool.memoryMb, config.defaultMemoryMb, MIN_MEMORY_MB, config.maxMemoryMb),
          extra,
          privateNet,
        );
        if (keys.has(spec.key)) continue;
        keys.add(spec.key);
        pool.prewarm(spec, 1);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      activity.close();
      await pool.close();
      await launcher.close();
      await harness.remove();
      guard.close();
      process.off('exit', killAll);
    },
  };
}

const ABORTED = Symbol('aborted');

/**
 * Resolves the host of every `--allow-private-hosts` entry once, at start-up: the addresses are cut
 * out of the private-range deny list (denyNetFor). A name that does not resolve keeps no address, so
 * every private address stays denied for it (logged).
 */
async function resolvePrivateGrants(
  grants: Readonly<Record<string, readonly string[]>>,
  logger: Logger,
): Promise<Map<string, PrivateGrant>> {
  const out = new Map<string, PrivateGrant>();
  for (const entry of new Set(Object.values(grants).flat())) {
    const host = entry.slice(0, entry.lastIndexOf(':')).replace(/^\[(.*)\]$/, '$1');
    try {
      const found = await lookup(host, { all: true, verbatim: true });
      out.set(entry, { entry, addresses: [...new Set(found.map((a) => a.address))] });
    } catch (err) {
      logger.warn('private host does not resolve; it stays denied', { entry, error: coerceError(err).message });
      out.set(entry, { entry, addresses: [] });
    }
  }
  if (out.size > 0)
    logger.info('private hosts granted', { grants: Object.fromEntries([...out].map(([k, v]) => [k, v.addresses])) });
  return out;
}

/**
 * The harness every process starts from, and its import map. Deno strips the harness's types on every
 * boot (~8 ms of CPU, and no cache survives: DENO_DIR is nowhere), so the service strips them once
 * and writes the JavaScript, with the import map, to a private temp dir (removed at close; by the
 * next service's sweep if this one dies). Without esbuild, the TypeScript itself.
 */
async function prepareHarness(): Promise<{ path: string; importMapPath: string; remove(): Promise<void> }> {
  const js = await transpileHarness(await readFile(HARNESS_PATH, 'utf8'));
  const dir = await mkdtemp(join(tmpdir(), `${TEMP_PREFIX}${process.pid}-harness-`));
  const importMapPath = join(dir, 'import-map.json');
  await writeFile(importMapPath, IMPORT_MAP_JSON, { mode: 0o400 });
  const remove = (): Promise<void> => rm(dir, { recursive: true, force: true });
  if (js === undefined) return { path: HARNESS_PATH, importMapPath, remove };
  const path = join(dir, 'harness.js');
  await writeFile(path, js, { mode: 0o400 });
  return { path, importMapPath, remove };
}

// Digests of tool sources, by source text (a Map lookup hashes the string once per string object; a
// sha256 of the source on every call cost more): at most 512, the oldest dropped.
const sourceDigests = new Map<string, string>();
function sourceDigest(source: string): string {
  let digest = sourceDigests.get(source);
  if (digest === undefined) {
    digest = createHash('sha256').update(source).digest('hex');
    sourceDigests.set(source, digest);
    if (sourceDigests.size > 512) sourceDigests.delete(sourceDigests.keys().next().value as string);
  }
  return digest;
}

/** The key of the warm processes that may serve a call: tool version, source, permissions, limits, secrets. */
function warmKey(
  tool: SandboxJob['tool'],
  specKey: string,
  timeoutMs: number,
  secrets: Record<string, string>,
): string {
  const names = Object.keys(secrets);
  let digest = sourceDigest(tool.source);
  if (names.length > 0) {
    const hash = createHash('sha256').update(digest).update('\0');
    for (const name of names.sort()) hash.update(JSON.stringify([name, secrets[name]]));
    digest = hash.digest('hex');
  }
  return `${tool.name}@${tool.version}#${digest.slice(0, 32)}|${specKey}|${timeoutMs}|${tool.api}|cpu:${tool.cpuPercent ?? 100}`;
}

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
