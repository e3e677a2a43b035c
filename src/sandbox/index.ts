// Public surface of the Deno sandbox: createSandbox() runs tool calls in locked-down, pooled Deno
// processes; resolveDeno() finds and checks the binary. Everything else in this folder is internal.
/** Runs tool calls in pooled, locked-down Deno processes. */
export { createSandbox, type CreateSandboxOptions } from './sandbox.js';
/** Finds and checks the Deno binary (also used by health checks and the CLI). */
export { resolveDeno, REQUIRED_DENO_VERSION } from './deno-binary.js';
/** Re-validation of tool host lists and the always-on private-range deny list. */
export { validateNetHosts, DENY_NET } from './net-policy.js';
/** Code caching: tool TypeScript transpiled once per version (createSandbox's `compiler` option). */
export { createToolCompiler, type ToolCompiler } from './transpile.js';
/** Public types. */
export type {
  Sandbox,
  SandboxApi,
  SandboxJob,
  SandboxStats,
  SandboxTool,
  SandboxToolCaller,
  MemoryEnforcement,
} from './types.js';
export { sandboxToolOf } from './tool-spec.js';
/** Calls, CPU slots and pool size from the machine's memory and cores (the `0 = auto` settings). */
export { resolveCapacity, type Capacity } from './capacity.js';
