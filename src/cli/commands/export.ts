// `tools-runner export --format openai`: prints the workspace's runnable catalog (its
// tool.catalog.v1, kept current by the runner) as OpenAI function tools plus the reverse name map.

import { SCHEMA, TAG, ToolCatalogContext } from '../../breadcrumbs/messages.js';
import { exportOpenAI } from '../../legacy/index.js';
import type { Command } from '../command.js';
import { cliStoreClient } from '../store-client.js';

export const exportCommand: Command = {
  name: 'export',
  summary: 'print the runnable catalog as OpenAI function tools',
  usage: 'tools-runner export [--format openai] [--store-url URL]',
  async run({ config, logger, out, err }) {
    const client = cliStoreClient(config, logger, 'tools-runner-cli', ['subscriber']);
    try {
      const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, tag: config.workspace, include_context: true, limit: 20 });
      const item = items.filter((i) => i.tags.includes(TAG.Catalog)).sort((a, b) => a.id.localeCompare(b.id))[0];
      const catalog = ToolCatalogContext.safeParse(item?.context);
      if (!catalog.success) {
        err(`tools-runner export: no tool.catalog.v1 for ${config.workspace} in the store (is a runner running?)`);
        return 1;
      }
      const exported = exportOpenAI(catalog.data.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })));
      out(JSON.stringify({ format: config.format, ...exported }, null, 2));
      return 0;
    } finally {
      client.close();
    }
  },
};
