// Composition of the sandbox: Deno binary check, memory enforcement, warm pool, tool compiler, and
// run() which normalises a job's limits, picks a process and returns an ExecutionResult for every
// ending (sandbox-call.ts). Isolation per call: `warm` (default) serves consecutive calls of exactly
// one tool version, permission set, limits and secrets from one process, one call at a time, each
// call importing a new module instance; `process` (config.isolation, a tool's own
// `isolation: 'process'`, or the caller's demand for one call, `job.isolation`) gives the call a fresh
// process that is killed afterwards.
//
// States: open -> closed. After close() every process is killed, every temp dir removed, and run()
// answers sandbox.crashed without spawning anything.

import { access } from 'node:fs/promises';
import type { Config } from '../config/index.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ExecutionResult } from '../result.js';
import { HARNESS_PATH } from './command.js';
import { resolveDeno } from './deno-binary.js';
import { createMemoryGuard, type MemoryGuard } from './memory-guard.js';
import { createPool } from './pool.js';
import { createActivityMonitor } from './activity.js';
import { resolveCapacity } from './capacity.js';
import type { IdleCpuRule } from './cpu.js';
import { prepareHarness } from './harness-file.js';
import { createDirectLauncher, createSpawnerLauncher, type Launcher } from './launcher.js';
import { SANDBOX_NICENESS, spawnSandboxProcess, sweepTempDirs } from './process.js';
import { createDenoRelayLauncher } from './relay-launcher.js';
import { createCallRunner } from './sandbox-call.js';
import { createPermissions, resolvePrivateGrants } from './sandbox-permissions.js';
import { createToolCompiler, type ToolCompiler } from './transpile.js';
import type { Sandbox, SandboxJob } from './types.js';

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
  /** How much CPU a parked reuse process may use (tests: a huge allowance leaves parked processes to the memory guard). */
  idleCpu?: IdleCpuRule;
}

/**
 * The launcher of config.sandboxLauncher. `auto`: the Deno relay when calls get a fresh process each
 * (`isolation: process`: a spawn per call, and the relay's spawn costs less), else the spawner (a warm
 * process serves many calls, and each of its frames would take the relay's extra hop).
 */
function createLauncher(config: Config, denoPath: string): Launcher {
  const kind =
    config.sandboxLauncher === 'auto'
      ? config.isolation === 'process'
        ? 'deno-relay'
        : 'spawner'
      : config.sandboxLauncher;
  if (kind === 'direct') return createDirectLauncher();
  if (kind === 'deno-relay') return createDenoRelayLauncher({ denoPath, niceness: SANDBOX_NICENESS });
  return createSpawnerLauncher();
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
  const permissions = createPermissions(config, await resolvePrivateGrants(config.allowPrivateHosts, logger));
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
  const launcher = createLauncher(config, deno.path);
  let nextId = 0;
  let closed = false;
  const compiler = options.compiler ?? (await createToolCompiler());
  const harness = await prepareHarness();
  if (!compiler.transpiles)
    logger.warn('esbuild is not installed: tools are sent as TypeScript and Deno transpiles them on every call');
  // a call whose process sleeps lends its CPU slot (queue/cpu-slot.ts, activity.ts)
  const activity = createActivityMonitor();
  const pool = createPool({
    maxReuseCalls: config.warmMaxCalls,
    ...(options.minSpawnCostMs !== undefined ? { minSpawnCostMs: options.minSpawnCostMs } : {}),
    ...(options.idleCpu ? { idleCpu: options.idleCpu } : {}),
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
        sharedCwd: harness.sharedCwd,
      }),
  });
  // Last resort when the service exits without close(): detached groups are not killed by Node.
  const killAll = (): void => {
    for (const proc of pool.live()) proc.kill('closed');
  };
  process.on('exit', killAll);
  pool.prewarm(permissions.defaultSpec());
  const runCall = createCallRunner({
    config,
    logger,
    pool,
    guard,
    compiler,
    permissions,
    activity,
    isClosed: () => closed,
  });

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

  return {
    run,
    stats: () => ({ ...pool.stats(), lent: activity.lent(), memoryEnforcement: guard.mode }),
    prewarm(tools) {
      const keys = new Set<string>();
      for (const tool of closed ? [] : tools) {
        let net: string[];
        let privateNet: string[];
        try {
          net = permissions.netOf(tool);
          privateNet = permissions.privateNetOf(tool);
        } catch {
          continue; // run() answers such a tool with permission.denied; nothing to warm
        }
        const { extra, refused } = permissions.extraOf(tool);
        if (refused.length > 0) continue;
        const spec = permissions.specFor(net, permissions.memoryOf(tool), extra, privateNet);
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
