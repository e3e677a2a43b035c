// `tools-runner mcp`: an MCP server on stdio for desktop clients. With --store-url it is a client of
// that store (a runner must be serving it); without, it embeds the whole service (store, runner,
// admin port with `/mcp`) like `start`, and its stdout carries only MCP frames.

import { coerceError, ErrorCode } from '../../errors.js';
import type { McpExtension } from '../../mcp/extension.js';
import { connectBridge, serveStdio } from '../../mcp/stdio.js';
import { startService } from '../../service/service.js';
import { EXIT, type CommandContext } from '../command.js';
import { serviceExtensions } from '../extensions.js';

/** Runs `tools-runner mcp`. */
export async function run({ config, logger, err, signal }: CommandContext): Promise<number> {
  if (config.storeUrl) {
    const stop = new AbortController();
    const done = AbortSignal.any([signal, stop.signal]);
    try {
      let bridge;
      try {
        bridge = connectBridge(config, logger, done);
      } catch (error) {
        // No runner key (or an unusable one): one line saying what to pass.
        const e = coerceError(error);
        if (e.code !== ErrorCode.ConfigInvalid) throw error;
        err(`tools-runner mcp: ${e.message}`);
        return EXIT.Usage;
      }
      await serveStdio({ bridge, logger, progressMs: config.mcpProgressMs, signal: done });
    } finally {
      stop.abort();
    }
    return EXIT.Ok;
  }
  const extensions = serviceExtensions(config);
  const mcp = extensions.find((extension) => extension.name === 'mcp') as McpExtension | undefined;
  // stdout belongs to MCP: the service's human-facing lines go to the log (stderr).
  const service = await startService({ config, logger, out: (line) => logger.info(line), extensions });
  try {
    const bridge = mcp?.bridge();
    if (!bridge) {
      err('tools-runner mcp: the MCP extension did not start');
      return EXIT.Failed;
    }
    await serveStdio({ bridge, logger, progressMs: config.mcpProgressMs, signal });
  } finally {
    await service.stop();
  }
  return EXIT.Ok;
}
