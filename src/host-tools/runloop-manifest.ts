// Runloop tools.json validation, keeping Runloop's exact strings, plus the
// checks its text requires but its code skips (absolute exec path, absolute http(s) URL, unique
// ids, schemas present). Per tool, Runloop's checks run first, then ours; the first failure
// rejects the whole manifest.
//
// "Schemas present" is reconciled with Runloop accepting null schemas like this: both keys must be
// present; `null` is accepted and produces a load warning (nothing is validated on that side).
// Each tool's contract is mapped by src/host-tools/contract-map.ts (an explicit `contract` entry wins).

import path from 'node:path';
import type { ManifestSource } from './agentcli-manifest.js';
import { effectiveCapabilities, impliedCapabilities } from './capabilities.js';
import { explicitContract, runloopContract, withExplicit } from './contract-map.js';
import { isJsonObject, kindOf } from './json-kinds.js';
import type { RunloopSpec, RunloopTransportSpec } from './runloop-decode.js';
import { SchemaRefError, resolveSchemaRefs } from './schema-refs.js';
import type { SchemaValidator } from '../screen/index.js';
import { schemaCompileError } from './schema-validator.js';
import { secretEnvName, secretPlaceholders } from './secrets.js';
import type { HostTool, HostTransport, ManifestLoadResult } from './types.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

class ManifestError extends Error {}

function checkUrl(url: string, fail: (m: string) => never): void {
  const parse = (fill: string): URL | null => {
    try {
      return new URL(url.replace(/\{[^{}]*\}/g, fill));
    } catch {
      return null;
    }
  };
  const a = parse('x');
  const b = parse('y');
  if (!a || !b || (a.protocol !== 'http:' && a.protocol !== 'https:')) {
    fail(`http transport url must be an absolute http or https URL (got ${JSON.stringify(url)})`);
  }
  if (a.origin !== b.origin || a.username !== b.username || a.password !== b.password) {
    fail(`http transport url may use {placeholders} only in the path and query (got ${JSON.stringify(url)})`);
  }
}

function checkTransport(t: RunloopTransportSpec, spec: RunloopSpec, fail: (m: string) => never): HostTransport {
  const timeout = t.timeoutMs === undefined ? {} : { timeoutMs: t.timeoutMs };
  if (t.kind === 'exec') {
    if (!path.isAbsolute(t.command))
      fail(`exec transport command must be an absolute path (got ${JSON.stringify(t.command)})`);
    return { kind: 'exec', command: [t.command], args: t.args, style: 'runloop', ...timeout, envPassthrough: [] };
  }
  const method = t.method.trim().toUpperCase();
  if (!METHODS.includes(method)) {
    fail(`http transport method ${JSON.stringify(t.method)} is not supported (use ${METHODS.join(', ')})`);
  }
  checkUrl(t.url, fail);
  for (const [name, value] of Object.entries(t.headers)) {
    if (!HEADER_NAME.test(name)) fail(`http header name ${JSON.stringify(name)} is not a valid token`);
    if (/[\r\n\0]/.test(value)) fail(`http header ${JSON.stringify(name)} contains a line break or NUL`);
    for (const secret of secretPlaceholders(value)) {
      if (!spec.secrets.includes(secret)) {
        fail(`http header ${JSON.stringify(name)} uses secret ${JSON.stringify(secret)} that is not listed in secrets`);
      }
    }
  }
  return { kind: 'http', method, url: t.url, headers: t.headers, ...timeout };
}

function checkSchema(
  spec: RunloopSpec,
  field: 'input_schema' | 'result_schema',
  fail: (m: string) => never,
  validator: SchemaValidator,
): object | null {
  const present = field === 'input_schema' ? spec.hasInputSchema : spec.hasResultSchema;
  if (!present) fail(`${field} is required (null is accepted for none)`);
  let schema = field === 'input_schema' ? spec.inputSchema : spec.resultSchema;
  try {
    schema = resolveSchemaRefs(schema, spec.schemaRefs, field);
  } catch (err) {
    if (err instanceof SchemaRefError) fail(err.message);
    throw err;
  }
  if (schema === null) return null;
  if (!isJsonObject(schema))
    fail(`${field} must be a JSON Schema object or {"$ref":"schema:<id>"} (got ${kindOf(schema)})`);
  const problem = schemaCompileError(schema, validator);
  if (problem !== null) fail(`invalid ${field}: ${problem}`);
  return schema;
}

