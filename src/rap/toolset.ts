// RAP toolsets: their shape, whole-toolset validation (one bad tool rejects the toolset) and discovery
// from `{base}/.well-known/rap-toolset` (with the reference runtime's exact error text).
//
// Validation reports every problem it finds and the caller rejects the toolset whole when there is
// any: no tool of an invalid toolset is ever made available (no partial loads). Input schemas must
// compile and may not contain a regular expression that can backtrack catastrophically, because the
// runner validates every call's arguments against them. A schema without `$schema` is RAP's default
// dialect, JSON Schema 2020-12, and is stored with that `$schema` made explicit.

import { capBytes, sanitizeText } from '../host-tools/call-outcome.js';
import type { SchemaValidator } from '../screen/index.js';
import { quote } from '../screen/types.js';

/** One tool of a toolset as served. */
export interface RapToolDef {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  displayScript?: string;
}

/** A RAP toolset (the JSON document of `/.well-known/rap-toolset`). */
export interface RapToolset {
  name: string;
  description?: string;
  endpoint: string;
  tools: RapToolDef[];
  needsMigration?: boolean;
}

/** The path every tool server serves its toolset at. */
export const WELL_KNOWN_PATH = '/.well-known/rap-toolset';
/** Longest toolset or tool name (spec: 1 to 128 characters). */
export const MAX_NAME_LENGTH = 128;
/** Most tools one toolset may define. */
export const MAX_TOOLS = 1000;
/** Largest toolset document accepted (bytes). */
export const MAX_TOOLSET_BYTES = 2 * 1024 * 1024;
/** The dialect of a RAP input schema that does not name one. */
export const DEFAULT_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const BOOLEAN_ANNOTATIONS = ['readOnly', 'destructive', 'idempotent', 'longRunning'] as const;

/** JSON of `value` for a message, cut to `max` characters (the screen module's `quote`, RAP's shorter cut). */
export function quoteValue(value: unknown, max = 80): string {
  return quote(value, max);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether `text` is an absolute http: or https: URL. */
export function isHttpUrl(text: unknown): text is string {
  if (typeof text !== 'string') return false;
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function checkTool(raw: unknown, at: string, validator: SchemaValidator, errors: string[]): RapToolDef | undefined {
  if (!isObject(raw)) {
    errors.push(`${at} must be an object, got ${quoteValue(raw)}`);
    return undefined;
  }
  const before = errors.length;
  const { name, description, inputSchema, annotations, displayScript } = raw;
  if (name === undefined) errors.push(`${at}.name is required`);
  else if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    errors.push(
      `${at}.name must be 1 to ${MAX_NAME_LENGTH} characters of A-Z, a-z, 0-9, "_", "-" or ".", got ${quoteValue(name)}`,
    );
  }
  if (description === undefined) errors.push(`${at}.description is required`);
  else if (typeof description !== 'string' || description.trim() === '')
    errors.push(`${at}.description must be a non-empty string, got ${quoteValue(description)}`);
  let schema: Record<string, unknown> | undefined;
  if (inputSchema === undefined) errors.push(`${at}.inputSchema is required`);
  else if (!isObject(inputSchema))
    errors.push(`${at}.inputSchema must be a JSON Schema object, got ${quoteValue(inputSchema)}`);
  else {
    schema = inputSchema['$schema'] === undefined ? { $schema: DEFAULT_SCHEMA_DIALECT, ...inputSchema } : inputSchema;
    const compileError = validator.check(schema);
    if (compileError !== undefined) errors.push(`${at}.inputSchema is not a valid JSON Schema: ${compileError}`);
    // Patterns run on RE2 (linear time): one RE2 cannot compile already fails the compile above.
  }
  if (annotations !== undefined) {
    if (!isObject(annotations)) errors.push(`${at}.annotations must be an object, got ${quoteValue(annotations)}`);
    else {
      for (const key of BOOLEAN_ANNOTATIONS) {
        if (annotations[key] !== undefined && typeof annotations[key] !== 'boolean')
          errors.push(`${at}.annotations.${key} must be a boolean, got ${quoteValue(annotations[key])}`);
      }
      if (annotations['requiresAuth'] !== undefined && typeof annotations['requiresAuth'] !== 'string') {
        errors.push(`${at}.annotations.requiresAuth must be a string, got ${quoteValue(annotations['requiresAuth'])}`);
      }
    }
  }
  if (displayScript !== undefined && typeof displayScript !== 'string')
    errors.push(`${at}.displayScript must be a string, got ${quoteValue(displayScript)}`);
  if (errors.length > before || schema === undefined) return undefined;
  return {
    name: name as string,
    description: description as string,
    inputSchema: schema,
    ...(annotations !== undefined ? { annotations: annotations as Record<string, unknown> } : {}),
    ...(displayScript !== undefined ? { displayScript: displayScript as string } : {}),
  };
}

/** Validates a whole toolset document: the toolset, or every problem found (then none of it may load). */
export function validateToolset(
  value: unknown,
  validator: SchemaValidator,
): { ok: true; toolset: RapToolset } | { ok: false; errors: string[] } {
  if (!isObject(value))
    return {
      ok: false,
      errors: [`toolset must be a JSON object, got ${Array.isArray(value) ? 'an array' : quoteValue(value)}`],
    };
  const errors: string[] = [];
  const { name, description, endpoint, tools, needsMigration } = value;
  if (name === undefined) errors.push('name is required');
  else if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH)
    errors.push(`name must be a string of 1 to ${MAX_NAME_LENGTH} characters, got ${quoteValue(name)}`);
  if (description !== undefined && typeof description !== 'string')
    errors.push(`description must be a string, got ${quoteValue(description)}`);
  if (endpoint === undefined) errors.push('endpoint is required');
  else if (!isHttpUrl(endpoint)) errors.push(`endpoint must be an absolute http(s) URL, got ${quoteValue(endpoint)}`);
  if (needsMigration !== undefined && typeof needsMigration !== 'boolean')
    errors.push(`needsMigration must be a boolean, got ${quoteValue(needsMigration)}`);
  const defs: RapToolDef[] = [];
  if (tools === undefined) errors.push('tools is required');
  else if (!Array.isArray(tools)) errors.push(`tools must be an array, got ${quoteValue(tools)}`);
  else if (tools.length === 0) errors.push('tools must contain at least one tool');
  else if (tools.length > MAX_TOOLS)
    errors.push(`tools has ${tools.length} entries; at most ${MAX_TOOLS} are accepted`);
  else {
    const seen = new Map<string, number>();
    tools.forEach((raw: unknown, index) => {
      const def = checkTool(raw, `tools[${index}]`, validator, errors);
      const toolName = isObject(raw) && typeof raw['name'] === 'string' ? raw['name'] : undefined;
      if (toolName !== undefined) {
        const first = seen.get(toolName);
        if (first !== undefined)
          errors.push(`tools[${index}].name ${quoteValue(toolName)} is already used by tools[${first}]`);
        else seen.set(toolName, index);
      }
      if (def) defs.push(def);
    });
  }
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    toolset: {
      name: name as string,
      ...(description !== undefined ? { description: description as string } : {}),
      endpoint: endpoint as string,
      tools: defs,
      ...(needsMigration !== undefined ? { needsMigration: needsMigration as boolean } : {}),
    },
  };
}

