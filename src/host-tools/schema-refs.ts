// Resolves Runloop's shared-schema references (`{"$ref": "schema:<id>"}`) through a tool's
// `schema_refs` map, anywhere inside a schema, so that validators and exporters (OpenAI, Gemini)
// get self-contained schemas. Other `$ref`s (`#/$defs/x`) are left for the validator.
//
// `schema_refs` maps an id (written `<id>` or `schema:<id>`) to an inline JSON Schema. Runloop's
// shared registry is not available to us, so a reference missing from the map is an error naming
// it, as is a cycle. A `$ref` with sibling keywords becomes `allOf` so no constraint is lost.

import { isJsonObject } from './json-kinds.js';

const PREFIX = 'schema:';

/** Thrown with a message naming the offending reference; the caller adds the tool prefix. */
export class SchemaRefError extends Error {}

function lookup(refs: Record<string, unknown>, ref: string): unknown {
  const id = ref.slice(PREFIX.length);
  if (Object.hasOwn(refs, ref)) return refs[ref];
  if (Object.hasOwn(refs, id)) return refs[id];
  return undefined;
}

function expand(value: unknown, refs: Record<string, unknown>, where: string, stack: readonly string[]): unknown {
  if (Array.isArray(value)) return value.map((item) => expand(item, refs, where, stack));
  if (!isJsonObject(value)) return value;
  const ref = value.$ref;
  if (typeof ref === 'string' && ref.startsWith(PREFIX)) {
    if (stack.includes(ref)) throw new SchemaRefError(`cyclic schema ref ${JSON.stringify(ref)} in ${where}`);
    const target = lookup(refs, ref);
    if (target === undefined) throw new SchemaRefError(`unresolvable schema ref ${JSON.stringify(ref)} in ${where}`);
    if (!isJsonObject(target) && typeof target !== 'boolean') {
      throw new SchemaRefError(`schema ref ${JSON.stringify(ref)} in ${where} does not name a JSON Schema object`);
    }
    const resolved = expand(target, refs, where, [...stack, ref]);
    const { $ref: _dropped, ...rest } = value;
    if (Object.keys(rest).length === 0) return resolved;
    const siblings = expand(rest, refs, where, stack) as Record<string, unknown>;
    const allOf = Array.isArray(siblings.allOf) ? siblings.allOf : [];
    return { ...siblings, allOf: [...allOf, resolved] };
  }
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) out[key] = expand(child, refs, where, stack);
  return out;
}

/** Returns `schema` with every `schema:<id>` reference replaced; `where` names the field in errors. */
export function resolveSchemaRefs(schema: unknown, refs: Record<string, unknown>, where: string): unknown {
  return expand(schema, refs, where, []);
}
