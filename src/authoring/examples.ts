// Examples are tests: every example of a tool runs in the real sandbox and must succeed, with an
// output that validates against output_schema — and deep-equals `output` when `match` is "exact".
// An example marked `requires_network` is skipped (ok, with `skipped` saying why) when the caller
// found the network unreachable; without a network status every example runs.

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

const MAX_SHOWN = 300;

function shorten(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text;
}

/** Runs every example of `tool` in order; never throws for tool behaviour. */
export async function runExamples(tool: ToolDefinition, options: RunExamplesOptions): Promise<ExampleReport[]> {
  const reports: ExampleReport[] = [];
  // a `net: true` tool may reach any public host: every example of it counts as a network example
  const anyHost = tool.extraPermissions.includes('net');
  for (const [index, example] of tool.examples.entries()) {
    if (tool.continuous) {
      reports.push({ description: example.description, ok: true, duration_ms: 0, skipped: 'continuous tool (context.bootstrap.mode "continuous"): it runs until stopped, so its examples are not run as calls' });
      continue;
    }
    if (tool.tools !== undefined) {
      reports.push({ description: example.description, ok: true, duration_ms: 0, skipped: 'tool that calls tools (permissions.tools): its examples need those tools on a running runner, so they are not run alone' });
      continue;
    }
    if ((example.requiresNetwork || anyHost) && options.network && !options.network.reachable) {
      reports.push({ description: example.description, ok: true, duration_ms: 0, skipped: options.network.reason ?? 'network unreachable' });
      continue;
    }
    const missing = tool.requiredSecrets.filter((name) => options.secrets?.[name] === undefined);
    if (missing.length > 0 && example.requiresNetwork && options.skipWithoutSecrets) {
      // an example against a real service needs its credentials as much as the network
      reports.push({ description: example.description, ok: true, duration_ms: 0, skipped: `secret ${missing.join(', ')} not provided (--secrets-file)` });
      continue;
    }
    if (missing.length > 0) {
      reports.push({ description: example.description, ok: false, duration_ms: 0, error: `secret.missing: ${missing.join(', ')}` });
      continue;
    }
    const secrets: Record<string, string> = {};
    for (const name of tool.requiredSecrets) secrets[name] = options.secrets?.[name] as string;
    const api = tool.api ? options.api?.(tool, index) : undefined;
    const result = await options.sandbox.run({
      tool: sandboxToolOf(tool),
      input: example.input,
      secrets,
      request: { id: `example:${tool.name}:${index + 1}`, workspace: options.workspace },
      ...(api ? { api } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const duration = Math.round(result.durationMs * 10) / 10;
    if (!result.ok) {
      reports.push({ description: example.description, ok: false, duration_ms: duration, error: `${result.error.code}: ${result.error.message}` });
      continue;
    }
    const check = options.validator.validate(tool.outputSchema, result.output);
    if (!check.valid) {
      const why = check.errors.map((e) => `${e.path || '/'}: ${e.message}`).join('; ');
      reports.push({ description: example.description, ok: false, duration_ms: duration, error: `output does not match output_schema: ${why} (got ${shorten(result.output)})` });
      continue;
    }
    if (example.match === 'exact' && !isDeepStrictEqual(result.output, example.output)) {
      reports.push({
        description: example.description,
        ok: false,
        duration_ms: duration,
        error: `output differs from the example: expected ${shorten(example.output)}, got ${shorten(result.output)}`,
      });
      continue;
    }
    reports.push({ description: example.description, ok: true, duration_ms: duration });
  }
  return reports;
}
