// The MCP server as a part of the running service: the bridge is fed by the service's own event
// stream (no second connection), requests are written with the service's store client, answers are
// checked against the runner's answer tag, and `/mcp` is served on the admin port.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServiceExtension } from '../extension.js';
import { isLoopbackHost } from '../http.js';
import { createMcpBridge, type McpBridge } from './bridge.js';
import { createMcpHttpHandler, refuseMcp, type McpAllowList, type McpHttpHandler } from './http.js';

/** The MCP service extension; `bridge()` is available once the service has started it. */
export interface McpExtension extends ServiceExtension {
  bridge(): McpBridge | undefined;
}

/** Creates the extension (`start` installs it in every service). */
export function createMcpExtension(): McpExtension {
  let bridge: McpBridge | undefined;
  let http: McpHttpHandler | undefined;
  const route = async (
    req: IncomingMessage,
    res: ServerResponse,
    context: { allowList?: McpAllowList },
  ): Promise<void> => {
    if (!http) {
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: 'the MCP endpoint is not started yet', code: 'unavailable' }));
      return;
    }
    await http.handle(req, res, context.allowList);
  };
  return {
    name: 'mcp',
    async start(ctx) {
      const { config, logger } = ctx;
      if (config.adminToken !== undefined) logger.redact(config.adminToken);
      else if (config.adminPort >= 0 && !isLoopbackHost(config.adminHost)) {
        logger.warn(
          'the admin port is not on loopback and no --admin-token is set: anyone who can reach it can call tools over /mcp',
          { adminHost: config.adminHost },
        );
      }
      bridge = createMcpBridge({
        client: ctx.client,
        workspace: config.workspace,
        logger,
        keys: ctx.keys,
        callTimeoutMs: config.callTimeoutMs,
      });
      http = createMcpHttpHandler({
        bridge,
        logger,
        progressMs: config.mcpProgressMs,
        ...(config.adminToken !== undefined ? { token: config.adminToken } : {}),
      });
    },
    handleEvent: (event) => bridge?.handleEvent(event),
    onReconnect: () => bridge?.onReconnect(),
    adminRoutes: () => new Map([['/mcp', Object.assign(route, { refuse: refuseMcp })]]),
    async stop() {
      await http?.close();
      bridge?.close();
    },
    bridge: () => bridge,
  };
}
