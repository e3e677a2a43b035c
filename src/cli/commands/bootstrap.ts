// `tools-runner bootstrap [dir]`: validates every tool JSON file of the directory and upserts it into
// the store (create / update / unchanged / rejected); exit 1 when a file is rejected.

import { bootstrapTools, renderBootstrapTable } from '../../authoring/bootstrap.js';
import { createStamper } from '../../catalog/deployment.js';
import { resolveRunnerKey } from '../../catalog/runner-key.js';
import { loadToolFiles } from '../../authoring/tool-files.js';
import { createSchemaValidator } from '../../screen/index.js';
import type { Command } from '../command.js';
import { cliStoreClient } from '../store-client.js';

export const bootstrapCommand: Command = {
  name: 'bootstrap',
  summary: 'upsert tool JSON files into the store (default dir: --bootstrap-dir)',
  usage: 'tools-runner bootstrap [dir] [--store-url URL]',
  async run({ config, positionals, logger, out, err }) {
    const dir = positionals[0] ?? config.bootstrapDir;
    let files;
    try {
      files = await loadToolFiles(dir, config.workspace);
    } catch (error) {
      err(`tools-runner bootstrap: ${dir}: ${(error as Error).message}`);
      return 2;
    }
    const client = cliStoreClient(config, logger, config.agentId, ['curator', 'emitter', 'subscriber']);
    try {
      await client.health();
      // Signed with the same key as the runner (same --runner-secret, or the same --data-dir's runner.key).
      const stamper = createStamper(resolveRunnerKey({ runnerSecret: config.runnerSecret, dataDir: config.dataDir, logger }).key);
      const rows = await bootstrapTools({ client, files, config, logger, validator: createSchemaValidator(), stamper });
      out(renderBootstrapTable(rows));
      return rows.some((row) => row.action === 'rejected') ? 1 : 0;
    } finally {
      client.close();
    }
  },
};
