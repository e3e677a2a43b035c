// The optional parts `start` adds to the service (bootstrap, MCP), chosen by config. Tool creation
// is no extension: create requests are a request kind of the request path (src/service/build.ts).

import { createAutonomyExtension } from '../autonomy/extension.js';
import { createBootstrapExtension } from '../authoring/bootstrap-extension.js';
import type { Config } from '../config/index.js';
import { createMcpExtension } from '../mcp/extension.js';
import type { ServiceExtension } from '../extension.js';

/** Extensions enabled by this configuration. Bootstrap runs first so its tools are trusted. */
export function serviceExtensions(config: Config): ServiceExtension[] {
  return [
    ...(config.bootstrap ? [createBootstrapExtension()] : []),
    // MCP over Streamable HTTP at `/mcp` on the admin port.
    createMcpExtension(),
    // Subscriptions, once-runs and continuous tools (docs/autonomy.md).
    createAutonomyExtension(),
  ];
}
