// `export --format typescript`: declarations of every tool's input and output types (from its JSON
// Schemas, `$ref`s already inlined) and of the `context` a tool's `execute(input, context)` gets.
//
// A small JSON-Schema → TypeScript emitter: type/enum/const/anyOf/oneOf/allOf/items/prefixItems/
// properties/required/additionalProperties. Anything it cannot express becomes `unknown` (never a
// narrower, wrong type). Descriptions become JSDoc with `*/` neutralised, since they are agent text.

import { isObject } from './schemas.js';
import type { Omission, ToolView } from './tool-views.js';

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function comment(text: string, indent: string): string {
  const lines = text.replace(/\*\//g, '*\\/').replace(/\r\n?/g, '\n').split('\n');
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((line) => `${indent} * ${line}`.trimEnd()).join('\n')}\n${indent} */\n`;
}

function literal(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : 'number';
  return 'unknown';
}

function union(parts: string[], joiner: ' | ' | ' & '): string {
  const unique = [...new Set(parts)];
  if (unique.length === 0) return joiner === ' | ' ? 'never' : 'unknown';
  if (unique.length === 1) return unique[0] as string;
  return `(${unique.join(joiner)})`;
}

/** The TypeScript type of a JSON Schema (`indent`: indentation of the line the type starts on). */
export function schemaToType(schema: unknown, indent = ''): string {
  if (schema === false) return 'never';
  if (!isObject(schema)) return 'unknown';
  if ('const' in schema) return literal(schema['const']);
  if (Array.isArray(schema['enum'])) return union(schema['enum'].map(literal), ' | ');
  const variants = Array.isArray(schema['anyOf'])
    ? schema['anyOf']
    : Array.isArray(schema['oneOf'])
      ? schema['oneOf']
      : undefined;
  if (variants) {
    const rest = { ...schema };
    delete rest['anyOf'];
    delete rest['oneOf'];
    const base = 'type' in rest || 'properties' in rest ? [schemaToType(rest, indent)] : [];
    const alternatives = union(
      variants.map((v) => schemaToType(v, indent)),
      ' | ',
    );
    return base.length > 0 ? union([...base, alternatives], ' & ') : alternatives;
  }
  if (Array.isArray(schema['allOf'])) {
    const rest = { ...schema };
    delete rest['allOf'];
    const parts = schema['allOf'].map((v) => schemaToType(v, indent));
    if ('type' in rest || 'properties' in rest) parts.unshift(schemaToType(rest, indent));
    return union(parts, ' & ');
  }
  const type = schema['type'];
  if (Array.isArray(type))
    return union(
      type.map((t) => schemaToType({ ...schema, type: t }, indent)),
      ' | ',
    );
  switch (type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return arrayType(schema, indent);
    case 'object':
      return objectType(schema, indent);
    case undefined:
      return 'properties' in schema || 'additionalProperties' in schema
        ? objectType(schema, indent)
        : 'items' in schema
          ? arrayType(schema, indent)
          : 'unknown';
    default:
      return 'unknown';
  }
}

function arrayType(schema: Record<string, unknown>, indent: string): string {
  const prefix = schema['prefixItems'];
  if (Array.isArray(prefix)) {
    const items = schema['items'];
    const tail = items === false ? '' : `, ...${wrap(schemaToType(items === undefined ? {} : items, indent))}[]`;
    return `[${prefix.map((p) => schemaToType(p, indent)).join(', ')}${tail}]`;
  }
  return `${wrap(schemaToType(schema['items'] ?? {}, indent))}[]`;
}

function wrap(type: string): string {
  return /^[A-Za-z0-9_$"']+$/.test(type) || type.startsWith('(') || type.startsWith('{') || type.startsWith('[')
    ? type
    : `(${type})`;
}

function objectType(schema: Record<string, unknown>, indent: string): string {
  const props = isObject(schema['properties']) ? schema['properties'] : {};
  const required = Array.isArray(schema['required'])
    ? schema['required'].filter((r): r is string => typeof r === 'string')
    : [];
  const inner = indent + '  ';
  let body = '';
  for (const [key, value] of Object.entries(props)) {
    if (isObject(value) && typeof value['description'] === 'string' && value['description'] !== '')
      body += comment(value['description'], inner);
    body += `${inner}${IDENT.test(key) ? key : JSON.stringify(key)}${required.includes(key) ? '' : '?'}: ${schemaToType(value, inner)};\n`;
  }
  const extra = schema['additionalProperties'];
  if (extra !== false) {
    // An index signature must admit every named property's type, so it is `unknown` beside them.
    const valueType =
      Object.keys(props).length > 0 || extra === undefined || extra === true ? 'unknown' : schemaToType(extra, inner);
    body += `${inner}[key: string]: ${valueType};\n`;
  }
  return body === '' ? 'Record<string, never>' : `{\n${body}${indent}}`;
}

function pascal(name: string): string {
  const out = name
    .split(/[^A-Za-z0-9]+/)
    .filter((p) => p !== '')
    .map((p) => p[0]!.toUpperCase() + p.slice(1))
    .join('');
  return out === '' ? 'Tool' : /^[0-9]/.test(out) ? `T${out}` : out;
}

const CONTEXT = `/** A breadcrumb as \`context.api\` returns it. */
export interface Breadcrumb {
  id: string;
  title: string;
  description?: string | null;
  context: Record<string, unknown>;
  tags: string[];
  schema_name: string | null;
  version: number;
  updated_at: string;
}

/** Body of \`context.api.createBreadcrumb\` (and, any subset, of \`updateBreadcrumb\`). */
export interface BreadcrumbCreate {
  title: string;
  context: Record<string, unknown>;
  tags: string[];
  schema_name?: string;
  description?: string;
  semantic_version?: string;
  llm_hints?: unknown;
  visibility?: 'Public' | 'Team' | 'Private';
  sensitivity?: 'Low' | 'Pii' | 'Secret';
  ttl?: string | null;
}

/** What a tool's \`execute(input, context)\` receives as \`context\`. */
export interface ToolContext {
  /** The tool's declared secrets (\`required_secrets\`), by name. */
  readonly secrets: Readonly<Record<string, string>>;
  /** The request being served: its id, the workspace, and the requesting agent when known. */
  readonly request: Readonly<{ id: string; workspace: string; agentId?: string }>;
  /** Store calls the runner makes for the tool; needs \`permissions.api\` ("read": get and search; "write": all four). */
  readonly api: Readonly<{
    getBreadcrumb(id: string): Promise<Breadcrumb>;
    createBreadcrumb(body: BreadcrumbCreate): Promise<{ id: string }>;
    updateBreadcrumb(id: string, version: number | undefined, patch: Partial<BreadcrumbCreate>): Promise<{ ok: true; version?: number }>;
    searchBreadcrumbs(params: { q?: string; tag?: string; schema_name?: string; limit?: number }): Promise<Breadcrumb[]>;
  }>;
  /** Writes a log line to the call's captured logs. */
  log(...args: unknown[]): void;
}
`;

/** The declarations file of the exported tools. */
export function emitTypeScript(tools: readonly ToolView[], omitted: readonly Omission[]): string {
  let out = "// Generated by `tools-runner export --format typescript` from the workspace's runnable catalog.\n\n";
  out += CONTEXT;
  for (const o of omitted) out += `\n// Not exported: ${o.reason.replace(/[\r\n\u2028\u2029]+/g, ' ')}\n`;
  const used = new Set(['Breadcrumb', 'BreadcrumbCreate', 'ToolContext', 'ToolInputs', 'ToolOutputs', 'ToolName']);
  const names: Array<{ tool: ToolView; base: string }> = [];
  for (const tool of tools) {
    let base = pascal(tool.exportName);
    for (let n = 2; used.has(`${base}Input`) || used.has(base); n++) base = `${pascal(tool.exportName)}${n}`;
    used.add(base).add(`${base}Input`).add(`${base}Output`).add(`${base}Execute`);
    names.push({ tool, base });
  }
  for (const { tool, base } of names) {
    const doc = `${tool.name}${tool.version !== '' ? ` (version ${tool.version})` : ''}${tool.description !== '' ? `: ${tool.description}` : ''}`;
    out += '\n' + comment(`Input of ${doc}`, '');
    out += `export type ${base}Input = ${schemaToType(tool.inputSchema)};\n`;
    out += comment(`Output of ${tool.name}`, '');
    out += `export type ${base}Output = ${schemaToType(tool.outputSchema ?? tool.rawOutputSchema)};\n`;
    out += comment(`The \`execute\` function of ${tool.name}`, '');
    out += `export type ${base}Execute = (input: ${base}Input, context: ToolContext) => Promise<${base}Output>;\n`;
  }
  out += '\n/** Input type of every tool, by the name a tool.request.v1 uses. */\nexport interface ToolInputs {\n';
  for (const { tool, base } of names) out += `  ${JSON.stringify(tool.name)}: ${base}Input;\n`;
  out += '}\n\n/** Output type of every tool, by name. */\nexport interface ToolOutputs {\n';
  for (const { tool, base } of names) out += `  ${JSON.stringify(tool.name)}: ${base}Output;\n`;
  out += '}\n\n/** Names of the exported tools. */\nexport type ToolName = keyof ToolInputs;\n';
  return out;
}
