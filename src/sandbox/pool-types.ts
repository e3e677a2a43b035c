// The warm pool's interface, its options and counters (pool.ts builds it).

import type { IdleCpuRule } from './cpu.js';
import type { Logger } from '../logger.js';
import type { MemoryGuard } from './memory-guard.js';
import type { SandboxProcess } from './process.js';

/** A permission set: processes with the same key are interchangeable. */
export interface PoolKeySpec {
  key: string;
  net: readonly string[];
  /** The `--deny-net` list (denyNetFor); DENY_NET unless the tool has operator-granted private hosts. */
  deny?: readonly string[];
  /** Extra `--allow-*` permissions (operator-trusted tools only). */
  extra: readonly string[];
  memoryMb: number;
}

/** Bounds and the spawn function of a pool. */
export interface PoolOptions {
  poolSize: number;
  poolMax: number;
  poolIdleMs: number;
  spawn(spec: PoolKeySpec): SandboxProcess;
  guard: MemoryGuard;
  logger: Logger;
  /** A warm (reuse-mode) process serves at most this many calls, then is retired. */
  maxReuseCalls: number;
  /** How much CPU a parked reuse process may use (default IDLE_CPU_RULE). */
  idleCpu?: IdleCpuRule;
  /** Least cost of a spawn waitForReuse assumes (tests: a high floor makes waiting certain); default 0. */
  minSpawnCostMs?: number;
}

/** Counters of the pool (spawned, evicted and retired count since creation). */
export interface PoolStats {
  warm: number;
  busy: number;
  spawned: number;
  /** Processes killed to make room for another key (pool at its maximum). */
  evicted: number;
  /** Processes retired: idle too long, busy while parked, served their maximum, or no room to park. */
  retired: number;
  /** Calls that waited for a busy process of their tool version instead of taking a fresh one. */
  waitedForBusy: number;
}

/** The warm pool of one sandbox. */
export interface Pool {
  /** A ready process for `spec`: warm if possible, else an in-flight or fresh spawn. Rejects on spawn failure. */
  acquire(spec: PoolKeySpec): Promise<SandboxProcess>;
  /** An idle reuse-mode process of this tool version, if one is parked. */
  acquireReuse(reuseKey: string): SandboxProcess | undefined;
  /** Parks a reuse-mode process after a clean call (or retires it when over a bound). */
  park(proc: SandboxProcess, reuseKey: string): void;
  /** The call on a process of `spec` ended: refill its key in the background. */
  release(spec: PoolKeySpec): void;
  /** Returns an unused ready process (e.g. the caller was aborted while waiting). */
  giveBack(proc: SandboxProcess): void;
  /**
   * Starts filling `spec`'s key in the background. With `count`: at most that many processes, only
   * into free room (never evicting another key), and the key counts as least recently used.
   */
  prewarm(spec: PoolKeySpec, count?: number): void;
  /** Warm mode: a call of tool version `reuseKey` runs on a process (callEnded follows). */
  callStarted(reuseKey: string): void;
  /** Warm mode: that call ended after `runMs`; `reusable`: its process is being parked. */
  callEnded(reuseKey: string, runMs: number, reusable: boolean): void;
  /**
   * Warm mode, no idle process of `reuseKey`: a promise of the next one a call of that version parks,
   * when waiting for it is cheaper than spawning (no ready spare of `specKey` that the pool has room to
   * refill, its calls run shorter than a spawn on average, and a busy process is free for this
   * waiter); undefined when not. Resolves undefined when the wait
   * ends without a process (then the caller takes a fresh one).
   */
  waitForReuse(reuseKey: string, specKey: string): Promise<SandboxProcess | undefined> | undefined;
  stats(): PoolStats;
  /** Every live process (for shutdown). */
  live(): SandboxProcess[];
  close(): Promise<void>;
}
