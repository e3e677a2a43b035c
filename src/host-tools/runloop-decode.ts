// Decodes a Runloop tools.json document the way Runloop's serde structs do:
// required fields must be present, optional ones default, unknown fields are ignored, and a
// mismatch fails with serde's wording. serde appends "at line L column C"; we append the JSON
// path of the value instead (` at tools[0].transport.kind`). The caller adds `invalid JSON: `.

import { isJsonObject, serdeUnexpected } from './json-kinds.js';

/** Transport of a decoded Runloop tool; strings default to "" so validate() can name them. */
export type RunloopTransportSpec =
  | { kind: 'exec'; command: string; args: string[]; timeoutMs?: number }
  | { kind: 'http'; method: string; url: string; headers: Record<string, string>; timeoutMs?: number };

/** A decoded Runloop ToolSpec. `has*Schema` records whether the key was present at all. */
export interface RunloopSpec {
  id: string;
  description: string;
  transport: RunloopTransportSpec;
  inputSchema: unknown;
  resultSchema: unknown;
  hasInputSchema: boolean;
  hasResultSchema: boolean;
  schemaRefs: Record<string, unknown>;
  capabilities: string[];
  secrets: string[];
  budget?: { tokens?: number; usd?: number };
  requiresConfirmation: boolean;
  observabilityTags: string[];
  /** Our extension: the entry's explicit `contract` as written (validated by the manifest builder). */
  contract?: unknown;
}

/** Decoded manifest or serde's complaint. */
export type RunloopDecoded = { ok: true; version: number; tools: RunloopSpec[] } | { ok: false; error: string };

class SerdeError extends Error {}

const invalidType = (value: unknown, expected: string, at: string): SerdeError =>
  new SerdeError(`invalid type: ${serdeUnexpected(value)}, expected ${expected} at ${at}`);

function map(value: unknown, expected: string, at: string): Record<string, unknown> {
  if (!isJsonObject(value)) throw invalidType(value, expected, at);
  return value;
}

function required(obj: Record<string, unknown>, key: string, at: string): unknown {
  if (!(key in obj)) throw new SerdeError(`missing field \`${key}\` at ${at}`);
  return obj[key];
}

function str(value: unknown, at: string, fallback?: string): string {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string') throw invalidType(value, 'a string', at);
  return value;
}

function uint(value: unknown, expected: string, at: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalidType(value, expected, at);
  if (value < 0) throw new SerdeError(`invalid value: integer \`${value}\`, expected ${expected} at ${at}`);
  return value;
}

function strings(value: unknown, at: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalidType(value, 'a sequence', at);
  return value.map((item, i) => str(item, `${at}[${i}]`));
}

function optional<T>(value: unknown, decode: (v: unknown) => T): T | undefined {
  return value === undefined || value === null ? undefined : decode(value);
}

function decodeTransport(value: unknown, at: string): RunloopTransportSpec {
  const obj = map(value, 'internally tagged enum ToolTransport', at);
  const kind = required(obj, 'kind', at);
  if (typeof kind !== 'string') throw invalidType(kind, 'variant identifier', `${at}.kind`);
  const timeoutMs = optional(obj.timeout_ms, (v) => uint(v, 'u64', `${at}.timeout_ms`));
  const timeout = timeoutMs === undefined ? {} : { timeoutMs };
  if (kind === 'exec') {
    return { kind, command: str(obj.command, `${at}.command`, ''), args: strings(obj.args, `${at}.args`), ...timeout };
  }
  if (kind === 'http') {
    const headers: Record<string, string> = {};
    if (obj.headers !== undefined) {
      for (const [name, v] of Object.entries(map(obj.headers, 'a map', `${at}.headers`))) {
        headers[name] = str(v, `${at}.headers.${name}`);
      }
    }
    return {
      kind,
      method: str(obj.method, `${at}.method`, ''),
      url: str(obj.url, `${at}.url`, ''),
      headers,
      ...timeout,
    };
  }
  throw new SerdeError(`unknown variant \`${kind}\`, expected \`exec\` or \`http\` at ${at}.kind`);
}

function decodeBudget(value: unknown, at: string): { tokens?: number; usd?: number } {
  const obj = map(value, 'struct ToolBudget', at);
  const tokens = optional(obj.tokens, (v) => uint(v, 'u64', `${at}.tokens`));
  const usd = optional(obj.usd, (v) => {
    if (typeof v !== 'number') throw invalidType(v, 'f64', `${at}.usd`);
    return v;
  });
  return { ...(tokens === undefined ? {} : { tokens }), ...(usd === undefined ? {} : { usd }) };
}

function decodeTool(value: unknown, at: string): RunloopSpec {
  const obj = map(value, 'struct ToolSpec', at);
  const id = str(required(obj, 'id', at), `${at}.id`);
  const description = str(required(obj, 'description', at), `${at}.description`);
  const transport = decodeTransport(required(obj, 'transport', at), `${at}.transport`);
  const schemaRefs =
    obj.schema_refs === undefined || obj.schema_refs === null ? {} : map(obj.schema_refs, 'a map', `${at}.schema_refs`);
  const confirm = obj.requires_confirmation;
  if (confirm !== undefined && typeof confirm !== 'boolean')
    throw invalidType(confirm, 'a boolean', `${at}.requires_confirmation`);
  const observability = optional(obj.observability, (v) => map(v, 'struct Observability', `${at}.observability`));
  const budget = optional(obj.budget, (v) => decodeBudget(v, `${at}.budget`));
  return {
    id,
    description,
    transport,
    inputSchema: obj.input_schema ?? null,
    resultSchema: obj.result_schema ?? null,
    hasInputSchema: 'input_schema' in obj,
    hasResultSchema: 'result_schema' in obj,
    schemaRefs,
    capabilities: strings(obj.capabilities, `${at}.capabilities`),
    secrets: strings(obj.secrets, `${at}.secrets`),
    ...(budget === undefined ? {} : { budget }),
    requiresConfirmation: confirm ?? false,
    observabilityTags: strings(observability?.tags, `${at}.observability.tags`),
    ...(obj.contract !== undefined && obj.contract !== null ? { contract: obj.contract } : {}),
  };
}

/** Decodes a parsed Runloop tools.json value. */
export function decodeRunloop(doc: unknown): RunloopDecoded {
  try {
    const root = map(doc, 'struct ToolsManifest', '$');
    const version = uint(required(root, 'version', '$'), 'u32', 'version');
    const rawTools = root.tools === undefined || root.tools === null ? [] : root.tools;
    if (!Array.isArray(rawTools)) throw invalidType(rawTools, 'a sequence', 'tools');
    return { ok: true, version, tools: rawTools.map((tool, i) => decodeTool(tool, `tools[${i}]`)) };
  } catch (err) {
    if (err instanceof SerdeError) return { ok: false, error: err.message };
    throw err;
  }
}
