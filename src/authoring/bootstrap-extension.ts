// Runs bootstrap as part of `start` (unless --no-bootstrap): upserts the bootstrap directory's tools
// before the catalog loads, and marks them as operator-trusted for the catalog.

import { existsSync } from 'node:fs';
import { createSchemaValidator } from '../screen/index.js';
import type { ServiceExtension } from '../service/service.js';
import { bootstrapTools, renderBootstrapTable } from './bootstrap.js';
import { loadToolFiles } from './tool-files.js';

/** The bootstrap step of the service. */
export function createBootstrapExtension(): ServiceExtension {
  return {
    name: 'bootstrap',
    async start(ctx) {
      const dir = ctx.config.bootstrapDir;
      if (!existsSync(dir)) {
        ctx.logger.warn('bootstrap directory not found, nothing bootstrapped', { dir });
        return;
      }
      const files = await loadToolFiles(dir, ctx.config.workspace);
      const rows = await bootstrapTools({
        client: ctx.client,
        files,
        config: ctx.config,
        logger: ctx.logger,
        validator: createSchemaValidator(),
        trust: ctx.trustBootstrapTool,
      });
      const counts = Object.fromEntries(['created', 'updated', 'unchanged', 'rejected'].map((a) => [a, rows.filter((r) => r.action === a).length]));
      for (const row of rows.filter((r) => r.action === 'rejected')) ctx.logger.error('bootstrap file rejected', { file: row.file, reason: row.reason });
      ctx.logger.info('bootstrap finished', { dir, ...counts });
      ctx.logger.debug('bootstrap table', { table: renderBootstrapTable(rows) });
    },
  };
}
