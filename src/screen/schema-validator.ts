// createSchemaValidator: ajv-backed JSON Schema validation with compiled schemas cached.
//
// The runner validates every request's input (and every result) against the tool's schemas, so the
// hot path must be cheap. Schemas are cached by canonical JSON (key order does not matter); a
// frozen schema object (ToolDefinition schemas are deep-frozen) is also remembered by identity, which
// skips the canonical-JSON step (~15 µs for a 14-property schema). A frozen schema must therefore
// be deep-frozen, as validateToolDefinition makes it. The dialect
// follows `$schema`: draft-07 (also the default), 2019-09 or 2020-12. The cache is an LRU of
// `maxCached` schemas; an evicted schema is also removed from its ajv instance so memory stays
// bounded however many tool versions come and go. Every error is reported (allErrors) with a JSON
// pointer to the offending value; `required`/`additionalProperties` errors point at the property.
// Patterns run on the linear-time engine of regex-safety.ts (never on RegExp), each validation
// under that engine's work budget: a validation over budget fails with one error naming the pattern.

import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { createPatternEngine, RegexBudgetError } from './regex-safety.js';
import { isPlainObject, pointerSegment, quote } from './types.js';
import { BoundedMap } from '../bounded.js';

/** One validation error: JSON pointer into the data ("" is the whole value) and ajv's message. */
export interface SchemaError {
  path: string;
  message: string;
}

/** Validation of one value. */
export interface SchemaValidation {
  valid: boolean;
  errors: SchemaError[];
}

/** A reusable validator; create one per process and share it (building ajv is the costly part). */
export interface SchemaValidator {
  /** Validates `data`; a schema that does not compile yields one error at path "" naming the reason. */
  validate(schema: object, data: unknown): SchemaValidation;
  /** Compiles `schema` into the cache; returns why it does not compile, or undefined when it does. */
  check(schema: object): string | undefined;
}

type Dialect = 'draft-07' | '2019-09' | '2020-12';
type AjvInstance = Ajv | Ajv2019 | Ajv2020;
type CompiledEntry = { fn: ValidateFunction; schema: object; dialect: Dialect } | { error: string };

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;
const AJV_OPTIONS = { allErrors: true, strict: false, allowUnionTypes: true, logger: false as const };

/** Longest string the `regex` format accepts: checking it compiles a RegExp, ~130 ms per megabyte. */
export const MAX_REGEX_FORMAT_LENGTH = 10_000;

/** ajv-formats' `regex` format with a length cap (its `\Z` rule kept): the data is compiled, never run. */
function regexFormat(text: string): boolean {
  if (text.length > MAX_REGEX_FORMAT_LENGTH || /[^\\]\\Z/.test(text)) return false;
  try {
    new RegExp(text);
    return true;
  } catch {
    return false;
  }
}

/** Options of createSchemaValidator. */
export interface SchemaValidatorOptions {
  /** Compiled schemas kept (LRU); default 512. */
  maxCached?: number;
  /** Regex work budget of one validation (see regex-safety.ts); default DEFAULT_REGEX_BUDGET. */
  regexBudget?: number;
}

