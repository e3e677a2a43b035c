// agentcli tools.json validation (docs/host-tools.md "Host tools (tools.json)"), with agentcli's exact error strings.
//
// Per tool, checks run in agentcli's order: name -> duplicate -> command length -> envPassthrough ->
// command[0] path; the first failure rejects the whole manifest. Relative programs must live under
// ./tools/bin and are resolved against the manifest's directory, never the process cwd.
// Our additions run after agentcli's own checks for the same tool and use the same prefix:
// timeoutSec must not be negative, schema must be an object that compiles, and an explicit `contract`
// (our extension, src/host-tools/contract-map.ts) must be a valid contract.

import path from 'node:path';
import type { AgentcliSpec } from './agentcli-decode.js';
import { goQuote, isJsonObject, kindOf } from './json-kinds.js';
import type { SchemaValidator } from '../screen/index.js';
import { schemaCompileError } from './schema-validator.js';
import { explicitContract, withExplicit } from './contract-map.js';
import type { HostTool, ManifestLoadResult } from './types.js';

/** Where a manifest came from: its absolute path and the digest of its bytes. */
export interface ManifestSource {
  manifestPath: string;
  manifestDigest: string;
  /** The runner's schema validator (compiled-schema cache). */
  validator: SchemaValidator;
}

class ManifestError extends Error {}

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** agentcli's envPassthrough rule: trim, upper-case, validate, de-duplicate keeping the first. */
export function normalizeEnvAllowlist(keys: readonly string[]): string[] {
  const out: string[] = [];
  keys.forEach((key, index) => {
    const trimmed = key.trim();
    if (trimmed === '') throw new ManifestError(`envPassthrough[${index}]: empty name`);
    const upper = trimmed.toUpperCase();
    if (!ENV_NAME.test(upper)) {
      throw new ManifestError(`envPassthrough[${index}]: invalid name ${goQuote(key)} (must match [A-Z_][A-Z0-9_]*)`);
    }
    if (!out.includes(upper)) out.push(upper);
  });
  return out;
}

/** Go's path.Clean for the relative paths we see (no trailing slash, "" -> "."). */
function goClean(p: string): string {
  const normalized = path.posix.normalize(p);
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

/** Validates command[0] and returns the program's absolute path. */
function resolveProgram(cmd0: string, manifestDir: string, prefix: string): string {
  if (path.isAbsolute(cmd0)) return cmd0;
  const raw = cmd0.replaceAll('\\', '/');
  let norm = goClean(raw);
  if (norm.startsWith('tools/') || norm === 'tools') norm = './' + norm;
  if (norm.startsWith('../') || norm === '..') {
    throw new ManifestError(
      `${prefix}: command[0] must not start with '..' or escape tools/bin (got ${goQuote(cmd0)})`,
    );
  }
  if (raw.startsWith('./tools/bin/') || raw === './tools/bin') {
    if (!norm.startsWith('./tools/bin/')) {
      throw new ManifestError(
        `${prefix}: command[0] escapes ./tools/bin after normalization (got ${goQuote(cmd0)} -> ${goQuote(norm)})`,
      );
    }
  } else if (!norm.startsWith('./tools/bin/')) {
    throw new ManifestError(`${prefix}: relative command[0] must start with ./tools/bin/`);
  }
  return path.resolve(manifestDir, norm.slice(2));
}

function checkSchema(schema: unknown, prefix: string, validator: SchemaValidator): object | null {
  if (schema === null) return null;
  if (!isJsonObject(schema)) throw new ManifestError(`${prefix}: schema must be a JSON object (got ${kindOf(schema)})`);
  const problem = schemaCompileError(schema, validator);
  if (problem !== null) throw new ManifestError(`${prefix}: invalid schema: ${problem}`);
  return schema;
}

function buildTool(spec: AgentcliSpec, index: number, seen: Set<string>, source: ManifestSource): HostTool {
  if (spec.name === '') throw new ManifestError(`tool[${index}]: name is required`);
  const prefix = `tool[${index}] ${goQuote(spec.name)}`;
  if (seen.has(spec.name)) throw new ManifestError(`${prefix}: duplicate name`);
  seen.add(spec.name);
  if (spec.command.length < 1) throw new ManifestError(`${prefix}: command must have at least program name`);
  let envPassthrough: string[] = [];
  try {
    envPassthrough = normalizeEnvAllowlist(spec.envPassthrough);
  } catch (err) {
    throw new ManifestError(`${prefix}: ${(err as Error).message}`);
  }
  const [cmd0 = '', ...fixedArgs] = spec.command;
  const program = resolveProgram(cmd0, path.dirname(source.manifestPath), prefix);
  if (spec.timeoutSec < 0)
    throw new ManifestError(`${prefix}: timeoutSec must not be negative (got ${spec.timeoutSec})`);
  const inputSchema = checkSchema(spec.schema, prefix, source.validator);
  const explicit = explicitContract(spec.contract, `tools[${index}].contract`);
  if (!explicit.ok) throw new ManifestError(`${prefix}: invalid contract: ${explicit.error}`);
  return {
    name: spec.name,
    description: spec.description,
    format: 'agentcli',
    manifestPath: source.manifestPath,
    manifestDigest: source.manifestDigest,
    inputSchema,
    resultSchema: null,
    transport: {
      kind: 'exec',
      command: [program, ...fixedArgs],
      args: [],
      style: 'agentcli',
      ...(spec.timeoutSec > 0 ? { timeoutMs: spec.timeoutSec * 1000 } : {}),
      envPassthrough,
    },
    capabilities: [],
    secrets: [],
    requiresConfirmation: false,
    observabilityTags: [],
    // agentcli states no side effect: unknown (fails closed) unless the entry carries a contract.
    contract: withExplicit({}, explicit.contract),
  };
}

/** Validates decoded agentcli specs and turns them into host tools (all or nothing). */
export function buildAgentcliTools(specs: readonly AgentcliSpec[], source: ManifestSource): ManifestLoadResult {
  const seen = new Set<string>();
  try {
    const tools = specs.map((spec, index) => buildTool(spec, index, seen, source));
    return { ok: true, tools, warnings: [] };
  } catch (err) {
    if (err instanceof ManifestError) return { ok: false, error: err.message };
    throw err;
  }
}
