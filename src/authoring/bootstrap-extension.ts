// Runs bootstrap as part of `start` (unless --no-bootstrap): upserts the bootstrap directory's tools
// before the catalog loads, and marks them as operator-trusted for the catalog. As with `tools-runner
// bootstrap`, a tool that would be created or updated runs its examples first (in the service's
// sandbox; `context.api` against a throwaway store) and is rejected when one fails, unless
// --skip-examples.

import { existsSync } from 'node:fs';
import { createSchemaValidator, validateToolDefinition, type ToolDefinition } from '../screen/index.js';
import type { ServiceExtension } from '../service/service.js';
import { bootstrapTools, renderBootstrapTable } from './bootstrap.js';
import { createExampleEnv } from './example-env.js';
import { checkNetwork } from './network-probe.js';
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
      const validator = createSchemaValidator();
      const env = ctx.config.skipExamples ? undefined : createExampleEnv({ config: ctx.config, logger: ctx.logger, validator, sandbox: ctx.sandbox });
      let rows;
      try {
        const tools = files.flatMap((file) => {
          if (!file.ok || !env) return [];
          const check = validateToolDefinition(file.breadcrumb.context, { origin: 'bootstrap', config: ctx.config, validator });
          return check.ok ? [check.tool] : [];
        });
        // Probed once, on the first tool whose examples run (nothing probed when nothing changes).
        let probed: ReturnType<typeof checkNetwork> | undefined;
        const network = async (tool: ToolDefinition) => (await (probed ??= checkNetwork(tools, ctx.config.networkProbe)))(tool);
        rows = await bootstrapTools({
          client: ctx.client,
          files,
          config: ctx.config,
          logger: ctx.logger,
          validator,
          trust: ctx.trustBootstrapTool,
          ...(env ? { examples: { run: (tool, status) => env.run(tool, status), network } } : {}),
        });
      } finally {
        await env?.close();
      }
      const counts = Object.fromEntries(['created', 'updated', 'unchanged', 'rejected'].map((a) => [a, rows.filter((r) => r.action === a).length]));
      for (const row of rows.filter((r) => r.action === 'rejected')) ctx.logger.error('bootstrap file rejected', { file: row.file, tool: row.name, reason: row.reason });
      const skipped = rows.filter((r) => (r.examples?.skipped ?? 0) > 0).map((r) => r.name);
      if (skipped.length > 0) ctx.logger.warn('bootstrap: network examples skipped (network unreachable)', { tools: skipped });
      ctx.logger.info('bootstrap finished', { dir, ...counts, examples: env ? 'run' : 'skipped (--skip-examples)' });
      ctx.logger.debug('bootstrap table', { table: renderBootstrapTable(rows) });
    },
  };
}
