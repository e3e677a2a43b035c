// Public surface of the Deno sandbox: createSandbox() runs tool calls in locked-down, pooled Deno
// processes; resolveDeno() finds and checks the binary. Everything else in this folder is internal.
export { createSandbox, type CreateSandboxOptions } from './sandbox.js';
export { resolveDeno, REQUIRED_DENO_VERSION } from './deno-binary.js';
export { validateNetHosts, DENY_NET } from './net-policy.js';
export type { Sandbox, SandboxApi, SandboxJob, SandboxStats, SandboxTool, MemoryEnforcement } from './types.js';
