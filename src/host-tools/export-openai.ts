// Export of tools in OpenAI's function-tool shape (names mangled to ^[A-Za-z0-9_-]{1,64}$).
//
// OpenAI (and Claude Desktop) accept tool names matching ^[A-Za-z0-9_-]{1,64}$, so names are
// mangled: every other character (per code point) becomes `_`, then the name is cut to 64
// characters. `reverse` maps each exported name back to the source name for dispatch. Two source
// names that mangle to the same exported name fail the whole export (RunnerError conflict), so a
// call can never reach the wrong tool. Empty fields are omitted; a missing (null) schema becomes
// {type:"object",additionalProperties:false}, OpenAI's form for "no arguments".

import { ErrorCode, RunnerError } from '../errors.js';
import { isJsonObject } from './json-kinds.js';

/** One OpenAI function tool. */
export interface OpenAITool {
  type: 'function';
  function: { name: string; description?: string; parameters: object };
}

/** Exported tools and the exported-name -> source-name map. */
export interface OpenAIExport {
  tools: OpenAITool[];
  reverse: Record<string, string>;
}

/** The longest tool name OpenAI-compatible clients accept. */
export const MAX_EXPORTED_NAME = 64;

/** Maps `[^A-Za-z0-9_-]` to `_` (one per code point) and caps the result at 64 characters. */
export function mangleToolName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/gu, '_').slice(0, MAX_EXPORTED_NAME);
}

/** Builds the OpenAI `tools` array; throws RunnerError(conflict) naming both sources on a name clash. */
export function exportOpenAI(
  tools: ReadonlyArray<{ name: string; description?: string; inputSchema: unknown }>,
): OpenAIExport {
  const out: OpenAITool[] = [];
  const reverse: Record<string, string> = {};
  for (const tool of tools) {
    const name = mangleToolName(tool.name);
    if (name === '') {
      throw new RunnerError(
        ErrorCode.InputInvalid,
        `tool name ${JSON.stringify(tool.name)} cannot be exported: it is empty`,
      );
    }
    const existing = reverse[name];
    if (existing !== undefined) {
      throw new RunnerError(
        ErrorCode.Conflict,
        `tool names ${JSON.stringify(existing)} and ${JSON.stringify(tool.name)} both export as ${JSON.stringify(name)}`,
        { details: { exported: name, sources: [existing, tool.name] } },
      );
    }
    reverse[name] = tool.name;
    const parameters = isJsonObject(tool.inputSchema)
      ? tool.inputSchema
      : { type: 'object', additionalProperties: false };
    const description =
      tool.description !== undefined && tool.description !== '' ? { description: tool.description } : {};
    out.push({ type: 'function', function: { name, ...description, parameters } });
  }
  return { tools: out, reverse };
}
