// JSON Schema transforms shared by every export target (`$ref`s inlined, dialects normalised).
//
// Tool schemas are written by agents, so they are treated as hostile input: local `$ref`s
// (`#`, `#/$defs/x`, `#/definitions/x`, any JSON pointer) are inlined, and a recursive reference,
// a remote one, or an expansion beyond MAX_NODES (a "billion laughs" of refs) is an error naming
// the tool and the reference. A missing schema becomes `{type:"object",additionalProperties:false}`.

import { ErrorCode, RunnerError } from '../errors.js';

/** Largest schema (in JSON nodes) an expansion may produce. */
export const MAX_NODES = 20_000;
/** Deepest nesting an expansion may produce. */
export const MAX_DEPTH = 64;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The schema of "no arguments" every target accepts. */
export function emptyObjectSchema(): Record<string, unknown> {
  return { type: 'object', additionalProperties: false };
}

function pointer(root: unknown, ref: string, tool: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) {
    throw new RunnerError(
      ErrorCode.InputInvalid,
      `schema of tool ${JSON.stringify(tool)} has the $ref ${JSON.stringify(ref)}, which is not local; only refs into the schema itself (#/...) can be resolved`,
    );
  }
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    let part: string;
    try {
      part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      part = raw;
    }
    if (Array.isArray(node) && /^\d+$/.test(part)) node = node[Number(part)];
    else if (isObject(node) && Object.hasOwn(node, part)) node = node[part];
    else
      throw new RunnerError(
        ErrorCode.InputInvalid,
        `schema of tool ${JSON.stringify(tool)} has the $ref ${JSON.stringify(ref)}, which points nowhere`,
      );
  }
  return node;
}

/**
 * The schema with every local `$ref` inlined and `$defs`/`definitions` dropped. Keywords next to a
 * `$ref` are merged over the target; a clash of values keeps both under `allOf`.
 */
export function derefSchema(schema: unknown, tool: string): unknown {
  let nodes = 0;
  const walk = (node: unknown, stack: readonly string[], depth: number): Json => {
    if (++nodes > MAX_NODES || depth > MAX_DEPTH) {
      throw new RunnerError(
        ErrorCode.InputInvalid,
        `schema of tool ${JSON.stringify(tool)} expands to more than ${MAX_NODES} nodes or ${MAX_DEPTH} levels once its $refs are inlined`,
      );
    }
    if (Array.isArray(node)) return node.map((item) => walk(item, stack, depth + 1));
    if (!isObject(node)) return node as Json;
    const ref = node['$ref'];
    if (typeof ref === 'string') {
      if (stack.includes(ref)) {
        throw new RunnerError(
          ErrorCode.InputInvalid,
          `schema of tool ${JSON.stringify(tool)} has a recursive $ref ${JSON.stringify(ref)}; recursive schemas cannot be exported`,
        );
      }
      const target = walk(pointer(schema, ref, tool), [...stack, ref], depth + 1);
      const siblings: Record<string, Json> = {};
      for (const [key, value] of Object.entries(node))
        if (key !== '$ref' && key !== '$defs' && key !== 'definitions') siblings[key] = walk(value, stack, depth + 1);
      if (Object.keys(siblings).length === 0) return target;
      if (!isObject(target)) return { allOf: [target], ...siblings };
      const clash = Object.keys(siblings).some(
        (key) =>
          Object.hasOwn(target, key) &&
          JSON.stringify(target[key]) !== JSON.stringify(siblings[key]) &&
          key !== 'description' &&
          key !== 'title',
      );
      return clash ? { allOf: [target], ...siblings } : { ...target, ...siblings };
    }
    const out: Record<string, Json> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$defs' || key === 'definitions') continue;
      out[key] = walk(value, stack, depth + 1);
    }
    return out;
  };
  return walk(schema, [], 0);
}

/**
 * The schema as an object-rooted schema (MCP requires `type: "object"` at the root of
 * `inputSchema`/`outputSchema`): null/absent → the empty-object schema; `type` missing → added;
 * any other root type → undefined (the caller decides: omit the tool, or the output schema).
 */
export function asObjectRoot(schema: unknown): Record<string, unknown> | undefined {
  if (schema === null || schema === undefined) return emptyObjectSchema();
  if (!isObject(schema)) return undefined;
  const type = schema['type'];
  if (type === 'object') return schema;
  if (
    type === undefined &&
    !('anyOf' in schema) &&
    !('oneOf' in schema) &&
    !('allOf' in schema) &&
    !('not' in schema) &&
    !('enum' in schema) &&
    !('const' in schema)
  ) {
    return { type: 'object', ...schema };
  }
  return undefined;
}

// Keywords OpenAI's structured outputs accept in strict mode.
const STRICT_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'description',
  'title',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'default',
]);

/**
 * Whether OpenAI's `strict: true` may be set (OpenAI's structured-output rules): an object root; every object
 * lists all its properties in `required` and has `additionalProperties: false`; only the keywords
 * strict mode supports (no allOf/oneOf/not/if/patternProperties/...).
 */
export function qualifiesForOpenAIStrict(schema: unknown): boolean {
  if (!isObject(schema) || schema['type'] !== 'object') return false;
  const check = (node: unknown): boolean => {
    if (!isObject(node)) return false;
    for (const key of Object.keys(node)) if (!STRICT_KEYWORDS.has(key)) return false;
    const type = node['type'];
    const isObjectType = type === 'object' || (Array.isArray(type) && type.includes('object'));
    if (isObjectType) {
      const props = node['properties'] ?? {};
      if (!isObject(props) || node['additionalProperties'] !== false) return false;
      const required = node['required'] ?? [];
      if (!Array.isArray(required)) return false;
      const keys = Object.keys(props);
      if (keys.length !== required.length || !keys.every((key) => required.includes(key))) return false;
      if (!Object.values(props).every(check)) return false;
    }
    if ('items' in node && !check(node['items'])) return false;
    if ('anyOf' in node && !(Array.isArray(node['anyOf']) && node['anyOf'].every(check))) return false;
    return true;
  };
  return check(schema);
}
