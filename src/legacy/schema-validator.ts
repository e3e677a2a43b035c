// JSON Schema checks of host-tool inputs and results (ajv), with a cache of compiled validators.
//
// The dialect follows the schema's `$schema` (2020-12, 2019-09, else draft-07). Ajv runs non-strict
// (manifests carry schemas written for models, with extra keywords) and never registers a schema's
// `$id`, so two tools may ship the same `$id` without clashing. The cache is an object the caller
// owns (createSchemaCache); nothing is kept at module level.

import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import * as formatsModule from 'ajv-formats';

/** One schema violation: JSON pointer of the offending value and ajv's message. */
export interface SchemaIssue {
  path: string;
  message: string;
}

/** Compiled validators keyed by schema object identity. */
export interface SchemaCache {
  /** Validates `value` against `schema`; null when valid, else the issues. Throws if the schema does not compile. */
  check(schema: object, value: unknown): SchemaIssue[] | null;
}

type AnyAjv = Ajv | Ajv2019 | Ajv2020;
type Dialect = 'draft7' | '2019' | '2020';

const OPTIONS: Options = { allErrors: true, strict: false, addUsedSchema: false, logger: false };
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: AnyAjv) => unknown;

function dialectOf(schema: object): Dialect {
  const declared = (schema as { $schema?: unknown }).$schema;
  if (typeof declared !== 'string') return 'draft7';
  if (declared.includes('2020-12')) return '2020';
  if (declared.includes('2019-09')) return '2019';
  return 'draft7';
}

function createAjv(dialect: Dialect): AnyAjv {
  const ajv = dialect === '2020' ? new Ajv2020(OPTIONS) : dialect === '2019' ? new Ajv2019(OPTIONS) : new Ajv(OPTIONS);
  addFormats(ajv);
  return ajv;
}

/** Creates an empty validator cache; the runner keeps one for its lifetime. */
export function createSchemaCache(): SchemaCache {
  const engines = new Map<Dialect, AnyAjv>();
  const compiled = new WeakMap<object, ValidateFunction>();
  const engine = (dialect: Dialect): AnyAjv => {
    let ajv = engines.get(dialect);
    if (!ajv) {
      ajv = createAjv(dialect);
      engines.set(dialect, ajv);
    }
    return ajv;
  };
  return {
    check(schema, value) {
      let validate = compiled.get(schema);
      if (!validate) {
        validate = engine(dialectOf(schema)).compile(schema);
        compiled.set(schema, validate);
      }
      return validate(value) ? null : toIssues(validate.errors ?? []);
    },
  };
}

/** Why `schema` does not compile, or null when it does (used at manifest load). */
export function schemaCompileError(schema: object): string | null {
  try {
    createAjv(dialectOf(schema)).compile(schema);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** `"/a/b must be string; / must have required property 'x'"` — issues as one line. */
export function describeIssues(issues: readonly SchemaIssue[], max = 5): string {
  const shown = issues.slice(0, max).map((issue) => `${issue.path} ${issue.message}`);
  if (issues.length > max) shown.push(`(${issues.length - max} more)`);
  return shown.join('; ');
}

function toIssues(errors: readonly ErrorObject[]): SchemaIssue[] {
  return errors.map((error) => {
    let path = error.instancePath === '' ? '/' : error.instancePath;
    if (error.keyword === 'additionalProperties') {
      const extra = (error.params as { additionalProperty?: unknown }).additionalProperty;
      if (typeof extra === 'string') path = `${error.instancePath}/${extra}`;
    }
    return { path, message: error.message ?? error.keyword };
  });
}
