// Shared helpers of the shipped-tool tests: load a tool file from bootstrap-breadcrumbs/ with the
// operator policy, and run its examples in the real sandbox with inputs redirected to local servers.

import { fileURLToPath } from 'node:url';
import { runExamples, type ExampleReport } from '../../src/authoring/examples.js';
import { loadToolFiles } from '../../src/authoring/tool-files.js';
import type { Config } from '../../src/config/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { createSchemaValidator, validateToolDefinition, type ToolDefinition } from '../../src/screen/index.js';

export const TOOLS_DIR = fileURLToPath(new URL('../../bootstrap-breadcrumbs/tools-self-contained/', import.meta.url));
export const validator = createSchemaValidator();

/** The validated definition of a shipped tool file, as the operator's bootstrap sees it with `config`. */
export async function shippedTool(file: string, config: Config): Promise<ToolDefinition> {
  const [loaded] = await loadToolFiles(`${TOOLS_DIR}${file}`, config.workspace);
  if (!loaded?.ok) throw new Error(`cannot load ${file}: ${loaded?.error}`);
  const check = validateToolDefinition(loaded.breadcrumb.context, { origin: 'bootstrap', config, validator });
  if (!check.ok) throw new Error(`${file} is invalid: ${JSON.stringify(check.errors)}`);
  return check.tool;
}

/** Runs every example of `tool` with `override` merged into each input (e.g. a local base_url). */
export function runExamplesAgainst(
  tool: ToolDefinition,
  sandbox: Sandbox,
  override: Record<string, unknown>,
  secrets: Record<string, string> = {},
): Promise<ExampleReport[]> {
  const redirected: ToolDefinition = {
    ...tool,
    examples: tool.examples.map((example) => ({ ...example, input: { ...(example.input as object), ...override } })),
  };
  return runExamples(redirected, {
    sandbox,
    validator,
    workspace: 'workspace:tools',
    secrets,
    skipWithoutSecrets: false,
  });
}
