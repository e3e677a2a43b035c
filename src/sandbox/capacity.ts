// How many calls and processes this machine can carry, when the operator does not say (0 = auto):
// processes are bounded by memory, computing calls by cores.

import { availableParallelism, totalmem } from 'node:os';

/** What a sandbox process may cost beyond its heap limit (the Deno runtime's share; see memory-guard.ts). */
const RUNTIME_MB = 64;
/** Share of the machine's memory that sandbox processes may plan to use at their limits. */
const MEMORY_SHARE = 0.5;
const MAX_PROCESSES = 256;

/** The operator's settings (0 = auto). */
export interface CapacitySettings {
  concurrency: number;
  cpuConcurrency: number;
  poolMax: number;
  defaultMemoryMb: number;
}

/** The machine (tests pass their own). */
export interface Machine {
  totalBytes: number;
  cores: number;
}

/** Resolved figures. */
export interface Capacity {
  /** Calls in flight at once (computing or waiting): as many processes as memory holds at their limits. */
  concurrency: number;
  /** Calls computing at once: 2 per core (a call spends part of its time in pipes and the runner). */
  cpuConcurrency: number;
  /** Processes the pool keeps (warm spares + parked warm processes): 4 per CPU slot, within the memory bound. */
  poolMax: number;
  /** The memory bound on live processes. */
  processes: number;
}

/** Resolves the auto (0) settings for this machine. */
export function resolveCapacity(
  settings: CapacitySettings,
  machine: Machine = { totalBytes: totalmem(), cores: availableParallelism() },
): Capacity {
  const perProcess = (Math.max(16, settings.defaultMemoryMb) + RUNTIME_MB) * 1024 * 1024;
  const processes = Math.max(4, Math.min(MAX_PROCESSES, Math.floor((machine.totalBytes * MEMORY_SHARE) / perProcess)));
  const cpuConcurrency = settings.cpuConcurrency > 0 ? settings.cpuConcurrency : Math.max(2, machine.cores * 2);
  const concurrency = settings.concurrency > 0 ? settings.concurrency : processes;
  const poolMax = settings.poolMax > 0 ? settings.poolMax : Math.min(processes, Math.max(8, cpuConcurrency * 4));
  return { concurrency, cpuConcurrency, poolMax, processes };
}
