// `tools-runner export --format openai|mcp|rap|typescript`: prints the workspace's runnable catalog
// (its tool.catalog.v1, kept current by the runner) in one target format, built by src/export — the
// same mapping the live MCP endpoint serves. Tools that cannot be exported (name collisions,
// unexportable schemas) are left out of every format, reported on stderr, and make the exit code 1.

import { resolveRequestKeys } from '../../catalog/runner-key.js';
import { readPublishedCatalog, renderExport } from '../../export/index.js';
import type { Command } from '../command.js';
import { cliStoreClient } from '../store-client.js';

export const exportCommand: Command = {
  name: 'export',
  summary: 'print the runnable catalog as OpenAI tools, MCP tools, a RAP toolset or TypeScript types',
  usage: 'tools-runner export [--format openai|mcp|rap|typescript] [--store-url URL]',
  async run({ config, logger, out, err }) {
    const client = cliStoreClient(config, logger, 'tools-runner-cli', ['subscriber']);
    try {
      const keys = resolveRequestKeys({ runnerSecret: config.runnerSecret, dataDir: config.dataDir, logger, storeUrl: config.storeUrl });
      const tools = await readPublishedCatalog(client, config.workspace, keys);
      if (!tools) {
        err(`tools-runner export: no tool.catalog.v1 sealed by this runner secret for ${config.workspace} in the store (is a runner with the same --runner-secret running?)`);
        return 1;
      }
      const adminHost = config.adminHost.includes(':') ? `[${config.adminHost}]` : config.adminHost;
      const rendered = renderExport(config.format, tools, { workspace: config.workspace, rapEndpoint: `http://${adminHost}:${config.adminPort}/rap/invoke` });
      out(rendered.text);
      for (const omission of rendered.omitted) err(`tools-runner export: not exported: ${omission.reason}`);
      return rendered.omitted.length > 0 ? 1 : 0;
    } finally {
      client.close();
    }
  },
};