function checkSecrets(spec: RunloopSpec, fail: (m: string) => never): string[] {
  const secrets: string[] = [];
  spec.secrets.forEach((secret, i) => {
    if (secret.trim() === '') fail(`secrets[${i}] cannot be empty`);
    const clash = secrets.find((other) => other !== secret && secretEnvName(other) === secretEnvName(secret));
    if (clash !== undefined) {
      fail(
        `secrets ${JSON.stringify(clash)} and ${JSON.stringify(secret)} map to the same environment variable ${JSON.stringify(secretEnvName(secret))}`,
      );
    }
    if (!secrets.includes(secret)) secrets.push(secret);
  });
  return secrets;
}

function buildTool(
  spec: RunloopSpec,
  idx: number,
  seen: Set<string>,
  source: ManifestSource,
  warnings: string[],
): HostTool {
  const fail = (message: string): never => {
    throw new ManifestError(`tool #${idx}: ${message}`);
  };
  if (spec.id.trim() === '') fail('tool id cannot be empty');
  if (spec.description.trim() === '') fail('description cannot be empty');
  const t = spec.transport;
  if (t.kind === 'exec' && t.command.trim() === '') fail('exec transport requires a command');
  if (t.kind === 'http' && t.method.trim() === '') fail('http transport requires a method');
  if (t.kind === 'http' && t.url.trim() === '') fail('http transport requires a url');
  if (seen.has(spec.id)) fail(`duplicate tool id ${JSON.stringify(spec.id)}`);
  seen.add(spec.id);
  const secrets = checkSecrets(spec, fail);
  const transport = checkTransport(t, spec, fail);
  spec.capabilities.forEach((cap, i) => {
    if (cap.trim() === '') fail(`capabilities[${i}] cannot be empty`);
  });
  const inputSchema = checkSchema(spec, 'input_schema', fail, source.validator);
  const resultSchema = checkSchema(spec, 'result_schema', fail, source.validator);
  const usd = spec.budget?.usd;
  if (usd !== undefined && !(Number.isFinite(usd) && usd >= 0))
    fail(`budget.usd must be a non-negative number (got ${usd})`);
  const explicit = explicitContract(spec.contract, `tools[${idx}].contract`);
  if (!explicit.ok) fail(`invalid contract: ${explicit.error}`);
  for (const [field, schema] of [
    ['input_schema', inputSchema],
    ['result_schema', resultSchema],
  ] as const) {
    if (schema === null)
      warnings.push(`tool #${idx} ${JSON.stringify(spec.id)}: ${field} is null; nothing is validated against it`);
  }
  return {
    name: spec.id,
    description: spec.description,
    format: 'runloop',
    manifestPath: source.manifestPath,
    manifestDigest: source.manifestDigest,
    inputSchema,
    resultSchema,
    transport,
    capabilities: effectiveCapabilities(spec.capabilities, impliedCapabilities(transport, 'runloop')),
    secrets,
    requiresConfirmation: spec.requiresConfirmation,
    ...(spec.budget === undefined ? {} : { budget: spec.budget }),
    observabilityTags: spec.observabilityTags,
    contract: withExplicit(runloopContract(spec, transport), explicit.ok ? explicit.contract : undefined),
  };
}

/** Validates a decoded Runloop manifest and turns it into host tools (all or nothing). */
export function buildRunloopTools(
  version: number,
  specs: readonly RunloopSpec[],
  source: ManifestSource,
): ManifestLoadResult {
  if (version !== 1) return { ok: false, error: `unsupported tools.json version ${version} (expected 1)` };
  const seen = new Set<string>();
  const warnings: string[] = [];
  try {
    const tools = specs.map((spec, idx) => buildTool(spec, idx, seen, source, warnings));
    return { ok: true, tools, warnings };
  } catch (err) {
    if (err instanceof ManifestError) return { ok: false, error: err.message };
    throw err;
  }
}
