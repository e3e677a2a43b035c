// Typed shapes (zod) of the store's own API, as RCRT defines it: breadcrumb bodies and views, secret
// listings and event-stream frames. Structural and loose, like every shape of ./messages.ts, which
// re-exports them (the shapes of the runner's own breadcrumbs live there).

import { z } from 'zod';

export const Visibility = z.enum(['Public', 'Team', 'Private']);
export const Sensitivity = z.enum(['Low', 'Pii', 'Secret']);

/** Body of `POST /breadcrumbs`. */
export const BreadcrumbCreate = z.looseObject({
  title: z.string(),
  context: z.record(z.string(), z.unknown()),
  tags: z.array(z.string()),
  schema_name: z.string().optional(),
  description: z.string().optional(),
  semantic_version: z.string().optional(),
  llm_hints: z.unknown().optional(),
  visibility: Visibility.optional(),
  sensitivity: Sensitivity.optional(),
  ttl: z.string().nullable().optional(),
});
export type BreadcrumbCreate = z.infer<typeof BreadcrumbCreate>;

/** Body of `PATCH /breadcrumbs/:id`: any subset of the create fields; `context` replaces. */
export const BreadcrumbPatch = BreadcrumbCreate.partial();
export type BreadcrumbPatch = z.infer<typeof BreadcrumbPatch>;

/** `GET /breadcrumbs/:id/full`. */
export const BreadcrumbFull = z.looseObject({
  id: z.string(),
  owner_id: z.string().optional(),
  title: z.string(),
  description: z.string().nullable().optional(),
  semantic_version: z.string().nullable().optional(),
  context: z.record(z.string(), z.unknown()),
  tags: z.array(z.string()),
  schema_name: z.string().nullable().optional(),
  llm_hints: z.unknown().optional(),
  visibility: z.string().optional(),
  sensitivity: z.string().optional(),
  version: z.number().int(),
  checksum: z.string().optional(),
  ttl: z.string().nullable().optional(),
  created_at: z.string().optional(),
  updated_at: z.string(),
  created_by: z.string().nullable().optional(),
  updated_by: z.string().nullable().optional(),
  size_bytes: z.number().optional(),
});
export type BreadcrumbFull = z.infer<typeof BreadcrumbFull>;

/** An item of `GET /breadcrumbs` (context only with `include_context=true`). */
export const BreadcrumbListItem = z.looseObject({
  id: z.string(),
  title: z.string(),
  tags: z.array(z.string()),
  schema_name: z.string().nullable().optional(),
  version: z.number().int(),
  updated_at: z.string(),
  context: z.record(z.string(), z.unknown()).optional(),
});
export type BreadcrumbListItem = z.infer<typeof BreadcrumbListItem>;

/** `GET /breadcrumbs/:id`: the context view (upstream may transform `context` by `llm_hints`; read `/full` for the raw one). */
export const BreadcrumbContextView = z.looseObject({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable().optional(),
  semantic_version: z.string().nullable().optional(),
  context: z.record(z.string(), z.unknown()),
  tags: z.array(z.string()),
  schema_name: z.string().nullable().optional(),
  llm_hints: z.unknown().optional(),
  version: z.number().int(),
  updated_at: z.string(),
});
export type BreadcrumbContextView = z.infer<typeof BreadcrumbContextView>;

/** An entry of `GET /breadcrumbs/:id/history` (newest first). */
export const BreadcrumbHistoryEntry = z.looseObject({
  version: z.number().int(),
  context: z.record(z.string(), z.unknown()),
  updated_at: z.string(),
  updated_by: z.string().nullable().optional(),
});
export type BreadcrumbHistoryEntry = z.infer<typeof BreadcrumbHistoryEntry>;

/** A secret as listed by `GET /secrets` (never its value). */
export const SecretInfo = z.looseObject({
  id: z.string(),
  name: z.string(),
  scope_type: z.string(),
  scope_id: z.string().nullable().optional(),
  created_at: z.string().optional(),
});
export type SecretInfo = z.infer<typeof SecretInfo>;

/** `type`s of `/events/stream` frames. `breadcrumb.deleted` and `stream.gap` are embedded-store extensions. */
export const EVENT = {
  Updated: 'breadcrumb.updated',
  /** Ours: a breadcrumb was deleted (or expired: `reason: "expired"`). */
  Deleted: 'breadcrumb.deleted',
  Ping: 'ping',
  /** Ours: events were missed (resume point older than retention); rescan. */
  Gap: 'stream.gap',
} as const;

/** A frame of `GET /events/stream`. Unknown `type`s must be ignored by consumers. */
export const StoreEvent = z.looseObject({
  type: z.string(),
  breadcrumb_id: z.string().optional(),
  owner_id: z.string().optional(),
  version: z.number().int().optional(),
  tags: z.array(z.string()).optional(),
  schema_name: z.string().nullable().optional(),
  updated_at: z.string().optional(),
  context: z.record(z.string(), z.unknown()).optional(),
  ts: z.union([z.string(), z.number()]).optional(),
});
export type StoreEvent = z.infer<typeof StoreEvent>;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const optional = (value: unknown, check: (v: unknown) => boolean): boolean => value === undefined || check(value);
const isString = (value: unknown): boolean => typeof value === 'string';

/**
 * `StoreEvent.safeParse` of a value fresh from `JSON.parse`, without zod: the runner checks every
 * event of the stream (two or more per call) and zod's parse copied each frame and its context. The
 * same checks (tested against the zod schema); the value itself is returned, not a copy — it is the
 * caller's own, just parsed from JSON text.
 */
export function parseStoreEvent(
  value: unknown,
): { success: true; data: StoreEvent } | { success: false; message: string } {
  const fail = (field: string, expected: string) => ({
    success: false as const,
    message: `${field}: expected ${expected}`,
  });
  if (!isRecord(value)) return fail('(root)', 'an object');
  if (typeof value.type !== 'string') return fail('type', 'a string');
  if (!optional(value.breadcrumb_id, isString)) return fail('breadcrumb_id', 'a string');
  if (!optional(value.owner_id, isString)) return fail('owner_id', 'a string');
  if (!optional(value.version, Number.isSafeInteger)) return fail('version', 'an integer');
  if (!optional(value.tags, (tags) => Array.isArray(tags) && tags.every(isString)))
    return fail('tags', 'an array of strings');
  if (!optional(value.schema_name, (name) => name === null || typeof name === 'string'))
    return fail('schema_name', 'a string or null');
  if (!optional(value.updated_at, isString)) return fail('updated_at', 'a string');
  if (!optional(value.context, (context) => isRecord(context) && Object.getPrototypeOf(context) === Object.prototype))
    return fail('context', 'an object');
  if (!optional(value.ts, (ts) => typeof ts === 'string' || (typeof ts === 'number' && Number.isFinite(ts))))
    return fail('ts', 'a string or a number');
  return { success: true, data: value as StoreEvent };
}
