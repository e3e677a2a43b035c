// validateToolDefinition: a tool.code.v1 context (or a tool_spec) -> errors, warnings, ToolDefinition.
//
// Runs every check of the screen module: the definition's own fields (name, description, version,
// code, limits, required_secrets), permissions, source screening with the validated permissions,
// and schemas with examples. The ToolDefinition is returned only when there is no error; it is a
// deep copy, deep-frozen, so the catalog can share it and cached schema validators stay correct.
// Unknown top-level fields (upstream adds bootstrap, subscriptions, ui_schema) are tolerated.

import { readAutonomy } from './autonomy.js';
import type { Config } from '../config/schema.js';
import { parseContract } from '../contract/contract.js';
import { validatePermissions } from './permissions.js';
import type { SchemaValidator } from './schema-validator.js';
import { validateSchemas } from './schemas.js';
import { screenSource } from './screen-source.js';
import { IssueCode, isPlainObject, quote, type Issue, type Origin, type ToolDefinition } from './types.js';

/** The configuration validateToolDefinition needs. */
export type DefinitionConfig = Pick<
  Config,
  | 'maxNetDomains'
  | 'bootstrapAllow'
  | 'allowPrivateHosts'
  | 'maxSourceBytes'
  | 'defaultTimeoutMs'
  | 'maxTimeoutMs'
  | 'defaultMemoryMb'
  | 'maxMemoryMb'
> &
  Partial<Pick<Config, 'bootstrapMaxTimeoutMs'>>;

/** Options of validateToolDefinition; `validator` is the caller's long-lived one (building one costs milliseconds). */
export interface DefinitionOptions {
  origin: Origin;
  config: DefinitionConfig;
  validator: SchemaValidator;
}

/** The outcome; `tool` is present exactly when `ok`. */
export type DefinitionResult =
  | { ok: true; errors: Issue[]; warnings: Issue[]; tool: ToolDefinition }
  | { ok: false; errors: Issue[]; warnings: Issue[]; tool?: undefined };

/** Tool names: lower case, starting with a letter, 1-64 characters of [a-z0-9_-]. */
export const TOOL_NAME = /^[a-z][a-z0-9_-]{0,63}$/;
/** Semantic version x.y.z with optional pre-release and build metadata (semver.org 2.0.0). */
export const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;
/** Secret names as the store and context.secrets use them. */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/;
const DEFAULT_VERSION = '1.0.0';
const MIN_MEMORY_MB = 16;
const KNOWN_LIMITS = new Set(['timeout_ms', 'memory_mb', 'cpu_percent', 'isolation']);

/** The record-level fields upstream keeps beside `context` (its bootstrap files and the store records they become). */
export interface RecordFields {
  title?: unknown;
  description?: unknown;
  semantic_version?: unknown;
  llm_hints?: unknown;
}

/**
 * The definition of a tool.code.v1 record in upstream's shape: `context`, with the record's top-level
 * `description` and `semantic_version` filling `context.description` and `context.version` when the
 * context lacks them (upstream keeps them beside the context). The context's own values win; every
 * other field (title, llm_hints, ui_schema, bootstrap, ...) is kept and ignored. Returns `context`
 * itself when nothing is filled.
 */
export function definitionOf(context: Record<string, unknown>, record: RecordFields): Record<string, unknown> {
  const fill: Record<string, unknown> = {};
  const given = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';
  if (context['description'] === undefined && given(record.description)) fill['description'] = record.description;
  if (context['version'] === undefined && given(record.semantic_version)) fill['version'] = record.semantic_version;
  return Object.keys(fill).length === 0 ? context : { ...context, ...fill };
}

