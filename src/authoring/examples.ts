// Examples are tests: every example of a tool runs in the real sandbox and must succeed, with an
// output that validates against output_schema — and deep-equals `output` when `match` is "exact".
// An example marked `requires_network` is skipped (ok, with `skipped` saying why) when the caller
// found the network unreachable; without a network status every example runs.
//
// The one example runner: the create flow (a create request's examples), `tools-runner test` and
// `bootstrap` (example-env.ts) and the console's Run buttons (src/console/api.ts) all run examples
// here, with the same verdict. `runExample` says everything about one run (output, logs, expected);
// `runExamples` is the create flow's and the CLI's summary of all of them.

import { isDeepStrictEqual } from 'node:util';
import { sandboxToolOf, type Sandbox, type SandboxApi } from '../sandbox/index.js';
import type { SchemaValidator, ToolDefinition } from '../screen/index.js';
import type { NetworkStatus } from './network-probe.js';

export type ExampleReport = {
  description: string;
  ok: boolean;
  duration_ms: number;
  error?: string;
  /** Not run, and why (e.g. the network is unreachable); such a report is ok. */
  skipped?: string;
};

export interface RunExamplesOptions {
  sandbox: Sandbox;
  validator: SchemaValidator;
  workspace: string;
  /** Builds context.api for an example call of an api-granted tool. */
  api?(tool: ToolDefinition, exampleIndex: number): SandboxApi | undefined;
  /** The request id the example call runs under (default `example:<tool>:<n>`). */
  requestId?(tool: ToolDefinition, exampleIndex: number): string;
  /** The agent the example call runs for (`context.request.agentId`), if any. */
  agentId?: string;
  /** Values for the tool's required secrets (examples of tools needing absent secrets fail). */
  secrets?: Record<string, string>;
  /**
   * Operator runs (`tools-runner test`, `bootstrap`): a `requires_network` example whose secrets are
   * not provided is skipped with the reason instead of failing (it needs credentials for a real service).
   */
  skipWithoutSecrets?: boolean;
  /** Reachability of the tool's network (see network-probe.ts); unreachable skips `requires_network` examples. */
  network?: NetworkStatus;
  signal?: AbortSignal;
}

/** Everything about one example's run. */
export interface ExampleRun {
  index: number;
  description: string;
  ok: boolean;
  durationMs: number;
  input: unknown;
  /** The example's expected output, when it gives one. */
  expected?: unknown;
  output?: unknown;
  error?: { code: string; message: string };
  /** The tool's log lines of the run. */
  logs: string[];
  /** Not run, and why; such a run is ok. */
  skipped?: string;
}

const MAX_SHOWN = 300;

function shorten(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text;
}

/** Runs example `index` of `tool` and gives the verdict; never throws for tool behaviour. */
export async function runExample(
  tool: ToolDefinition,
  index: number,
  options: RunExamplesOptions,
): Promise<ExampleRun> {
  const example = tool.examples[index];
  if (!example) throw new RangeError(`tool "${tool.name}" has no example ${index}`);
  const base = {
    index,
    description: example.description,
    input: example.input,
    ...(example.output !== undefined ? { expected: example.output } : {}),
  };
  const skip = (why: string): ExampleRun => ({ ...base, ok: true, durationMs: 0, logs: [], skipped: why });
  const fail = (code: string, message: string): ExampleRun => ({
    ...base,
    ok: false,
    durationMs: 0,
    logs: [],
    error: { code, message },
  });
  if (tool.continuous)
    return skip(
      'continuous tool (context.bootstrap.mode "continuous"): it runs until stopped, so its examples are not run as calls',
    );
  // a `net: true` tool may reach any public host: every example of it counts as a network example
  const anyHost = tool.extraPermissions.includes('net');
  if (tool.tools !== undefined)
    return skip(
      'tool that calls tools (permissions.tools): its examples need those tools on a running runner, so they are not run alone',
    );
  if ((example.requiresNetwork || anyHost) && options.network && !options.network.reachable)
    return skip(options.network.reason ?? 'network unreachable');
  const missing = tool.requiredSecrets.filter((name) => options.secrets?.[name] === undefined);
  // an example against a real service needs its credentials as much as the network
  if (missing.length > 0 && example.requiresNetwork && options.skipWithoutSecrets)
    return skip(`secret ${missing.join(', ')} not provided (--secrets-file)`);
  if (missing.length > 0) return fail('secret.missing', `not provided: ${missing.join(', ')}`);
  const secrets: Record<string, string> = {};
  for (const name of tool.requiredSecrets) secrets[name] = options.secrets?.[name] as string;
  const api = tool.api ? options.api?.(tool, index) : undefined;
  const result = await options.sandbox.run({
    tool: sandboxToolOf(tool),
    input: example.input,
    secrets,
    request: {
      id: options.requestId?.(tool, index) ?? `example:${tool.name}:${index + 1}`,
      workspace: options.workspace,
      ...(options.agentId !== undefined ? { agentId: options.agentId } : {}),
    },
    ...(api ? { api } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const ran = { ...base, durationMs: Math.round(result.durationMs * 10) / 10, logs: result.logs };
  if (!result.ok) return { ...ran, ok: false, error: { code: result.error.code, message: result.error.message } };
  const output = { output: result.output };
  const check = options.validator.validate(tool.outputSchema, result.output);
  if (!check.valid) {
    const why = check.errors.map((e) => `${e.path || '/'}: ${e.message}`).join('; ');
    return {
      ...ran,
      ...output,
      ok: false,
      error: {
        code: 'output.invalid',
        message: `output does not match output_schema: ${why} (got ${shorten(result.output)})`,
      },
    };
  }
  if (example.match === 'exact' && !isDeepStrictEqual(result.output, example.output)) {
    return {
      ...ran,
      ...output,
      ok: false,
      error: {
        code: 'example.mismatch',
        message: `output differs from the example: expected ${shorten(example.output)}, got ${shorten(result.output)}`,
      },
    };
  }
  return { ...ran, ...output, ok: true };
}

/** Runs every example of `tool` in order and sums each up as a report; never throws for tool behaviour. */
export async function runExamples(tool: ToolDefinition, options: RunExamplesOptions): Promise<ExampleReport[]> {
  const reports: ExampleReport[] = [];
  for (let index = 0; index < tool.examples.length; index++)
    reports.push(reportOf(await runExample(tool, index, options)));
  return reports;
}

/** The summary of one run (the create response's `examples`, `tools-runner test`'s lines). */
export function reportOf(run: ExampleRun): ExampleReport {
  const { description, ok, durationMs: duration_ms } = run;
  if (run.skipped !== undefined) return { description, ok, duration_ms, skipped: run.skipped };
  if (!run.error) return { description, ok, duration_ms };
  // verdicts of the example itself read as they are; failures of the run carry their code
  const verdict = run.error.code === 'output.invalid' || run.error.code === 'example.mismatch';
  return {
    description,
    ok,
    duration_ms,
    error: verdict ? run.error.message : `${run.error.code}: ${run.error.message}`,
  };
}
