// The runner's catalog as a RAP toolset (what `/.well-known/rap-toolset` serves).
//
// Names: RAP tool names should be `[A-Za-z0-9_-]` (1-128), so every other character becomes `_`
// and the name is cut to 128 characters; two tools that land on one name
// are both left out (logged) and `reverse` maps a served name back to the catalog name for
// dispatch. Schemas: ours default to draft-07 and RAP's to 2020-12, so a schema without `$schema`
// is served with draft-07 named. Annotations come from each tool's contract by the side-effect
// crosswalk (`rapAnnotationsOf`, src/contract/contract.ts): readOnly / destructive, idempotent when the contract says so.

import { rapAnnotationsOf, type ToolContract } from '../contract/contract.js';
import { MAX_NAME_LENGTH, type RapToolset } from './toolset.js';

/** A catalog tool offered to RAP runtimes; its annotations come from its contract (no side effect = unknown: none). */
export interface ServableTool {
  name: string;
  description: string;
  inputSchema: unknown;
  contract: ToolContract;
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
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    return { $schema: DRAFT_07, type: 'object', additionalProperties: false };
  const record = schema as Record<string, unknown>;
  return record['$schema'] === undefined ? { $schema: DRAFT_07, ...record } : record;
}

/** Builds the toolset served at `endpoint` from the catalog's tools. */
export function buildServedToolset(options: {
  name: string;
  description: string;
  endpoint: string;
  tools: readonly ServableTool[];
}): ServedToolset {
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
      annotations: rapAnnotationsOf(tool.contract),
    });
  }
  return {
    toolset: { name: options.name, description: options.description, endpoint: options.endpoint, tools },
    reverse,
    dropped,
  };
}
