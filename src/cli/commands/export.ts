// `tools-runner export --format openai|mcp|rap|typescript|aruntime`: prints the workspace's runnable catalog
// (its tool.catalog.v1, kept current by the runner and sealed with the runner secret) in one target
// format, built by src/export — the same mapping the live MCP endpoint serves. `--from-files` builds
// the catalog offline from the bootstrap directory (valid tools) and the `--manifests` host tools.
// Tools that cannot be exported (name collisions, unexportable schemas) are left out of every
// format, reported on stderr, and make the exit code 1.

import { existsSync } from 'node:fs';
import { loadToolFiles } from '../../authoring/tool-files.js';
import { codeFacts, hostFacts } from '../../catalog/entries.js';
import { renderExport, type CatalogTool } from '../../export/index.js';
import { loadHostTools } from '../../host-tools/index.js';
import { configuredRapBase, rapInvokeUrl } from '../../rap/index.js';
import { createSchemaValidator, validateToolDefinition } from '../../screen/index.js';
import { EXIT, type CommandContext } from '../command.js';
import { publishedCatalog } from '../published-catalog.js';

/** The catalog from the bootstrap directory and the manifests; problems are reported on `err`. */
async function catalogFromFiles({ config, logger, err }: CommandContext): Promise<CatalogTool[] | undefined> {
  const entries = new Map<string, CatalogTool>();
  let problems = 0;
  // One schema validator for every definition and manifest this command reads.
  const validator = createSchemaValidator();
  if (existsSync(config.bootstrapDir)) {
    for (const file of await loadToolFiles(config.bootstrapDir, config.workspace)) {
      const check = file.ok
        ? validateToolDefinition(file.breadcrumb.context, { origin: 'bootstrap', config, validator })
        : undefined;
      if (!check?.ok) {
        problems++;
        err(
          `tools-runner export: skipped ${file.path}: ${file.ok ? (check && !check.ok ? check.errors[0]?.message : '') : file.error}`,
        );
        continue;
      }
      const t = check.tool;
      entries.set(t.name, {
        name: t.name,
        description: t.description,
        version: t.version,
        kind: 'code',
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        contract: t.contract,
        ...codeFacts(t),
      });
    }
  } else if (config.manifests.length === 0) {
    err(
      `tools-runner export: --from-files: the bootstrap directory ${config.bootstrapDir} does not exist and no --manifests are given`,
    );
    return undefined;
  }
  if (config.manifests.length > 0) {
    const loaded = await loadHostTools({
      paths: config.manifests,
      grantedCapabilities: config.grantedCapabilities,
      logger,
      validator,
    });
    for (const error of loaded.errors) err(`tools-runner export: manifest ${error.path} rejected: ${error.message}`);
    problems += loaded.errors.length;
    for (const tool of loaded.tools) {
      if (entries.has(tool.name)) continue;
      entries.set(tool.name, {
        name: tool.name,
        description: tool.description,
        version: tool.manifestDigest.slice(0, 12),
        kind: 'host',
        inputSchema: tool.inputSchema ?? { type: 'object' },
        ...(tool.resultSchema ? { outputSchema: tool.resultSchema } : {}),
        contract: tool.contract,
        ...hostFacts(tool),
      });
    }
  }
  if (entries.size === 0) {
    err(`tools-runner export: --from-files found no valid tool (${problems} problem(s) above)`);
    return undefined;
  }
  return [...entries.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** Runs `tools-runner export`. */
export async function run(ctx: CommandContext): Promise<number> {
  if (ctx.positionals.length > 0) {
    ctx.err(
      `tools-runner export: unexpected argument ${JSON.stringify(ctx.positionals[0])} (usage: tools-runner export [--format openai|mcp|rap|typescript|aruntime] [--from-files])`,
    );
    return EXIT.Usage;
  }
  // A RAP toolset names the endpoint that serves it: the RAP listener's /invoke, which must be known.
  const rapBase = configuredRapBase(ctx.config);
  if (ctx.config.format === 'rap' && rapBase === undefined) {
    ctx.err(
      "tools-runner export: --format rap needs the address RAP runtimes reach the tool server at: pass --rap-public-url (or the service's fixed --rap-port)",
    );
    return EXIT.Usage;
  }
  const tools = ctx.config.fromFiles
    ? await catalogFromFiles(ctx)
    : await publishedCatalog(ctx, 'export', {
        clause: 'or export offline with --from-files',
        sentence: 'To export without a store: tools-runner export --from-files.',
      });
  if (tools === undefined) return EXIT.Failed;
  if (typeof tools === 'number') return tools;
  const { config } = ctx;
  const rendered = renderExport(config.format, tools, {
    workspace: config.workspace,
    rapEndpoint: rapInvokeUrl(rapBase ?? ''),
  });
  ctx.out(rendered.text);
  for (const omission of rendered.omitted) ctx.err(`tools-runner export: not exported: ${omission.reason}`);
  return rendered.omitted.length > 0 ? EXIT.Failed : EXIT.Ok;
}
