// The rules of `context.api` (pure functions): which records are the runner's own, which tags a
// tool may not write, provenance marks, and what a tool may change.
//
// Names are compared after normalisation (Unicode NFKC, lower case, whitespace and invisible
// characters removed), so `Tool.Code.v1`, ` tool.code.v1` or `tool\u200b.code.v1` are the runner's
// schemas too. The runner's namespace is every schema starting with `tool.` and every tag that is
// `tool`, or starts with `tool:`, `request:`, `claim:` or `response:` (what runner records carry and
// what clients match answers by). Provenance marks are `created-by:<who>`; a tool's is
// `created-by:tool:<name>`.

import type { BreadcrumbCreate } from '../breadcrumbs/messages.js';
import { ErrorCode, RunnerError } from '../errors.js';

const RESERVED_TAG_PREFIXES = ['tool:', 'request:', 'claim:', 'response:'];
const PROVENANCE_PREFIX = 'created-by:';
/** The create fields a tool may set; anything else in its body (id, owner_id, created_by...) is dropped. */
const CREATE_FIELDS = [
  'title',
  'context',
  'tags',
  'schema_name',
  'description',
  'semantic_version',
  'llm_hints',
  'visibility',
  'sensitivity',
  'ttl',
] as const;

/** A name as compared by the policy: NFKC, lower case, without whitespace or invisible characters. */
export function normaliseName(name: string): string {
  return name
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\s\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]/gu, '');
}

/** Whether a schema name is in the runner's `tool.*` namespace. */
export function isRunnerSchema(schema: string | null | undefined): boolean {
  return typeof schema === 'string' && normaliseName(schema).startsWith('tool.');
}

/** Whether a tag is one of the runner's reserved tags. */
export function isReservedTag(tag: string): boolean {
  const name = normaliseName(tag);
  return name === 'tool' || RESERVED_TAG_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/** Whether a record (by its schema and tags) belongs to the runner. */
export function isRunnerRecord(record: { schema_name?: string | null | undefined; tags: readonly string[] }): boolean {
  return isRunnerSchema(record.schema_name) || record.tags.some(isReservedTag);
}

const isProvenance = (tag: string): boolean => normaliseName(tag).startsWith(PROVENANCE_PREFIX);

/** The provenance mark of tool `name`. */
export function provenanceOf(tool: string): string {
  return `${PROVENANCE_PREFIX}tool:${tool}`;
}

function denied(message: string): RunnerError {
  return new RunnerError(ErrorCode.PermissionDenied, message);
}

/** Refuses a schema or tags in the runner's namespace, naming the first offending value. */
export function checkWritable(schema: string | null | undefined, tags: readonly string[] | undefined): void {
  if (isRunnerSchema(schema)) {
    throw denied(`tools may not write the runner's schema ${JSON.stringify(schema)} (tool.* records are the runner's)`);
  }
  const reserved = tags?.find(isReservedTag);
  if (reserved !== undefined) {
    throw denied(
      `tools may not write the runner's tag ${JSON.stringify(reserved)} (tool, tool:*, request:*, claim:*, response:* are reserved)`,
    );
  }
}

/** The create body a tool may send: known fields only, foreign provenance marks dropped, its own added. */
export function toolCreateBody(body: BreadcrumbCreate, tool: string): BreadcrumbCreate {
  const own = provenanceOf(tool);
  const out: Record<string, unknown> = {};
  for (const field of CREATE_FIELDS) if (body[field] !== undefined) out[field] = body[field];
  out['tags'] = [...body.tags.filter((tag) => !isProvenance(tag)), own];
  return out as BreadcrumbCreate;
}

/**
 * The tags an update may leave on a record the tool created: provenance marks are added, never
 * removed — the record's existing marks stay, foreign new ones are dropped, the tool's own is kept.
 */
export function toolUpdateTags(patchTags: readonly string[], currentTags: readonly string[], tool: string): string[] {
  const marks = currentTags.filter(isProvenance);
  const own = provenanceOf(tool);
  const tags = patchTags.filter((tag) => !isProvenance(tag));
  for (const mark of marks.includes(own) ? marks : [...marks, own]) tags.push(mark);
  return tags;
}

/** Refuses an update of a record the tool did not create (it carries no `created-by:tool:<name>`). */
export function checkUpdatable(id: string, currentTags: readonly string[], tool: string): void {
  const own = provenanceOf(tool);
  if (!currentTags.includes(own)) {
    throw denied(
      `tool "${tool}" may only update breadcrumbs it created (tagged "${own}"); breadcrumb "${id}" is not one of them`,
    );
  }
}
