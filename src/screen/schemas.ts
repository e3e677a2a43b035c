// validateSchemas: input_schema / output_schema / examples of a tool definition.
//
// Errors: a schema that is not an object or does not compile (ajv's text in the message), a
// `required` key missing from `properties` (RCRT parity), a pattern the linear-time regex engine
// cannot run (back-references, lookaround, too large; see regex-safety.ts) or too many patterns, no example, an example whose input (or output, when given) fails its schema —
// every ajv error with its path — and a bad `match`. Warnings: a property without a description.

import { checkSchemaPattern } from './regex-safety.js';
import type { SchemaValidator } from './schema-validator.js';
import { IssueCode, isPlainObject, pointerSegment, quote, type Issue, type ToolDefinition } from './types.js';

/** The parts of a tool definition this function reads. */
export interface SchemaContext {
  input_schema?: unknown;
  output_schema?: unknown;
  examples?: unknown;
}

/** Result of validateSchemas; `examples` are normalised (match defaults to "schema"). */
export interface SchemaResult {
  errors: Issue[];
  warnings: Issue[];
  examples: ToolDefinition['examples'];
}

const COMPOSITION = ['allOf', 'anyOf', 'oneOf', '$ref', 'if', 'dependentSchemas', 'patternProperties'];
const MAX_DEPTH = 64;
/** Most patterns (`pattern` values plus `patternProperties` keys) one schema may hold; each is compiled. */
export const MAX_SCHEMA_PATTERNS = 100;

/** Every regular expression of a schema (`pattern` values, `patternProperties` keys) with its pointer; false when nested too deeply to tell. */
function schemaPatterns(
  schema: unknown,
  pointer: string,
  depth: number,
  found: Array<{ pattern: string; path: string }>,
): boolean {
  if (typeof schema !== 'object' || schema === null) return true;
  if (depth > MAX_DEPTH) return false;
  let complete = true;
  const isArray = Array.isArray(schema);
  for (const [key, value] of Object.entries(schema)) {
    if (!isArray && (key === 'enum' || key === 'const' || key === 'default' || key === 'examples')) continue;
    const path = `${pointer}/${pointerSegment(key)}`;
    if (!isArray && key === 'pattern' && typeof value === 'string') found.push({ pattern: value, path });
    if (!isArray && key === 'patternProperties' && isPlainObject(value)) {
      for (const name of Object.keys(value)) found.push({ pattern: name, path: `${path}/${pointerSegment(name)}` });
    }
    if (!schemaPatterns(value, path, depth + 1, found)) complete = false;
  }
  return complete;
}

/** `required` keys exist in `properties`; every property has a description; recursing into properties and items. */
function checkStructure(
  node: Record<string, unknown>,
  pointer: string,
  rel: string,
  depth: number,
  result: SchemaResult,
): void {
  if (depth > MAX_DEPTH) return;
  const properties = isPlainObject(node.properties) ? node.properties : undefined;
  if (Array.isArray(node.required) && !COMPOSITION.some((k) => k in node)) {
    node.required.forEach((key: unknown, index) => {
      if (typeof key === 'string' && !(properties && Object.hasOwn(properties, key))) {
        result.errors.push({
          code: IssueCode.SchemaRequired,
          path: `${pointer}/required/${index}`,
          message: `Required field '${key}' not found in properties`,
        });
      }
    });
  }
  for (const [key, sub] of Object.entries(properties ?? {})) {
    if (!isPlainObject(sub)) continue;
    const subPointer = `${pointer}/properties/${pointerSegment(key)}`;
    const subRel = `${rel}properties/${key}`;
    if (typeof sub.description !== 'string' || sub.description.trim() === '') {
      result.warnings.push({
        code: IssueCode.SchemaDescription,
        path: subPointer,
        message: `${subRel} has no description`,
      });
    }
    checkStructure(sub, subPointer, `${subRel}/`, depth + 1, result);
  }
  if (isPlainObject(node.items)) checkStructure(node.items, `${pointer}/items`, `${rel}items/`, depth + 1, result);
}

