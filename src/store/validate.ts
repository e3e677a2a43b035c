// Validation of breadcrumb create/patch bodies and list/search query strings. Every failure is a
// 400 naming the field and what was wrong with it; unknown body fields are ignored (like upstream).

import { describe, httpErrors } from './http-util.js';

/** A validated create body with store defaults applied. */
export interface CreateFields {
  title: string;
  context: Record<string, unknown>;
  tags: string[];
  schema_name: string | null;
  description: string | null;
  semantic_version: string | null;
  llm_hints: unknown;
  visibility: string;
  sensitivity: string;
  ttl: string | null;
  expiresMs: number | null;
  /** Our extension: a caller-supplied embedding (upstream computes its own and ignores this field). */
  embedding?: number[] | null;
}

/** A validated patch body: only the fields that were present. */
export type PatchFields = Partial<CreateFields>;

/** Deepest nesting a stored JSON value (context, llm_hints) may have; keeps every later JSON.stringify safe. */
export const MAX_JSON_DEPTH = 256;

/** Most dimensions an embedding (stored or `qvec`) may have. */
export const MAX_EMBEDDING_DIM = 4096;

/** Most tags one breadcrumb may carry (each is a row of the tags index). */
export const MAX_TAGS = 1000;

const VISIBILITY = ['Public', 'Team', 'Private'];
const SENSITIVITY = ['Low', 'Pii', 'Secret'];
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