/** The dialect `$schema` asks for, or an error message naming it. */
export function schemaDialect(schema: object): Dialect | { error: string } {
  const id = (schema as { $schema?: unknown }).$schema;
  if (id === undefined) return 'draft-07';
  if (typeof id === 'string') {
    if (/json-schema\.org\/draft-07\/schema#?$/.test(id)) return 'draft-07';
    if (/json-schema\.org\/draft\/2019-09\/schema#?$/.test(id)) return '2019-09';
    if (/json-schema\.org\/draft\/2020-12\/schema#?$/.test(id)) return '2020-12';
  }
  return { error: `Unsupported $schema ${quote(id)}; use draft-07, 2019-09 or 2020-12` };
}

/** Canonical JSON: object keys sorted, undefined members dropped; the cache key of a schema. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return '[' + value.map(canonicalJson).join(',') + ']';
  const record = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of Object.keys(record).sort()) {
    if (record[key] !== undefined) parts.push(JSON.stringify(key) + ':' + canonicalJson(record[key]));
  }
  return '{' + parts.join(',') + '}';
}

function toSchemaError(error: ErrorObject): SchemaError {
  const params = error.params as Record<string, unknown>;
  let path = error.instancePath;
  const property = params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty;
  if (typeof property === 'string') path += '/' + pointerSegment(property);
  let message = error.message ?? `must pass "${error.keyword}"`;
  if (error.keyword === 'enum') message += `: ${quote(params.allowedValues)}`;
  if (error.keyword === 'const') message += `: ${quote(params.allowedValue)}`;
  return { path, message };
}

/** Creates a validator with its own ajv instances and an LRU of `maxCached` compiled schemas. */
export function createSchemaValidator(options: SchemaValidatorOptions = {}): SchemaValidator {
  const maxCached = options.maxCached ?? 512;
  const patterns = createPatternEngine(options.regexBudget === undefined ? {} : { budget: options.regexBudget });
  const ajvOptions = { ...AJV_OPTIONS, code: { regExp: patterns.regExp } };
  const instances = new Map<Dialect, AjvInstance>();
  const cache = new BoundedMap<string, CompiledEntry>(maxCached, (_key, entry) => {
    if ('fn' in entry) ajvFor(entry.dialect).removeSchema(entry.schema);
  });
  const byIdentity = new WeakMap<object, { key: string; entry: CompiledEntry }>();

  const ajvFor = (dialect: Dialect): AjvInstance => {
    let ajv = instances.get(dialect);
    if (!ajv) {
      ajv =
        dialect === '2020-12'
          ? new Ajv2020(ajvOptions)
          : dialect === '2019-09'
            ? new Ajv2019(ajvOptions)
            : new Ajv(ajvOptions);
      addFormats(ajv as Ajv);
      ajv.addFormat('regex', regexFormat);
      instances.set(dialect, ajv);
    }
    return ajv;
  };

  const compile = (schema: object): CompiledEntry => {
    const dialect = schemaDialect(schema);
    if (typeof dialect !== 'string') return dialect;
    const ajv = ajvFor(dialect);
    const id = (schema as { $id?: unknown }).$id;
    // Two tools may use the same $id for different schemas; the newest compile wins the id.
    if (typeof id === 'string' && ajv.getSchema(id)) ajv.removeSchema(id);
    try {
      // ajv caches by object identity: give it a private copy, so a caller mutating its object
      // later can never be served the old compiled function, and eviction frees exactly our copy.
      const copy = structuredClone(schema);
      const fn = ajv.compile(copy);
      if ((fn as { $async?: unknown }).$async === true) {
        // an async validator answers with a promise, which would read as "valid"
        ajv.removeSchema(copy);
        return { error: 'schemas using "$async" are not supported' };
      }
      return { fn, schema: copy, dialect };
    } catch (err) {
      if (err instanceof RangeError) return { error: 'schema is nested too deeply' };
      return { error: err instanceof Error ? err.message : String(err) };
    }
  };

  const lookup = (schema: object): CompiledEntry => {
    const known = byIdentity.get(schema);
    if (known && cache.get(known.key) === known.entry) {
      cache.touch(known.key);
      return known.entry;
    }
    const key = canonicalJson(schema);
    const entry = cache.touch(key) ?? compile(schema);
    cache.set(key, entry);
    if (Object.isFrozen(schema)) byIdentity.set(schema, { key, entry });
    return entry;
  };

  return {
    validate(schema, data) {
      const entry = lookup(schema);
      if ('error' in entry)
        return { valid: false, errors: [{ path: '', message: `schema does not compile: ${entry.error}` }] };
      const fn = entry.fn;
      let valid: boolean;
      try {
        valid = patterns.run(() => fn(data) as boolean);
      } catch (err) {
        if (err instanceof RegexBudgetError) return { valid: false, errors: [{ path: '', message: err.message }] };
        throw err;
      }
      if (valid) return { valid: true, errors: [] };
      return { valid: false, errors: (fn.errors ?? []).map(toSchemaError) };
    },
    check(schema) {
      if (!isPlainObject(schema)) return `a schema must be an object, got ${quote(schema)}`;
      const entry = lookup(schema);
      return 'error' in entry ? entry.error : undefined;
    },
  };
}
