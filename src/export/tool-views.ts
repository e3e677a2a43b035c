// The one mapping from the runnable catalog (tool.catalog.v1 entries) to exportable tools, shared
// by the live MCP endpoint and `tools-runner export` so the two can never disagree.
//
// Per entry: the name is mangled to ^[A-Za-z0-9_-]{1,64}$ (OpenAI's limit, the strictest target); two or more
// entries mangling to one name are ALL left out (a name clash exposes neither) and reported; schemas have
// their `$ref`s inlined; the input schema must be object-rooted (else the tool is left out); an
// output schema that is not object-rooted is dropped (the result then travels as
// `{result: <output>}`). Omissions carry a reason naming the tool.

import { mangleToolName } from '../host-tools/export-openai.js';
import { asObjectRoot, derefSchema } from './schemas.js';
import { rapAnnotationsOf, type McpHints, type ToolContract } from '../contract/contract.js';
import { contractOf, policyOf } from './side-effects.js';

/** What the mapping reads of a catalog entry (tool.catalog.v1 `tools[]`; extra fields allowed). */
export interface CatalogTool {
  name: string;
  description?: string;
  version?: string;
  kind?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  [key: string]: unknown;
}

/** One exportable tool. */
export interface ToolView {
  /** The source name (what tool.request.v1 names). */
  name: string;
  /** The mangled name every target sees. */
  exportName: string;
  description: string;
  version: string;
  kind: string;
  /** Object-rooted, `$ref`-free. */
  inputSchema: Record<string, unknown>;
  /** Object-rooted, `$ref`-free; absent when the tool has none or it is not an object schema. */
  outputSchema?: Record<string, unknown>;
  /** The tool's declared output schema (after `$ref` inlining), when it is not object-rooted. */
  rawOutputSchema?: unknown;
  /** The contract's side-effect class, or `unknown`. */
  sideEffect: string;
  hints: McpHints;
  /** RAP annotations of the contract (`rapAnnotationsOf`). */
  rap: { readOnly?: true; destructive?: true; idempotent?: true };
  /** The entry's contract, validated (`{}` when absent or invalid: unknown). */
  contract: ToolContract;
}

/** A catalog tool that is not exported, and why. */
export interface Omission {
  name: string;
  exportName: string;
  reason: string;
}

/** The exportable tools (sorted by exported name), the omissions, and exported → source names. */
export interface ToolViews {
  tools: ToolView[];
  omitted: Omission[];
  reverse: Map<string, string>;
}

/** Maps catalog entries to exportable tools (see the module comment for the rules). */
export function buildToolViews(entries: readonly CatalogTool[]): ToolViews {
  const byExport = new Map<string, CatalogTool[]>();
  const omitted: Omission[] = [];
  for (const entry of entries) {
    const exportName = mangleToolName(entry.name);
    if (exportName === '') {
      omitted.push({
        name: entry.name,
        exportName,
        reason: `tool name ${JSON.stringify(entry.name)} is empty and cannot be exported`,
      });
      continue;
    }
    byExport.set(exportName, [...(byExport.get(exportName) ?? []), entry]);
  }
  const tools: ToolView[] = [];
  for (const [exportName, group] of byExport) {
    if (group.length > 1) {
      const names = group.map((entry) => JSON.stringify(entry.name)).join(' and ');
      for (const entry of group)
        omitted.push({
          name: entry.name,
          exportName,
          reason: `tool names ${names} all export as ${JSON.stringify(exportName)}; none of them is exported`,
        });
      continue;
    }
    const entry = group[0] as CatalogTool;
    try {
      const input = asObjectRoot(derefSchema(entry.inputSchema ?? null, entry.name));
      if (!input) {
        omitted.push({
          name: entry.name,
          exportName,
          reason: `input schema of tool ${JSON.stringify(entry.name)} is not an object schema (type "object"); it cannot be exported`,
        });
        continue;
      }
      const rawOutput = entry.outputSchema === undefined ? undefined : derefSchema(entry.outputSchema, entry.name);
      const output = rawOutput === undefined || rawOutput === null ? undefined : asObjectRoot(rawOutput);
      const policy = policyOf(entry);
      const contract = contractOf(entry);
      tools.push({
        name: entry.name,
        exportName,
        description: typeof entry.description === 'string' ? entry.description : '',
        version: typeof entry.version === 'string' ? entry.version : '',
        kind: typeof entry.kind === 'string' ? entry.kind : 'code',
        inputSchema: input,
        ...(output ? { outputSchema: output } : {}),
        ...(rawOutput !== undefined && rawOutput !== null && !output ? { rawOutputSchema: rawOutput } : {}),
        sideEffect: contract.side_effect ?? 'unknown',
        hints: policy.mcp,
        rap: rapAnnotationsOf(contract),
        contract,
      });
    } catch (error) {
      omitted.push({ name: entry.name, exportName, reason: (error as Error).message });
    }
  }
  tools.sort((a, b) => (a.exportName < b.exportName ? -1 : a.exportName > b.exportName ? 1 : 0));
  omitted.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { tools, omitted, reverse: new Map(tools.map((tool) => [tool.exportName, tool.name])) };
}