// Iterative, so hostile nesting cannot overflow the stack here (JSON.parse accepts it; stringify would not).
function tooDeep(value: unknown): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (node === null || typeof node !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

function checkDepth(field: string, value: unknown): void {
  if (tooDeep(value)) throw httpErrors.invalidBody(`${field} is nested deeper than ${MAX_JSON_DEPTH} levels`);
}

function optionalString(body: Record<string, unknown>, field: string): string | null {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string')
    throw httpErrors.invalidBody(`${field} must be a string or null, got ${describe(value)}`);
  return value;
}

function oneOf(body: Record<string, unknown>, field: string, allowed: string[], fallback: string): string {
  const value = body[field];
  if (value === undefined || value === null) return fallback;
  const match = typeof value === 'string' ? allowed.find((a) => a.toLowerCase() === value.toLowerCase()) : undefined;
  if (match === undefined)
    throw httpErrors.invalidBody(`${field} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  return match;
}

// Upstream maps only known visibility words and silently keeps its default for anything else;
// visibility guards nothing in this store, so an unknown value is ignored the same way (undefined).
function visibilityOf(body: Record<string, unknown>): string | undefined {
  const value = body.visibility;
  if (typeof value !== 'string') return undefined;
  return VISIBILITY.find((a) => a.toLowerCase() === value.toLowerCase());
}

function embeddingOf(body: Record<string, unknown>): number[] | null | undefined {
  const value = body.embedding;
  if (value === undefined || value === null) return value;
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > MAX_EMBEDDING_DIM ||
    !value.every((n) => typeof n === 'number' && Number.isFinite(n))
  ) {
    throw httpErrors.invalidBody(
      `embedding must be an array of 1 to ${MAX_EMBEDDING_DIM} finite numbers, got ${Array.isArray(value) ? `an array of ${value.length}` : describe(value)}`,
    );
  }
  return value as number[];
}

function ttlOf(body: Record<string, unknown>): { ttl: string | null; expiresMs: number | null } {
  const value = body.ttl;
  if (value === undefined || value === null) return { ttl: null, expiresMs: null };
  const ms = typeof value === 'string' && RFC3339.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms))
    throw httpErrors.invalidBody(`ttl must be an RFC 3339 timestamp or null, got ${JSON.stringify(value)}`);
  return { ttl: new Date(ms).toISOString(), expiresMs: ms };
}

function fieldOf(body: Record<string, unknown>, field: keyof CreateFields): unknown {
  switch (field) {
    case 'title':
      if (typeof body.title !== 'string')
        throw httpErrors.invalidBody(`title must be a string, got ${describe(body.title)}`);
      return body.title;
    case 'context':
      if (!isPlainObject(body.context))
        throw httpErrors.invalidBody(`context must be a JSON object, got ${describe(body.context)}`);
      checkDepth('context', body.context);
      return body.context;
    case 'tags': {
      const tags = body.tags;
      if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string')) {
        throw httpErrors.invalidBody(
          `tags must be an array of strings, got ${describe(tags)}${Array.isArray(tags) ? ' with a non-string element' : ''}`,
        );
      }
      if (tags.length > MAX_TAGS)
        throw httpErrors.invalidBody(`tags may hold at most ${MAX_TAGS} entries, got ${tags.length}`);
      return tags;
    }
    case 'visibility':
      return visibilityOf(body);
    case 'sensitivity':
      return oneOf(body, 'sensitivity', SENSITIVITY, 'Low');
    case 'llm_hints':
      checkDepth('llm_hints', body.llm_hints);
      return body.llm_hints ?? null;
    default:
      return optionalString(body, field);
  }
}

const SIMPLE_FIELDS = [
  'title',
  'context',
  'tags',
  'schema_name',
  'description',
  'semantic_version',
  'llm_hints',
  'visibility',
  'sensitivity',
] as const;

/** Validates a `POST /breadcrumbs` body. */
export function validateCreate(body: Record<string, unknown>): CreateFields {
  // One object literal, its keys always in this order (the fields checked in SIMPLE_FIELDS' order, then
  // the embedding, then the ttl): every create gets one hidden class at once, where a loop of keyed
  // stores and spreads took V8's slow property-definition path on each request and answer.
  const title = fieldOf(body, 'title') as string;
  const context = fieldOf(body, 'context') as Record<string, unknown>;
  const tags = fieldOf(body, 'tags') as string[];
  const schemaName = fieldOf(body, 'schema_name') as string | null;
  const description = fieldOf(body, 'description') as string | null;
  const semanticVersion = fieldOf(body, 'semantic_version') as string | null;
  const llmHints = fieldOf(body, 'llm_hints');
  const visibility = (fieldOf(body, 'visibility') as string | undefined) ?? 'Team';
  const sensitivity = fieldOf(body, 'sensitivity') as string;
  const embedding = embeddingOf(body);
  const { ttl, expiresMs } = ttlOf(body);
  const fields: CreateFields = {
    title,
    context,
    tags,
    schema_name: schemaName,
    description,
    semantic_version: semanticVersion,
    llm_hints: llmHints,
    visibility,
    sensitivity,
    ttl,
    expiresMs,
  };
  if (embedding) fields.embedding = embedding;
  return fields;
}

/** Validates a `PATCH /breadcrumbs/:id` body: any subset of the create fields. */
export function validatePatch(body: Record<string, unknown>): PatchFields {
  const out: Record<string, unknown> = {};
  for (const field of SIMPLE_FIELDS) {
    if (body[field] === undefined) continue;
    if (body[field] === null && (field === 'title' || field === 'context' || field === 'tags')) {
      throw httpErrors.invalidBody(`${field} cannot be null`);
    }
    const value = fieldOf(body, field);
    if (value !== undefined) out[field] = value;
  }
  if (body.ttl !== undefined) Object.assign(out, ttlOf(body));
  if (body.embedding !== undefined) out.embedding = embeddingOf(body);
  return out as PatchFields;
}

/** Parses `If-Match: <version>` (bare or quoted); undefined when absent. */
export function parseIfMatch(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const raw = Array.isArray(header) ? header.join(',') : header;
  const match = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(raw);
  if (!match) throw httpErrors.invalidBody(`If-Match must be a version number, got ${JSON.stringify(raw)}`);
  return Number(match[1]);
}

/** Reads one optional single-valued query parameter; a repeated one is a 400 (like upstream's `tag`). */
export function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1)
    throw httpErrors.invalidQuery(`query parameter "${name}" may be given only once, got ${values.length}`);
  return values[0];
}

/** An optional boolean query parameter (`true/false/1/0`). */
export function boolParam(query: URLSearchParams, name: string): boolean {
  const raw = single(query, name);
  if (raw === undefined || raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw httpErrors.invalidQuery(`query parameter "${name}" must be true or false, got ${JSON.stringify(raw)}`);
}

/**
 * An optional integer query parameter clamped up to `min`, the way upstream treats `limit`
 * (`max(1)`), `offset` (`max(0)`) and `nn` (`max(1)`): any integer is accepted, only a
 * non-integer is a 400. Values beyond the safe-integer range saturate.
 */
export function clampedInt(query: URLSearchParams, name: string, min: number): number | undefined {
  const raw = single(query, name);
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (!/^[+-]?\d+$/.test(text))
    throw httpErrors.invalidQuery(`query parameter "${name}" must be an integer, got ${JSON.stringify(raw)}`);
  const value = Number(text);
  return Math.max(min, Math.min(Number.MAX_SAFE_INTEGER, value));
}
