// The CPU slot a running job holds, and how the code that runs the job reaches it.
//
// A job starts *computing*: it holds one of the queue's CPU slots. Whoever can see that the job only
// waits (the sandbox watches its process: a timer, the network, a nested call) lends the slot back with
// `waiting()`, and takes it again with `computing()` when the process runs again. The queue hands the
// slot out through the job's abort signal (`cpuSlotOf(signal)`), which the request path passes down to
// the sandbox untouched, so no layer in between has to know about slots.

/** The CPU slot of one running job (see the module comment). */
export interface CpuSlot {
  /** The job is waiting (not using CPU): its slot may run another job. Idempotent. */
  waiting(): void;
  /** The job computes again: it counts against the CPU slots again (it never waits for one). Idempotent. */
  computing(): void;
  /** Whether another job waits for a CPU slot now (so telling waiting() would start it). */
  contended(): boolean;
}

const slots = new WeakMap<AbortSignal, CpuSlot>();

/** Makes `slot` reachable from the job's `signal` (the queue does this when the job starts). */
export function attachCpuSlot(signal: AbortSignal, slot: CpuSlot): void {
  slots.set(signal, slot);
}

/** The CPU slot of the job whose abort signal this is, if a queue started it. */
export function cpuSlotOf(signal: AbortSignal | undefined): CpuSlot | undefined {
  return signal === undefined ? undefined : slots.get(signal);
}
