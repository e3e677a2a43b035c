// The lists every part of the warm pool shares (pool.ts): processes by state and key, the permission
// sets seen, the counters /metrics reads, and the small helpers that move a process between lists.

import type { PoolKeySpec, PoolStats } from './pool-types.js';
import type { SandboxProcess } from './process.js';

/** Processes of one map, by key (permission set, or tool version for parked processes). */
export type ProcLists = Map<string, SandboxProcess[]>;

/** The shared state of one pool. */
export interface PoolState {
  /** Every live process (removed once its exit is handled). */
  readonly all: Set<SandboxProcess>;
  /** Spares ready for a job, by permission-set key. */
  readonly warm: ProcLists;
  /** Spares still booting, by permission-set key. */
  readonly starting: ProcLists;
  /** Parked reuse processes, by tool-version key. */
  readonly idle: ProcLists;
  /** Permission sets seen, with when each was last used (least recently used gives up room). */
  readonly specs: Map<string, PoolKeySpec & { lastUsed: number }>;
  readonly counts: Omit<PoolStats, 'warm' | 'busy'>;
  poolMax: number;
  closed: boolean;
}

export function createPoolState(poolMax: number): PoolState {
  return {
    all: new Set(),
    warm: new Map(),
    starting: new Map(),
    idle: new Map(),
    specs: new Map(),
    counts: { spawned: 0, evicted: 0, retired: 0, waitedForBusy: 0 },
    poolMax,
    closed: false,
  };
}

/** The list of `key` in `map`, created empty when missing. */
export function list<K>(map: Map<K, SandboxProcess[]>, key: K): SandboxProcess[] {
  let entries = map.get(key);
  if (!entries) map.set(key, (entries = []));
  return entries;
}

/** Removes `proc` from whichever list of `map` holds it (true if one did). */
export function remove(map: ProcLists, proc: SandboxProcess): boolean {
  for (const entries of map.values()) {
    const at = entries.indexOf(proc);
    if (at !== -1) {
      entries.splice(at, 1);
      return true;
    }
  }
  return false;
}

function count(map: ProcLists): number {
  let n = 0;
  for (const entries of map.values()) n += entries.length;
  return n;
}

/** Whether the pool has room for one more spare or parked process (busy ones do not count). */
export function hasRoom(state: PoolState): boolean {
  return count(state.warm) + count(state.starting) + count(state.idle) < state.poolMax;
}

/** The first (head) or last (tail) process of `entries` in `state`; a killed one stays listed until its exit is handled: never hand one out. */
export function take(
  entries: SandboxProcess[] | undefined,
  state: 'ready' | 'idle',
  from: 'head' | 'tail',
): SandboxProcess | undefined {
  while (entries && entries.length > 0) {
    const proc = from === 'head' ? entries.shift() : entries.pop();
    if (proc?.state === state) return proc;
  }
  return undefined;
}
