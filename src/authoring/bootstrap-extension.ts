// Runs bootstrap as part of `start` (unless --no-bootstrap): upserts the bootstrap directory's tools
// before the catalog loads and pins each valid file's definition, so the catalog runs only the
// operator's files under those names. When the store's copy of a pinned tool goes missing or is
// changed by someone else, the catalog reports drift and this extension publishes the file again
// (one republish at a time, at most once per second per tool; the pinned definition keeps serving
// calls meanwhile). As with `tools-runner bootstrap`, a tool that would be created or updated at start
// runs its examples first (in the service's sandbox; `context.api` against a throwaway store) and is
// rejected when one fails, unless --skip-examples.

import { existsSync } from 'node:fs';
import { validateToolDefinition, type ToolDefinition } from '../screen/index.js';
import type { ExtensionContext, ServiceExtension } from '../extension.js';
import { bootstrapTools, renderBootstrapTable } from './bootstrap.js';
import { createExampleEnv } from './example-env.js';
import { checkNetwork } from './network-probe.js';
import { loadToolFiles, type ToolFile } from './tool-files.js';

const REPUBLISH_GAP_MS = 1_000;

/** The bootstrap step of the service. */
export function createBootstrapExtension(): ServiceExtension {
  let ctx: ExtensionContext | undefined;
  let files: ToolFile[] = [];
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
        const rows = await bootstrapTools({
          client: context.client,
          files: [file],
          config: context.config,
          logger: context.logger,
          validator: context.validator,
          stamper: context.stamper,
          pin: context.pinOperatorTool,
        });
        context.logger.warn('operator tool re-published after a change by someone else', {
          name,
          action: rows[0]?.action,
          id: rows[0]?.id,
        });
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
      const env = context.config.skipExamples
        ? undefined
        : createExampleEnv({
            config: context.config,
            logger: context.logger,
            validator: context.validator,
            sandbox: context.sandbox,
          });
      let rows;
      try {
        const tools = files.flatMap((file) => {
          if (!file.ok || !env) return [];
          const check = validateToolDefinition(file.breadcrumb.context, {
            origin: 'bootstrap',
            config: context.config,
            validator: context.validator,
          });
          return check.ok ? [check.tool] : [];
        });
        // Probed once, on the first tool whose examples run (nothing probed when nothing changes).
        let probed: ReturnType<typeof checkNetwork> | undefined;
        const network = async (tool: ToolDefinition) =>
          (await (probed ??= checkNetwork(tools, context.config.networkProbe)))(tool);
        rows = await bootstrapTools({
          client: context.client,
          files,
          config: context.config,
          logger: context.logger,
          validator: context.validator,
          stamper: context.stamper,
          pin: context.pinOperatorTool,
          ...(env ? { examples: { run: (tool, status) => env.run(tool, status), network } } : {}),
        });
      } finally {
        await env?.close();
      }
      const counts = Object.fromEntries(
        ['created', 'updated', 'unchanged', 'rejected'].map((a) => [a, rows.filter((r) => r.action === a).length]),
      );
      for (const row of rows.filter((r) => r.action === 'rejected'))
        context.logger.error('bootstrap file rejected', { file: row.file, tool: row.name, reason: row.reason });
      // Skipping an example that needs the internet, a secret or an operator grant is expected (offline,
      // no key given): information, not a warning. Each tool's reason is named.
      const skipped = Object.fromEntries(
        rows
          .filter((r) => (r.examples?.skipped ?? 0) > 0)
          .map((r) => [r.name ?? r.file, (r.examples?.why ?? []).join('; ')]),
      );
      if (Object.keys(skipped).length > 0) context.logger.info('bootstrap: some examples skipped', { tools: skipped });
      context.logger.info('bootstrap finished', {
        dir,
        ...counts,
        examples: env ? 'run' : 'skipped (--skip-examples)',
      });
      context.logger.debug('bootstrap table', { table: renderBootstrapTable(rows) });
    },
    onOperatorDrift: republish,
    async stop() {
      await running;
    },
  };
}
