// `tools-runner list` and `tools-runner describe <tool>`: what the running service's published catalog
// (src/cli/published-catalog.ts) offers, for a person: one line per tool, or one tool in full.

import type { CatalogTool } from '../../export/index.js';
import { EXIT, type CommandContext } from '../command.js';
import { publishedCatalog as published } from '../published-catalog.js';
import { safeJson } from '../sanitize.js';

/** The contract in one word: its side-effect class (`unknown` when undeclared), and `deprecated`. */
function contractOf(tool: CatalogTool): string {
  const contract = (tool['contract'] ?? {}) as { side_effect?: unknown };
  const effect = typeof contract.side_effect === 'string' ? contract.side_effect : 'unknown';
  return tool['status'] === 'deprecated' ? `${effect}, deprecated` : effect;
}

/** Who vouches for the tool: the catalog's `trust` when published, else the operator for a host tool. */
function trustOf(tool: CatalogTool): string {
  if (typeof tool['trust'] === 'string') return tool['trust'];
  return tool.kind === 'host' ? 'operator' : '-';
}

/** Runs `tools-runner list`: NAME VERSION KIND CONTRACT TRUST, one tool a line, by name. */
export async function list(ctx: CommandContext): Promise<number> {
  if (ctx.positionals.length > 0) {
    ctx.err(`tools-runner list: unexpected argument ${JSON.stringify(ctx.positionals[0])} (usage: tools-runner list)`);
    return EXIT.Usage;
  }
  const tools = await published(ctx, 'list');
  if (typeof tools === 'number') return tools;
  const rows = [
    ['NAME', 'VERSION', 'KIND', 'CONTRACT', 'TRUST'],
    ...tools.map((t) => [t.name, t.version ?? '-', t.kind ?? '-', contractOf(t), trustOf(t)]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows)
    ctx.out(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
  return EXIT.Ok;
}

/** Runs `tools-runner describe <tool>`: the catalog entry as JSON (schemas, permissions, limits, examples). */
export async function describe(ctx: CommandContext): Promise<number> {
  const [name, extra] = ctx.positionals;
  if (name === undefined || extra !== undefined) {
    ctx.err('usage: tools-runner describe <tool>');
    return EXIT.Usage;
  }
  const tools = await published(ctx, 'describe');
  if (typeof tools === 'number') return tools;
  const tool = tools.find((t) => t.name === name);
  if (!tool) {
    ctx.err(
      `tools-runner describe: no tool ${JSON.stringify(name)} in the catalog of ${ctx.config.workspace} (tools-runner list shows the ${tools.length} there)`,
    );
    return EXIT.Failed;
  }
  const view = {
    name: tool.name,
    description: tool.description,
    version: tool.version,
    kind: tool.kind,
    status: tool['status'],
    versions: tool['versions'],
    trust: trustOf(tool),
    contract: tool['contract'] ?? {},
    permissions: { net: tool['net'] ?? [], secrets: tool['requiredSecrets'] ?? [] },
    limits: { timeout_ms: tool['timeoutMs'] },
    input_schema: tool.inputSchema,
    output_schema: tool.outputSchema,
    examples: tool['examples'] ?? [],
  };
  ctx.out(safeJson(view, 2));
  return EXIT.Ok;
}
