// Public types of the Deno sandbox: what callers hand in (a validated tool plus one call) and the
// host-side implementation of `context.api` they may provide.

import type { ExecutionResult } from '../result.js';

/** A validated tool (validation itself is src/screen's job; the sandbox re-checks what it relies on). */
export interface SandboxTool {
  name: string;
  version: string;
  /** TypeScript source exporting `async execute(input, context)`. */
  source: string;
  /** Allowed hosts: "api.example.com", "*.example.com", "host:8443"; [] = no network. */
  net: string[];
  /**
   * Operator-granted private `host:port`s (`--allow-private-hosts`, bootstrapped tools only); the
   * sandbox re-checks them against `config.allowPrivateHosts[name]`.
   */
  privateNet?: readonly string[];
  /** Grant for `context.api`. */
  api: false | 'read' | 'write';
  /** Grant for `context.tools.call` (`permissions.tools`): any tool (`true`) or the listed names; absent = none. */
  tools?: true | readonly string[];
  /**
   * Extra Deno permissions (`read`, `write`, `env`, `run`, `sys`, and `net` = any public host) — only for operator-trusted
   * (bootstrapped) tools, and only those listed in `config.bootstrapAllow`; granted unscoped.
   */
  extraPermissions?: readonly string[];
  timeoutMs: number;
  memoryMb: number;
  /** Share of one core (1-99 %) the process may use while the call runs; absent = no CPU limit. */
  cpuPercent?: number;
  /** `'process'`: the tool demands a fresh process per call, whatever the configured isolation. */
  isolation?: 'warm' | 'process';
}

/** `context.api` performed by the HOST with its own credentials; the tool never sees a token. */
export interface SandboxApi {
  getBreadcrumb(id: string): Promise<unknown>;
  createBreadcrumb(body: unknown): Promise<unknown>;
  updateBreadcrumb(id: string, version: number | undefined, patch: unknown): Promise<unknown>;
  searchBreadcrumbs(params: unknown): Promise<unknown>;
}

/** `context.tools.call` performed by the HOST: a nested request through the one request path. */
export interface SandboxToolCaller {
  /** Runs tool `name` with `input`; resolves with its output, rejects (RunnerError) with its error. */
  call(name: string, input: unknown, options: { version?: string; idempotencyKey?: string }): Promise<unknown>;
}

/** One call of a tool. */
export interface SandboxJob {
  tool: SandboxTool;
  input: unknown;
  /** Only the tool's declared secrets, resolved by the caller. */
  secrets: Record<string, string>;
  request: { id: string; workspace: string; agentId?: string; trigger_event?: unknown };
  /** `process`: the caller demands a fresh, never-reused process for this call, whatever the tool or config say. */
  isolation?: 'process';
  /** Host-side implementation of context.api for this call. */
  api?: SandboxApi;
  /** Host-side implementation of context.tools.call for this call (absent: calls fail as dependency.unavailable). */
  tools?: SandboxToolCaller;
  /**
   * A run that lasts (a continuous tool): its per-call budgets (context.api calls, frames and bytes,
   * output, logs) renew every `windowMs` instead of bounding the whole run, so they act as a rate;
   * each rate.exceeded refusal is told to `onRefusal`.
   */
  lasting?: { windowMs: number; onRefusal(message: string): void };
  /** Abort = kill now (service shutdown); the call ends as sandbox.crashed with details.reason "aborted". */
  signal?: AbortSignal;
  /** Each `context.progress(value)` of the tool while the call runs (JSON value, secrets redacted). */
  onProgress?(value: unknown): void;
  /**
   * Told once, when the call ends, how its time split: waiting for a process (warm, in-flight or
   * fresh spawn; includes the call's own checks before it) and the run on that process.
   */
  onTimings?(timings: { waitMs: number; runMs: number }): void;
}

/** Which mechanism caps a sandbox process's total memory (the V8 heap flag is always set too). */
export type MemoryEnforcement = 'cgroup' | 'rss-sampling';

/** Counters of the process pool. */
export interface SandboxStats {
  /** Started processes waiting for a job (fresh, or idle reuse-mode processes). */
  warm: number;
  /** Processes running a job. */
  busy: number;
  /** Processes spawned since creation. */
  spawned: number;
  /** Processes killed to make room for another permission set or tool version (pool at its maximum). */
  evicted: number;
  /** Processes retired: unused too long, busy while parked, at `warmMaxCalls`, or no room to park. */
  retired: number;
  /** Calls that waited for a busy warm process of their tool version instead of taking a fresh one. */
  waitedForBusy: number;
  /** Running calls whose process sleeps now, their CPU slot lent to another call. */
  lent: number;
  memoryEnforcement: MemoryEnforcement;
}

/** Runs tool calls in locked-down Deno processes. */
export interface Sandbox {
  /** Runs one call; never throws for tool behaviour (every ending is an ExecutionResult). */
  run(job: SandboxJob): Promise<ExecutionResult>;
  stats(): SandboxStats;
  /**
   * Warms one process per distinct permission set of `tools` (net list, memory, extra permissions)
   * in the pool's free room, so the first call of each skips a cold spawn; never evicts warm processes.
   */
  prewarm?(tools: readonly SandboxTool[]): void;
  /** Kills every process and removes every temp dir; running calls end as sandbox.crashed. */
  close(): Promise<void>;
}
