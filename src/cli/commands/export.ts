// `tools-runner export --format openai`: prints the workspace's runnable catalog (its
// tool.catalog.v1, kept current by the runner) as OpenAI function tools plus the reverse name map.
// `--from-files` builds the same catalog offline from the bootstrap directory (valid tools) and the
// `--manifests` host tools (a code tool wins over a host tool of the same name, as in the runner).

import { existsSync } from 'node:fs';
import { loadToolFiles } from '../../authoring/tool-files.js';
import { SCHEMA, TAG, ToolCatalogContext } from '../../breadcrumbs/messages.js';
import { exportOpenAI, loadHostTools } from '../../legacy/index.js';
import { createSchemaValidator, validateToolDefinition } from '../../screen/index.js';
import { EXIT, type CommandContext } from '../command.js';
import { safeJson } from '../sanitize.js';
import { cliStoreClient, storeProblem } from '../store-client.js';

type Entry = { name: string; description: string; inputSchema: unknown };

/** The catalog from the bootstrap directory and the manifests; problems are reported on `err`. */
async function catalogFromFiles({ config, logger, err }: CommandContext): Promise<Entry[] | undefined> {
  const entries = new Map<string, Entry>();
  let problems = 0;
  if (existsSync(config.bootstrapDir)) {
    const validator = createSchemaValidator();
    for (const file of await loadToolFiles(config.bootstrapDir, config.workspace)) {
      const check = file.ok ? validateToolDefinition(file.breadcrumb.context, { origin: 'bootstrap', config, validator }) : undefined;
      if (!check?.ok) {
        problems++;
        err(`tools-runner export: skipped ${file.path}: ${file.ok ? (check && !check.ok ? check.errors[0]?.message : '') : file.error}`);
        continue;
      }
      entries.set(check.tool.name, { name: check.tool.name, description: check.tool.description, inputSchema: check.tool.inputSchema });
    }
  } else if (config.manifests.length === 0) {
    err(`tools-runner export: --from-files: the bootstrap directory ${config.bootstrapDir} does not exist and no --manifests are given`);
    return undefined;
  }
  if (config.manifests.length > 0) {
    const loaded = await loadHostTools({ paths: config.manifests, grantedCapabilities: config.grantedCapabilities, logger });
    for (const error of loaded.errors) err(`tools-runner export: manifest ${error.path} rejected: ${error.message}`);
    problems += loaded.errors.length;
    for (const tool of loaded.tools) {
      if (!entries.has(tool.name)) entries.set(tool.name, { name: tool.name, description: tool.description, inputSchema: tool.inputSchema ?? { type: 'object' } });
    }
  }
  if (entries.size === 0) {
    err(`tools-runner export: --from-files found no valid tool (${problems} problem(s) above)`);
    return undefined;
  }
  return [...entries.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** The catalog a running runner published to the store. */
async function catalogFromStore({ config, logger, err }: CommandContext): Promise<Entry[] | number> {
  const client = cliStoreClient(config, logger, 'tools-runner-cli', ['subscriber']);
  try {
    const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolCatalog, tag: config.workspace, include_context: true, limit: 20 });
    const item = items.filter((i) => i.tags.includes(TAG.Catalog)).sort((a, b) => a.id.localeCompare(b.id))[0];
    const catalog = ToolCatalogContext.safeParse(item?.context);
    if (!catalog.success) {
      err(`tools-runner export: no tool.catalog.v1 for ${config.workspace} in the store: start a runner ("tools-runner start") to publish it, or export offline with --from-files`);
      return EXIT.Failed;
    }
    return catalog.data.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
  } catch (error) {
    const problem = storeProblem(error, config, 'export', 'To export without a store: tools-runner export --from-files.');
    if (problem) {
      err(problem.line);
      return problem.exit;
    }
    throw error;
  } finally {
    client.close();
  }
}

/** Runs `tools-runner export`. */
export async function run(ctx: CommandContext): Promise<number> {
  if (ctx.positionals.length > 0) {
    ctx.err(`tools-runner export: unexpected argument ${JSON.stringify(ctx.positionals[0])} (usage: tools-runner export [--format openai] [--from-files])`);
    return EXIT.Usage;
  }
  const tools = ctx.config.fromFiles ? await catalogFromFiles(ctx) : await catalogFromStore(ctx);
  if (tools === undefined) return EXIT.Failed;
  if (typeof tools === 'number') return tools;
  const exported = exportOpenAI(tools);
  ctx.out(safeJson({ format: ctx.config.format, ...exported }, 2));
  return EXIT.Ok;
}
