// Export targets of the catalog (docs/exports.md "Exports"): MCP `tools/list`
// entries, OpenAI function tools, a RAP toolset, TypeScript declarations, and ARuntime tool
// descriptions (src/contract/aruntime.ts, from each tool's contract). Every target is
// built from the same ToolViews, so `tools-runner export --format mcp` prints exactly the tools
// the live MCP endpoint lists.

import { toARuntime, type ARuntimeTool, type ToolFacts } from '../contract/aruntime.js';
import { qualifiesForOpenAIStrict } from './schemas.js';
import { buildToolViews, type CatalogTool, type Omission, type ToolView } from './tool-views.js';
import { emitTypeScript } from './typescript.js';

/** Formats of `tools-runner export`. */
export const EXPORT_FORMATS = ['openai', 'mcp', 'rap', 'typescript', 'aruntime'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** `_meta` key prefix of the MCP tools we serve. */
export const META_PREFIX = 'tools-runner/';

/** One MCP `Tool` (the shape of a `tools/list` result entry). */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  outputSchema?: { type: 'object'; [key: string]: unknown };
  annotations: {
    title: string;
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
  _meta: Record<string, unknown>;
}

/** The MCP tool of a view: the mangled name, the source name as title, all four hints. */
export function toMcpTool(view: ToolView): McpTool {
  return {
    name: view.exportName,
    title: view.name,
    description: view.description,
    inputSchema: view.inputSchema as McpTool['inputSchema'],
    ...(view.outputSchema ? { outputSchema: view.outputSchema as McpTool['inputSchema'] } : {}),
    annotations: { title: view.name, ...view.hints },
    _meta: {
      [`${META_PREFIX}name`]: view.name,
      [`${META_PREFIX}version`]: view.version,
      [`${META_PREFIX}kind`]: view.kind,
      [`${META_PREFIX}sideEffect`]: view.sideEffect,
    },
  };
}

/** One OpenAI function tool; `strict` only when the schema qualifies. */
export interface OpenAIFunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown>; strict?: true };
}

/** The OpenAI function tool of a view. */
export function toOpenAITool(view: ToolView): OpenAIFunctionTool {
  return {
    type: 'function',
    function: {
      name: view.exportName,
      ...(view.description !== '' ? { description: view.description } : {}),
      parameters: view.inputSchema,
      ...(qualifiesForOpenAIStrict(view.inputSchema) ? { strict: true as const } : {}),
    },
  };
}

/** One tool of a RAP toolset. */
export interface RapTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: { readOnly?: true; destructive?: true; idempotent?: true };
}

/** The RAP tool of a view (RAP names allow 1–128 of [A-Za-z0-9_-]; the mangled name fits). */
export function toRapTool(view: ToolView): RapTool {
  return { name: view.exportName, description: view.description, inputSchema: view.inputSchema, annotations: view.rap };
}

const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined;

/**
 * The ARuntime description of a view. Besides the view (name, version, description, schemas,
 * contract) an entry may carry `timeoutMs`, `net`, `requiredSecrets`, `tags` and `budget`
 * (`--from-files` sets them; read defensively, a value of the wrong type is left out).
 */
export function toARuntimeTool(view: ToolView, entry: CatalogTool | undefined): ARuntimeTool {
  const e = entry ?? { name: view.name };
  const timeoutMs = typeof e['timeoutMs'] === 'number' && e['timeoutMs'] > 0 ? e['timeoutMs'] : undefined;
  const budget =
    typeof e['budget'] === 'object' && e['budget'] !== null
      ? (e['budget'] as { tokens?: number; usd?: number })
      : undefined;
  const output = view.outputSchema ?? view.rawOutputSchema;
  const facts: ToolFacts = {
    name: view.name,
    ...(view.version !== '' ? { version: view.version } : {}),
    description: view.description,
    inputSchema: view.inputSchema,
    ...(output !== undefined ? { outputSchema: output } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(strings(e['net']) ? { net: strings(e['net']) as string[] } : {}),
    ...(strings(e['requiredSecrets']) ? { secrets: strings(e['requiredSecrets']) as string[] } : {}),
    ...(strings(e['tags']) ? { tags: strings(e['tags']) as string[] } : {}),
    ...(budget ? { budget } : {}),
  };
  return toARuntime(facts, view.contract);
}

/** What `renderExport` needs beyond the catalog. */
export interface ExportOptions {
  workspace: string;
  /** RAP toolset `endpoint` (the invoke URL of the RAP tool server). */
  rapEndpoint: string;
}

/** A rendered export: the text to print and the tools left out (reported by the caller). */
export interface RenderedExport {
  text: string;
  omitted: Omission[];
}

/** Renders the catalog in one format. */
export function renderExport(
  format: ExportFormat,
  entries: readonly CatalogTool[],
  options: ExportOptions,
): RenderedExport {
  const views = buildToolViews(entries);
  const reverse = Object.fromEntries(views.reverse);
  const omitted = views.omitted.map((o) => ({ name: o.name, exportedAs: o.exportName, reason: o.reason }));
  switch (format) {
    case 'openai':
      return {
        omitted: views.omitted,
        text: JSON.stringify({ format, tools: views.tools.map(toOpenAITool), reverse, omitted }, null, 2),
      };
    case 'mcp':
      return {
        omitted: views.omitted,
        text: JSON.stringify({ format, tools: views.tools.map(toMcpTool), reverse, omitted }, null, 2),
      };
    case 'rap': {
      const toolset = {
        name: `tools-runner-${options.workspace.slice('workspace:'.length)}`
          .replace(/[^A-Za-z0-9_-]/g, '_')
          .slice(0, 128),
        description: `Tools of the tools-runner workspace ${options.workspace}`,
        endpoint: options.rapEndpoint,
        tools: views.tools.map(toRapTool),
      };
      return { omitted: views.omitted, text: JSON.stringify(toolset, null, 2) };
    }
    case 'typescript':
      return { omitted: views.omitted, text: emitTypeScript(views.tools, views.omitted) };
    case 'aruntime': {
      const byName = new Map(entries.map((entry) => [entry.name, entry]));
      return {
        omitted: views.omitted,
        text: JSON.stringify(
          { format, tools: views.tools.map((view) => toARuntimeTool(view, byName.get(view.name))), omitted },
          null,
          2,
        ),
      };
    }
  }
}