/** Validates and normalises a tool definition written by an agent or shipped in the bootstrap directory. */
export function validateToolDefinition(context: unknown, options: DefinitionOptions): DefinitionResult {
  const errors: Issue[] = [];
  const warnings: Issue[] = [];
  const error = (code: string, path: string, message: string): void => void errors.push({ code, path, message });
  if (!isPlainObject(context)) {
    error(IssueCode.Definition, '', `Tool definition must be an object, got ${quote(context)}`);
    return { ok: false, errors, warnings };
  }
  const { config } = options;

  const name = context.name;
  if (typeof name !== 'string' || !TOOL_NAME.test(name))
    error(IssueCode.Name, '/name', `Tool name must match ${TOOL_NAME.source}, got ${quote(name)}`);
  const description = context.description;
  if (typeof description !== 'string' || description.trim() === '') {
    error(
      IssueCode.Description,
      '/description',
      `Tool description must be a non-empty string, got ${quote(description)}`,
    );
  }
  let version = context.version;
  if (version === undefined) {
    version = DEFAULT_VERSION;
    warnings.push({
      code: IssueCode.Version,
      path: '/version',
      message: `No version given; using "${DEFAULT_VERSION}"`,
    });
  } else if (typeof version !== 'string' || version.length > 128 || !SEMVER.test(version)) {
    error(
      IssueCode.Version,
      '/version',
      `Tool version must be semver x.y.z (pre-release allowed), got ${quote(version)}`,
    );
  }

  const code = context.code;
  let language: 'typescript' | 'javascript' | undefined;
  let source: string | undefined;
  if (!isPlainObject(code)) {
    error(IssueCode.Code, '/code', `code must be an object with a "source" string, got ${quote(code)}`);
  } else {
    const lang = code.language ?? 'typescript';
    if (lang === 'typescript' || lang === 'javascript') language = lang;
    else
      error(IssueCode.Code, '/code/language', `code.language must be "typescript" or "javascript", got ${quote(lang)}`);
    if (typeof code.source === 'string') source = code.source;
    else error(IssueCode.Code, '/code/source', `code.source must be a string, got ${quote(code.source)}`);
  }

  const privateHosts =
    typeof name === 'string' && Object.hasOwn(config.allowPrivateHosts, name) ? config.allowPrivateHosts[name] : [];
  const permissions = validatePermissions(context.permissions, {
    origin: options.origin,
    maxNetDomains: config.maxNetDomains,
    bootstrapAllow: config.bootstrapAllow,
    privateHosts,
    ...(typeof name === 'string' ? { toolName: name } : {}),
  });
  errors.push(...permissions.errors);
  warnings.push(...permissions.warnings);
  if (source !== undefined && language !== undefined) {
    const granted = {
      net: [...permissions.net, ...permissions.privateNet],
      extraPermissions: permissions.extraPermissions,
    };
    errors.push(...screenSource(source, { permissions: granted, maxSourceBytes: config.maxSourceBytes, language }));
  }

  const limits = readLimits(context.limits, config, options.origin, errors, warnings);
  const requiredSecrets = readSecrets(context.required_secrets, errors);
  const contract = context.contract === undefined ? { issues: [], contract: {} } : parseContract(context.contract);
  for (const problem of contract.issues) error(IssueCode.Contract, problem.path, problem.message);
  const autonomy = readAutonomy(context, {
    origin: options.origin,
    api: permissions.api,
    ...(permissions.apiSchemas ? { apiSchemas: permissions.apiSchemas } : {}),
  });
  errors.push(...autonomy.errors);
  warnings.push(...autonomy.warnings);
  const schemas = validateSchemas(context, { validator: options.validator });
  errors.push(...schemas.errors);
  warnings.push(...schemas.warnings);

  if (errors.length > 0 || source === undefined || language === undefined) return { ok: false, errors, warnings };
  const tool: ToolDefinition = {
    name: name as string,
    description: description as string,
    version: version as string,
    language,
    source,
    inputSchema: structuredClone(context.input_schema) as object,
    outputSchema: structuredClone(context.output_schema) as object,
    net: permissions.net,
    ...(permissions.privateNet.length > 0 ? { privateNet: permissions.privateNet } : {}),
    api: permissions.api,
    ...(permissions.apiSchemas ? { apiSchemas: structuredClone(permissions.apiSchemas) } : {}),
    ...(permissions.tools !== undefined
      ? { tools: permissions.tools === true ? (true as const) : [...permissions.tools] }
      : {}),
    extraPermissions: permissions.extraPermissions,
    timeoutMs: limits.timeoutMs,
    memoryMb: limits.memoryMb,
    ...(limits.cpuPercent !== undefined ? { cpuPercent: limits.cpuPercent } : {}),
    ...(isPlainObject(context.bootstrap) && context.bootstrap['mode'] === 'continuous'
      ? { continuous: true as const }
      : {}),
    ...(limits.isolation === 'process' ? { isolation: 'process' as const } : {}),
    ...(autonomy.subscriptions ? { subscriptions: autonomy.subscriptions } : {}),
    ...(autonomy.bootstrap ? { bootstrap: autonomy.bootstrap } : {}),
    requiredSecrets,
    examples: structuredClone(schemas.examples),
    contract: structuredClone(contract.contract ?? {}),
  };
  return { ok: true, errors, warnings, tool: deepFreeze(tool) };
}

