// MCP over stdio (desktop clients launch `tools-runner mcp` and talk JSON-RPC on its stdin/stdout).
//
// Two ways to reach the tools: `connectBridge` (with --store-url: a client of a running service's
// store, with its own event stream) or the bridge of an embedded service's MCP extension (see the
// `mcp` command). Nothing but MCP frames may go to stdout: logs go to stderr.

import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createStoreClient, openEventStream } from '../breadcrumbs/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';
import { resolveRequestKeys } from '../catalog/runner-key.js';
import { createMcpBridge, type McpBridge } from './bridge.js';
import { createMcpSession } from './server.js';

/** A bridge to the store at --store-url; closed (with its event stream) when `signal` aborts. */
export function connectBridge(config: Config, logger: Logger, signal: AbortSignal): McpBridge {
  const client = createStoreClient({
    baseUrl: config.storeUrl as string,
    logger,
    auth: config.storeToken
      ? { token: config.storeToken }
      : {
          mint: {
            owner_id: config.ownerId,
            agent_id: 'tools-runner-mcp',
            roles: ['emitter', 'subscriber'],
            ...(config.adminKey ? { adminKey: config.adminKey } : {}),
          },
        },
  });
  // The runner secret (--runner-secret, or the runner's <data-dir>/runner.key beside its embedded
  // store) verifies the published catalog and the runner's answers; without it nothing can be trusted.
  const keys = resolveRequestKeys({
    runnerSecret: config.runnerSecret,
    dataDir: config.dataDir,
    logger,
    storeUrl: config.storeUrl,
  });
  const bridge = createMcpBridge({
    client,
    workspace: config.workspace,
    logger,
    callTimeoutMs: config.callTimeoutMs,
    keys,
  });
  openEventStream({
    client,
    signal,
    logger: logger.child({ component: 'events' }),
    onEvent: (event) => bridge.handleEvent(event),
    onConnected: ({ reconnect }) => {
      if (reconnect) bridge.onReconnect();
    },
  });
  signal.addEventListener(
    'abort',
    () => {
      bridge.close();
      client.close();
    },
    { once: true },
  );
  return bridge;
}

/** Serves one MCP session on stdin/stdout until stdin ends or `signal` aborts. */
export async function serveStdio(options: {
  bridge: McpBridge;
  logger: Logger;
  progressMs: number;
  signal: AbortSignal;
}): Promise<void> {
  const { logger, signal } = options;
  const transport = new StdioServerTransport();
  const server = createMcpSession({ bridge: options.bridge, logger, progressMs: options.progressMs });
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
    process.stdin.once('close', () => resolve());
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await server.connect(transport);
  logger.info('MCP server on stdio');
  await closed;
  await server.close().catch(() => undefined);
}