/** The discovery URL of a tool server base (trailing slashes removed, well-known path appended). */
export function discoveryUrl(base: string): string {
  return base.replace(/\/+$/, '') + WELL_KNOWN_PATH;
}

/** The outcome of one discovery fetch. */
export type ToolsetFetch =
  | { ok: true; url: string; toolset: RapToolset }
  | { ok: false; url: string; kind: 'unreachable' | 'status' | 'invalid'; error: string };

function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

async function readText(res: Response, max: number): Promise<{ text: string; over: boolean }> {
  if (!res.body) return { text: '', over: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return { text: '', over: true };
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), over: false };
}

/** Fetches and validates the toolset of one tool server. Never throws. */
export async function fetchToolset(
  base: string,
  options: { validator: SchemaValidator; timeoutMs: number; signal?: AbortSignal; token?: string },
): Promise<ToolsetFetch> {
  const url = discoveryUrl(base);
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let res: Response;
  let body: { text: string; over: boolean };
  try {
    res = await fetch(url, {
      headers: {
        accept: 'application/json',
        ...(options.token !== undefined ? { authorization: `Bearer ${options.token}` } : {}),
      },
      redirect: 'manual',
      signal,
    });
    body = await readText(res, MAX_TOOLSET_BYTES);
  } catch (error) {
    const reason = timeout.aborted ? `no answer within ${options.timeoutMs} ms` : reasonOf(error);
    return { ok: false, url, kind: 'unreachable', error: `Toolset fetch from ${url} failed: ${sanitizeText(reason)}` };
  }
  if (res.status < 200 || res.status > 299) {
    const shown = body.over ? `(more than ${MAX_TOOLSET_BYTES} bytes)` : capBytes(sanitizeText(body.text), 1000);
    return {
      ok: false,
      url,
      kind: 'status',
      error: `Toolset fetch from ${url} returned status ${res.status}: ${shown}`,
    };
  }
  if (body.over)
    return { ok: false, url, kind: 'invalid', error: `Toolset from ${url} is larger than ${MAX_TOOLSET_BYTES} bytes` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.text);
  } catch (error) {
    return {
      ok: false,
      url,
      kind: 'invalid',
      error: `Toolset from ${url} is not valid JSON: ${(error as Error).message}`,
    };
  }
  const checked = validateToolset(parsed, options.validator);
  if (!checked.ok)
    return {
      ok: false,
      url,
      kind: 'invalid',
      error: `Toolset from ${url} is invalid, so none of its tools is loaded: ${checked.errors.join('; ')}`,
    };
  return { ok: true, url, toolset: checked.toolset };
}
