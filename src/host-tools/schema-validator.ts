// JSON Schema checks of host-tool inputs and results: a thin adapter over the runner's one schema
// validator (src/screen, ajv with a bounded cache, `$schema` dialects, `$id` clashes handled), in the
// shape host tools report problems in. The runner passes its own validator so compiled schemas are
// shared with code tools; nothing is kept at module level.

import type { SchemaValidator } from '../screen/index.js';

/** One schema violation: JSON pointer of the offending value ("/" is the whole value) and ajv's message. */
export interface SchemaIssue {
  path: string;
  message: string;
}

/** Validates values against schemas, compiled once. */
export interface SchemaCache {
  /** Validates `value` against `schema`; null when valid, else the issues. */
  check(schema: object, value: unknown): SchemaIssue[] | null;
}

/** A cache over `validator` (the runner's one, kept for its lifetime). */
export function createSchemaCache(validator: SchemaValidator): SchemaCache {
  return {
    check(schema, value) {
      const result = validator.validate(schema, value);
      return result.valid
        ? null
        : result.errors.map((error) => ({ path: error.path === '' ? '/' : error.path, message: error.message }));
    },
  };
}

/** Why `schema` does not compile, or null when it does (used at manifest load). */
export function schemaCompileError(schema: object, validator: SchemaValidator): string | null {
  return validator.check(schema) ?? null;
}

/** `"/a/b must be string; / must have required property 'x'"` — issues as one line. */
export function describeIssues(issues: readonly SchemaIssue[], max = 5): string {
  const shown = issues.slice(0, max).map((issue) => `${issue.path} ${issue.message}`);
  if (issues.length > max) shown.push(`(${issues.length - max} more)`);
  return shown.join('; ');
}
