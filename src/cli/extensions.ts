// The optional parts `start` adds to the service (bootstrap, tool creation), chosen by config.

import { createAutonomyExtension } from '../autonomy/extension.js';
import { createBootstrapExtension } from '../authoring/bootstrap-extension.js';
import { createToolCreationExtension } from '../authoring/create-flow.js';
import type { Config } from '../config/index.js';
import { createMcpExtension } from '../mcp/extension.js';
import type { ServiceExtension } from '../extension.js';

/** Extensions enabled by this configuration. Bootstrap runs first so its tools are trusted. */
export function serviceExtensions(config: Config): ServiceExtension[] {
  return [
    ...(config.bootstrap ? [createBootstrapExtension()] : []),
    // Always installed: when creation is disabled it answers every request with a rejection
    // (permission.denied) instead of leaving agents without an answer.
    createToolCreationExtension(),
    // MCP over Streamable HTTP at `/mcp` on the admin port.
    createMcpExtension(),
    // Subscriptions, once-runs and continuous tools (docs/autonomy.md).
    createAutonomyExtension(),
  ];
}