/** The timeout bound of a tool of `origin`: agents `maxTimeoutMs`; the operator's files up to `bootstrapMaxTimeoutMs`. */
export function timeoutBound(config: DefinitionConfig, origin: Origin): number {
  return origin === 'bootstrap'
    ? Math.max(config.maxTimeoutMs, config.bootstrapMaxTimeoutMs ?? config.maxTimeoutMs)
    : config.maxTimeoutMs;
}

type Limits = { timeoutMs: number; memoryMb: number; isolation?: 'warm' | 'process'; cpuPercent?: number };

function readLimits(
  limits: unknown,
  config: DefinitionConfig,
  origin: Origin,
  errors: Issue[],
  warnings: Issue[],
): Limits {
  const out: Limits = { timeoutMs: config.defaultTimeoutMs, memoryMb: config.defaultMemoryMb };
  if (limits === undefined || limits === null) return out;
  if (!isPlainObject(limits)) {
    errors.push({ code: IssueCode.Limits, path: '/limits', message: `limits must be an object, got ${quote(limits)}` });
    return out;
  }
  const integer = (key: string, min: number, max: number): number | undefined => {
    const value = limits[key];
    if (value === undefined) return undefined;
    if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
    errors.push({
      code: IssueCode.Limits,
      path: `/limits/${key}`,
      message: `limits.${key} must be an integer from ${min} to ${max}, got ${quote(value)}`,
    });
    return undefined;
  };
  const maxTimeout = timeoutBound(config, origin);
  const timeout = limits.timeout_ms;
  if (typeof timeout === 'number' && Number.isInteger(timeout) && timeout > maxTimeout) {
    errors.push(
      origin === 'bootstrap'
        ? {
            code: IssueCode.Limits,
            path: '/limits/timeout_ms',
            message: `limits.timeout_ms ${timeout} is over the operator maximum for bootstrapped tools (bootstrapMaxTimeoutMs ${maxTimeout})`,
            fix: `--bootstrap-max-timeout-ms ${timeout}`,
          }
        : {
            code: IssueCode.Limits,
            path: '/limits/timeout_ms',
            message: `limits.timeout_ms must be an integer from 1 to ${maxTimeout}, got ${timeout}`,
          },
    );
  } else {
    out.timeoutMs = integer('timeout_ms', 1, maxTimeout) ?? out.timeoutMs;
  }
  out.memoryMb = integer('memory_mb', MIN_MEMORY_MB, config.maxMemoryMb) ?? out.memoryMb;
  const isolation = limits.isolation;
  if (isolation === 'warm' || isolation === 'process') out.isolation = isolation;
  else if (isolation !== undefined) {
    errors.push({
      code: IssueCode.Limits,
      path: '/limits/isolation',
      message: `limits.isolation must be "warm" or "process", got ${quote(isolation)}`,
    });
  }
  const cpu = limits.cpu_percent;
  if (cpu !== undefined && !(typeof cpu === 'number' && cpu >= 1 && cpu <= 100)) {
    errors.push({
      code: IssueCode.Limits,
      path: '/limits/cpu_percent',
      message: `limits.cpu_percent must be a number from 1 to 100, got ${quote(cpu)}`,
    });
  } else if (typeof cpu === 'number' && cpu < 100) {
    out.cpuPercent = cpu;
  }
  for (const key of Object.keys(limits)) {
    if (!KNOWN_LIMITS.has(key))
      warnings.push({ code: IssueCode.Limits, path: `/limits/${key}`, message: `Unknown limit ${quote(key)} ignored` });
  }
  return out;
}

function readSecrets(secrets: unknown, errors: Issue[]): string[] {
  if (secrets === undefined || secrets === null) return [];
  if (!Array.isArray(secrets)) {
    errors.push({
      code: IssueCode.Secrets,
      path: '/required_secrets',
      message: `required_secrets must be an array of names, got ${quote(secrets)}`,
    });
    return [];
  }
  const names: string[] = [];
  secrets.forEach((secret: unknown, index) => {
    const path = `/required_secrets/${index}`;
    if (typeof secret !== 'string' || !SECRET_NAME.test(secret)) {
      errors.push({
        code: IssueCode.Secrets,
        path,
        message: `Secret name must match ${SECRET_NAME.source}, got ${quote(secret)}`,
      });
    } else if (names.includes(secret)) {
      errors.push({ code: IssueCode.Secrets, path, message: `Duplicate secret name ${quote(secret)}` });
    } else {
      names.push(secret);
    }
  });
  return names;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
