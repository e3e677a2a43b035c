// Runs a tool's examples in the real sandbox for the console and shows what came back.
//
// The verdict follows the create flow's rules (src/authoring/examples.ts): the call must succeed,
// its output must validate against output_schema, and deep-equal `output` when `match` is "exact";
// examples of a tool that needs secrets fail with secret.missing (the console holds none). Unlike
// the create flow, each report also carries the output and the tool's logs.

import { isDeepStrictEqual } from 'node:util';
import { sandboxToolOf, type Sandbox, type SandboxApi } from '../sandbox/index.js';
import type { SchemaValidator, ToolDefinition } from '../screen/index.js';

/** One example's outcome. */
export interface ExampleRun {
  index: number;
  description: string;
  ok: boolean;
  durationMs: number;
  input: unknown;
  output?: unknown;
  expected?: unknown;
  error?: { code: string; message: string };
  logs: unknown[];
}

export interface RunExampleOptions {
  sandbox: Sandbox;
  validator: SchemaValidator;
  workspace: string;
  /** context.api for an api-granted tool's example call. */
  api?(tool: ToolDefinition, index: number): SandboxApi;
  signal?: AbortSignal;
}

/** Runs example `index` of `tool`; never throws for tool behaviour. */
export async function runExample(tool: ToolDefinition, index: number, options: RunExampleOptions): Promise<ExampleRun> {
  const example = tool.examples[index];
  if (!example) throw new RangeError(`tool "${tool.name}" has no example ${index}`);
  const base = { index, description: example.description, input: example.input, ...(example.output !== undefined ? { expected: example.output } : {}) };
  if (tool.requiredSecrets.length > 0) {
    return { ...base, ok: false, durationMs: 0, logs: [], error: { code: 'secret.missing', message: `the console runs examples without secrets; "${tool.name}" needs ${tool.requiredSecrets.join(', ')}` } };
  }
  const api = tool.api ? options.api?.(tool, index) : undefined;
  const result = await options.sandbox.run({
    tool: sandboxToolOf(tool),
    input: example.input,
    secrets: {},
    request: { id: `console-example:${tool.name}:${index + 1}`, workspace: options.workspace, agentId: 'console' },
    ...(api ? { api } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const timing = { durationMs: Math.round(result.durationMs * 10) / 10, logs: result.logs as unknown[] };
  if (!result.ok) return { ...base, ...timing, ok: false, error: { code: result.error.code, message: result.error.message } };
  const check = options.validator.validate(tool.outputSchema, result.output);
  if (!check.valid) {
    const why = check.errors.map((e) => `${e.path || '/'}: ${e.message}`).join('; ');
    return { ...base, ...timing, ok: false, output: result.output, error: { code: 'output.invalid', message: `output does not match output_schema: ${why}` } };
  }
  if (example.match === 'exact' && !isDeepStrictEqual(result.output, example.output)) {
    return { ...base, ...timing, ok: false, output: result.output, error: { code: 'example.mismatch', message: 'output differs from the example\'s expected output' } };
  }
  return { ...base, ...timing, ok: true, output: result.output };
}

/** Runs every example in order. */
export async function runAllExamples(tool: ToolDefinition, options: RunExampleOptions): Promise<ExampleRun[]> {
  const runs: ExampleRun[] = [];
  for (let index = 0; index < tool.examples.length; index++) runs.push(await runExample(tool, index, options));
  return runs;
}
