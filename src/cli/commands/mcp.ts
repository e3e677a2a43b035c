// `tools-runner mcp`: an MCP server on stdio for desktop clients. With --store-url it is a client of
// that store (a runner must be serving it); without, it embeds the whole service (store, runner,
// admin port with `/mcp`) like `start`, and its stdout carries only MCP frames.

import type { McpExtension } from '../../mcp/extension.js';
import { connectBridge, serveStdio } from '../../mcp/stdio.js';
import { startService } from '../../service/service.js';
import type { Command } from '../command.js';
import { serviceExtensions } from '../extensions.js';

export const mcpCommand: Command = {
  name: 'mcp',
  summary: 'serve the catalog over MCP on stdio (a client of --store-url, or an embedded service)',
  usage: 'tools-runner mcp [--store-url URL] [--data-dir D] [--admin-port P] ...',
  async run({ config, logger, err, signal }) {
    if (config.storeUrl) {
      const stop = new AbortController();
      const done = AbortSignal.any([signal, stop.signal]);
      try {
        await serveStdio({ bridge: connectBridge(config, logger, done), logger, progressMs: config.mcpProgressMs, signal: done });
      } finally {
        stop.abort();
      }
      return 0;
    }
    const extensions = serviceExtensions(config);
    const mcp = extensions.find((extension) => extension.name === 'mcp') as McpExtension | undefined;
    // stdout belongs to MCP: the service's human-facing lines go to the log (stderr).
    const service = await startService({ config, logger, out: (line) => logger.info(line), extensions });
    try {
      const bridge = mcp?.bridge();
      if (!bridge) {
        err('tools-runner mcp: the MCP extension did not start');
        return 1;
      }
      await serveStdio({ bridge, logger, progressMs: config.mcpProgressMs, signal });
    } finally {
      await service.stop();
    }
    return 0;
  },
};
