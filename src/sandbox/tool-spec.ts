// What the sandbox needs of a validated tool definition: the one mapping every caller uses (the
// request path, example runs, the console), so a new sandbox-relevant field is never dropped.

import type { ToolDefinition } from '../screen/index.js';
import type { SandboxTool } from './types.js';

/** The sandbox's view of a validated tool. */
export function sandboxToolOf(tool: ToolDefinition): SandboxTool {
  return {
    name: tool.name,
    version: tool.version,
    source: tool.source,
    net: tool.net,
    ...(tool.privateNet ? { privateNet: tool.privateNet } : {}),
    api: tool.api,
    ...(tool.tools !== undefined ? { tools: tool.tools } : {}),
    extraPermissions: tool.extraPermissions,
    timeoutMs: tool.timeoutMs,
    memoryMb: tool.memoryMb,
    ...(tool.cpuPercent !== undefined ? { cpuPercent: tool.cpuPercent } : {}),
    ...(tool.isolation ? { isolation: tool.isolation } : {}),
  };
}