/** Checks one schema; returns it when it can be used to validate examples. */
function checkSchema(
  name: 'input_schema' | 'output_schema',
  schema: unknown,
  validator: SchemaValidator,
  result: SchemaResult,
): object | undefined {
  const pointer = `/${name}`;
  if (!isPlainObject(schema)) {
    const message =
      schema === undefined ? `${name} is required` : `${name} must be a JSON Schema object, got ${quote(schema)}`;
    result.errors.push({ code: IssueCode.SchemaInvalid, path: pointer, message });
    return undefined;
  }
  const patterns: Array<{ pattern: string; path: string }> = [];
  if (!schemaPatterns(schema, pointer, 0, patterns)) {
    result.errors.push({
      code: IssueCode.SchemaInvalid,
      path: pointer,
      message: `${name} is nested deeper than ${MAX_DEPTH} levels`,
    });
    return undefined;
  }
  if (patterns.length > MAX_SCHEMA_PATTERNS) {
    result.errors.push({
      code: IssueCode.SchemaUnsafePattern,
      path: pointer,
      message: `${name} holds ${patterns.length} patterns; at most ${MAX_SCHEMA_PATTERNS} are allowed`,
    });
    return undefined;
  }
  let usable = true;
  for (const { pattern, path } of patterns) {
    const check = checkSchemaPattern(pattern);
    if (!check.ok) {
      usable = false;
      result.errors.push({
        code: IssueCode.SchemaUnsafePattern,
        path,
        message: `Pattern ${quote(pattern)} ${check.reason}`,
      });
    }
  }
  if (!usable) return undefined;
  const compileError = validator.check(schema);
  if (compileError !== undefined) {
    result.errors.push({
      code: IssueCode.SchemaInvalid,
      path: pointer,
      message: `${name} is not a valid JSON Schema: ${compileError}`,
    });
    return undefined;
  }
  checkStructure(schema, pointer, '', 0, result);
  return schema;
}

/**
 * Validates the schemas and examples of a tool definition with the caller's long-lived `validator`
 * (the runner builds one; building one costs milliseconds).
 */
export function validateSchemas(context: SchemaContext, options: { validator: SchemaValidator }): SchemaResult {
  const result: SchemaResult = { errors: [], warnings: [], examples: [] };
  const { validator } = options;
  const input = checkSchema('input_schema', context.input_schema, validator, result);
  const output = checkSchema('output_schema', context.output_schema, validator, result);

  const examples = context.examples;
  if (examples !== undefined && !Array.isArray(examples)) {
    result.errors.push({
      code: IssueCode.Examples,
      path: '/examples',
      message: `examples must be an array, got ${quote(examples)}`,
    });
    return result;
  }
  if (!examples || examples.length === 0) {
    result.errors.push({ code: IssueCode.Examples, path: '/examples', message: 'At least one example is required' });
    return result;
  }
  examples.forEach((example: unknown, i) => {
    const at = `/examples/${i}`;
    if (!isPlainObject(example)) {
      result.errors.push({
        code: IssueCode.ExampleInvalid,
        path: at,
        message: `Example ${i} must be an object, got ${quote(example)}`,
      });
      return;
    }
    const description =
      typeof example.description === 'string' && example.description.trim() !== ''
        ? example.description
        : `Example ${i + 1}`;
    if (description !== example.description) {
      result.warnings.push({
        code: IssueCode.ExampleInvalid,
        path: `${at}/description`,
        message: `Example ${i} has no description`,
      });
    }
    const match = example.match ?? 'schema';
    if (match !== 'schema' && match !== 'exact') {
      result.errors.push({
        code: IssueCode.ExampleInvalid,
        path: `${at}/match`,
        message: `Example ${i} match must be "exact" or "schema", got ${quote(match)}`,
      });
    }
    const requiresNetwork = example.requires_network;
    if (requiresNetwork !== undefined && typeof requiresNetwork !== 'boolean') {
      result.errors.push({
        code: IssueCode.ExampleInvalid,
        path: `${at}/requires_network`,
        message: `Example ${i} requires_network must be true or false, got ${quote(requiresNetwork)}`,
      });
    }
    const hasOutput = example.output !== undefined;
    if (match === 'exact' && !hasOutput) {
      result.errors.push({
        code: IssueCode.ExampleInvalid,
        path: `${at}/output`,
        message: `Example ${i} has match "exact" but no "output"`,
      });
    }
    if (!('input' in example)) {
      result.errors.push({ code: IssueCode.ExampleInput, path: `${at}/input`, message: `Example ${i} has no "input"` });
    } else if (input) {
      checkValue(validator, input, example.input, `${at}/input`, `Example ${i} input`, IssueCode.ExampleInput, result);
    }
    if (hasOutput && output) {
      checkValue(
        validator,
        output,
        example.output,
        `${at}/output`,
        `Example ${i} output`,
        IssueCode.ExampleOutput,
        result,
      );
    }
    result.examples.push({
      description,
      input: example.input,
      ...(hasOutput ? { output: example.output } : {}),
      match: match === 'exact' ? 'exact' : 'schema',
      ...(requiresNetwork === true ? { requiresNetwork: true } : {}),
    });
  });
  return result;
}

function checkValue(
  validator: SchemaValidator,
  schema: object,
  value: unknown,
  pointer: string,
  what: string,
  code: string,
  result: SchemaResult,
): void {
  for (const error of validator.validate(schema, value).errors) {
    const where = error.path === '' ? '' : ` at ${error.path}`;
    result.errors.push({ code, path: pointer + error.path, message: `${what}${where} ${error.message}` });
  }
}
