// Runs bootstrap as part of `start` (unless --no-bootstrap): upserts the bootstrap directory's tools
// before the catalog loads and pins each valid file's definition, so the catalog runs only the
// operator's files under those names. When the store's copy of a pinned tool goes missing or is
// changed by someone else, the catalog reports drift and this extension publishes the file again
// (one republish at a time, at most once per second per tool; the pinned definition keeps serving
// calls meanwhile).

import { existsSync } from 'node:fs';
import { createSchemaValidator } from '../screen/index.js';
import type { ExtensionContext, ServiceExtension } from '../service/service.js';
import { bootstrapTools, renderBootstrapTable } from './bootstrap.js';
import { loadToolFiles, type ToolFile } from './tool-files.js';

const REPUBLISH_GAP_MS = 1_000;

/** The bootstrap step of the service. */
export function createBootstrapExtension(): ServiceExtension {
  let ctx: ExtensionContext | undefined;
  let files: ToolFile[] = [];
  const validator = createSchemaValidator();
  const lastRepublish = new Map<string, number>();
  let running: Promise<void> = Promise.resolve();

  const republish = (name: string): void => {
    const context = ctx;
    const file = files.find((f) => f.ok && f.name === name);
    if (!context || !file || context.signal.aborted) return;
    const last = lastRepublish.get(name) ?? 0;
    if (Date.now() - last < REPUBLISH_GAP_MS) return;
    lastRepublish.set(name, Date.now());
    running = running
      .then(async () => {
        const rows = await bootstrapTools({ client: context.client, files: [file], config: context.config, logger: context.logger, validator, stamper: context.stamper, pin: context.pinOperatorTool });
        context.logger.warn('operator tool re-published after a change by someone else', { name, action: rows[0]?.action, id: rows[0]?.id });
      })
      .catch((error: unknown) => context.logger.warn('operator tool re-publication failed', { name, error }));
  };

  return {
    name: 'bootstrap',
    async start(context) {
      ctx = context;
      const dir = context.config.bootstrapDir;
      if (!existsSync(dir)) {
        context.logger.warn('bootstrap directory not found, nothing bootstrapped', { dir });
        return;
      }
      files = await loadToolFiles(dir, context.config.workspace);
      const rows = await bootstrapTools({
        client: context.client,
        files,
        config: context.config,
        logger: context.logger,
        validator,
        stamper: context.stamper,
        pin: context.pinOperatorTool,
      });
      const counts = Object.fromEntries(['created', 'updated', 'unchanged', 'rejected'].map((a) => [a, rows.filter((r) => r.action === a).length]));
      for (const row of rows.filter((r) => r.action === 'rejected')) context.logger.error('bootstrap file rejected', { file: row.file, reason: row.reason });
      context.logger.info('bootstrap finished', { dir, ...counts });
      context.logger.debug('bootstrap table', { table: renderBootstrapTable(rows) });
    },
    onOperatorDrift: republish,
    async stop() {
      await running;
    },
  };
}
