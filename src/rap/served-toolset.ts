// The runner's catalog as a RAP toolset (what `/.well-known/rap-toolset` serves).
//
// Names: RAP tool names should be `[A-Za-z0-9_-]` (1-128), so every other character becomes `_`
// and the name is cut to 128 characters; two tools that land on one name
// are both left out (logged) and `reverse` maps a served name back to the catalog name for
// dispatch. Schemas: ours default to draft-07 and RAP's to 2020-12, so a schema without `$schema`
// is served with draft-07 named. Annotations follow the side-effect
// crosswalk (`sideEffectPolicy`, src/contract/contract.ts).

import { MAX_NAME_LENGTH, type RapToolset } from './toolset.js';

/** The side-effect classes of the crosswalk (src/contract/contract.ts), plus `unknown`. */
export type SideEffect =
  | 'read-only'
  | 'reversible-write'
  | 'irreversible'
  | 'administrative'
  | 'code-execution'
  | 'financial'
  | 'external-communication'
  | 'unknown';

/** RAP annotations of a side-effect class: readOnly for read-only, destructive for the irreversible kinds, none otherwise. */
export function rapAnnotations(sideEffect: SideEffect): Record<string, boolean> {
  switch (sideEffect) {
    case 'read-only':
      return { readOnly: true };
    case 'irreversible':
    case 'administrative':
    case 'code-execution':
    case 'financial':
    case 'external-communication':
      return { destructive: true };
    default:
      return {};
  }
}

/** The side-effect class a RAP tool's annotations imply (the reverse direction, for imported tools). */
export function sideEffectOf(annotations: Record<string, unknown> | undefined): SideEffect {
  if (annotations?.['destructive'] === true) return 'irreversible';
  if (annotations?.['readOnly'] === true) return 'read-only';
  return 'unknown';
}

/** A catalog tool offered to RAP runtimes. */
export interface ServableTool {
  name: string;
  description: string;
  inputSchema: unknown;
  sideEffect: SideEffect;
}

/** The served toolset, the served-name -> catalog-name map, and the names left out. */
export interface ServedToolset {
  toolset: RapToolset;
  reverse: Map<string, string>;
  dropped: Array<{ served: string; names: string[] }>;
}

const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';

/** `mail.send` -> `mail_send`, capped at 128 characters. */
export function rapToolName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/gu, '_').slice(0, MAX_NAME_LENGTH);
}

function servedSchema(schema: unknown): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return { $schema: DRAFT_07, type: 'object', additionalProperties: false };
  const record = schema as Record<string, unknown>;
  return record['$schema'] === undefined ? { $schema: DRAFT_07, ...record } : record;
}

/** Builds the toolset served at `endpoint` from the catalog's tools. */
export function buildServedToolset(options: { name: string; description: string; endpoint: string; tools: readonly ServableTool[] }): ServedToolset {
  const byServed = new Map<string, ServableTool[]>();
  for (const tool of options.tools) {
    const served = rapToolName(tool.name);
    if (served === '') continue;
    byServed.set(served, [...(byServed.get(served) ?? []), tool]);
  }
  const reverse = new Map<string, string>();
  const dropped: ServedToolset['dropped'] = [];
  const tools: RapToolset['tools'] = [];
  for (const [served, group] of [...byServed.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const [tool] = group;
    if (!tool || group.length > 1) {
      dropped.push({ served, names: group.map((t) => t.name) });
      continue;
    }
    reverse.set(served, tool.name);
    tools.push({
      name: served,
      description: tool.description.trim() === '' ? `Tool ${tool.name}` : tool.description,
      inputSchema: servedSchema(tool.inputSchema),
      annotations: rapAnnotations(tool.sideEffect),
    });
  }
  return { toolset: { name: options.name, description: options.description, endpoint: options.endpoint, tools }, reverse, dropped };
}
