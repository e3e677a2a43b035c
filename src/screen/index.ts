// Public API of src/screen: static screening of tool source (acorn AST), permission validation,
// schema validation (ajv) and the full tool-definition check that yields a ToolDefinition.
//
// Everything here is a pure function (no I/O, no store, no Deno). Screening is a policy layer that
// gives authors early, precise errors; the Deno sandbox and process isolation stay the boundary.

export { IssueCode, type Issue, type Origin, type ScreenPermissions, type ToolDefinition } from './types.js';
export { screenSource, NO_EXECUTE_MESSAGE, type ScreenOptions } from './screen-source.js';
export {
  validatePermissions,
  FFI_MESSAGE,
  HRTIME_MESSAGE,
  type PermissionOptions,
  type PermissionResult,
} from './permissions.js';
export { checkNetHost, blockedMessage, type NetHostCheck } from './net-hosts.js';
export { validateSchemas, MAX_SCHEMA_PATTERNS, type SchemaContext, type SchemaResult } from './schemas.js';
export {
  createSchemaValidator,
  canonicalJson,
  schemaDialect,
  MAX_REGEX_FORMAT_LENGTH,
  type SchemaError,
  type SchemaValidation,
  type SchemaValidator,
  type SchemaValidatorOptions,
} from './schema-validator.js';
export {
  validateToolDefinition,
  definitionOf,
  timeoutBound,
  type RecordFields,
  TOOL_NAME,
  SEMVER,
  SECRET_NAME,
  type DefinitionConfig,
  type DefinitionOptions,
  type DefinitionResult,
} from './definition.js';
export {
  checkSchemaPattern,
  createPatternEngine,
  RegexBudgetError,
  DEFAULT_REGEX_BUDGET,
  PER_CHARACTER_STEPS,
  MAX_PATTERN_LENGTH,
  MAX_PROGRAM_SIZE,
  type PatternCheck,
  type PatternEngine,
} from './regex-safety.js';
export { denoApiPermissions, type DenoPermission } from './deno-apis.js';
