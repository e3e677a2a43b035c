// The routing table: which tool runs when a request names N.
//
// Code tools come from `tool.code.v1` breadcrumbs of the workspace, each validated (screening,
// permissions, schemas) before it becomes runnable; the table follows the event stream so a tool
// created or updated after start is runnable at once, and an invalid update takes the tool out
// (the reason is logged). Host tools come only from the operator's local manifests.
//
// Routing: the valid tool.code.v1 named N; else the host tool N; else nothing (tool.not_found).
// Several valid tool.code.v1 with one name: the oldest breadcrumb wins (a later one cannot hijack
// a name), and the shadowed one is logged.
//
// Trust: any agent can write a tool.code.v1 straight into the store, so every such breadcrumb is
// validated as agent-created — except one whose name and source match a file of this runner's own
// bootstrap directory, which gets the operator's bootstrap policy.

import type { StoreClient } from '../breadcrumbs/index.js';
import { isNotFound } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, type CatalogEntry, type StoreEvent } from '../breadcrumbs/messages.js';
import type { Logger } from '../logger.js';
import type { HostTool } from '../legacy/index.js';
import type { Issue, Origin, ToolDefinition } from '../screen/index.js';

export type Route =
  | { kind: 'code'; tool: ToolDefinition; breadcrumbId: string; breadcrumbVersion: number }
  | { kind: 'host'; tool: HostTool };

export interface ValidationOutcome {
  ok: boolean;
  errors: Issue[];
  warnings: Issue[];
  tool?: ToolDefinition;
}

export interface CatalogOptions {
  client: StoreClient;
  workspace: string;
  logger: Logger;
  validate(context: unknown, origin: Origin): ValidationOutcome;
  /** True when (name, source) is one of this runner's local bootstrap tools. */
  isBootstrapTool(name: string, source: string): boolean;
  /** Host tools of the local manifests (already filtered by policy). */
  hostTools(): readonly HostTool[];
  /** Called (debounced by the caller if needed) whenever the runnable set may have changed. */
  onChange?(): void;
}

interface Record_ {
  id: string;
  version: number;
  createdAt: string;
  name?: string;
  tool?: ToolDefinition;
  errors: Issue[];
}

export interface Catalog {
  /** Full reload from the store: new, changed and deleted tools. */
  load(signal?: AbortSignal): Promise<void>;
  /** Feeds an event from the store's stream (ignores what is not a tool of this workspace). */
  handleEvent(event: StoreEvent): Promise<void>;
  /** Looks the name up in the store (closes the race between a tool's event and a request's). */
  refreshName(name: string): Promise<void>;
  resolve(name: string): Route | undefined;
  /** Runnable tools, for tool.catalog.v1 and exports. */
  entries(): CatalogEntry[];
  /** Tools that are present but not runnable, with why. */
  rejected(): Array<{ id: string; name?: string; errors: Issue[] }>;
}

/** Creates the catalog. */
export function createCatalog(options: CatalogOptions): Catalog {
  const { client, workspace, logger } = options;
  const records = new Map<string, Record_>();

  const changed = (): void => options.onChange?.();

  const fetchAndValidate = async (id: string): Promise<void> => {
    let full;
    try {
      full = await client.getBreadcrumbFull(id);
    } catch (error) {
      if (isNotFound(error)) {
        if (records.delete(id)) changed();
        return;
      }
      throw error;
    }
    if (full.schema_name !== SCHEMA.ToolCode || !full.tags.includes(workspace)) {
      if (records.delete(id)) changed();
      return;
    }
    const context = full.context;
    const name = typeof context['name'] === 'string' ? context['name'] : undefined;
    const code = context['code'] as { source?: unknown } | undefined;
    const source = typeof code?.source === 'string' ? code.source : '';
    const origin: Origin = name !== undefined && options.isBootstrapTool(name, source) ? 'bootstrap' : 'agent';
    const outcome = options.validate(context, origin);
    const record: Record_ = {
      id,
      version: full.version,
      createdAt: full.created_at ?? full.updated_at,
      ...(name !== undefined ? { name } : {}),
      ...(outcome.ok && outcome.tool ? { tool: outcome.tool } : {}),
      errors: outcome.errors,
    };
    if (name !== undefined && !full.tags.includes(TAG.tool(name))) {
      logger.warn('tool tag does not match its name', { id, name, tags: full.tags });
    }
    if (!record.tool) {
      logger.warn('tool rejected', { id, name, origin, errors: outcome.errors.map((e) => `${e.path}: ${e.message}`) });
    } else {
      logger.info('tool loaded', { id, name, version: record.tool.version, origin, warnings: outcome.warnings.length });
    }
    records.set(id, record);
    changed();
  };

  const load = async (signal?: AbortSignal): Promise<void> => {
    const items = await client.listAll({ schema_name: SCHEMA.ToolCode, tag: workspace }, signal ? { signal } : {});
    const seen = new Set<string>();
    for (const item of items) {
      seen.add(item.id);
      const known = records.get(item.id);
      if (known && known.version === item.version) continue;
      await fetchAndValidate(item.id);
    }
    let removed = false;
    for (const id of records.keys()) {
      if (!seen.has(id)) {
        records.delete(id);
        removed = true;
      }
    }
    if (removed) changed();
  };

  const handleEvent = async (event: StoreEvent): Promise<void> => {
    const id = event.breadcrumb_id;
    if (!id) return;
    if (event.type === 'breadcrumb.deleted') {
      if (records.delete(id)) changed();
      return;
    }
    if (event.type !== 'breadcrumb.updated' || event.schema_name !== SCHEMA.ToolCode) return;
    if (event.tags && !event.tags.includes(workspace)) return;
    const known = records.get(id);
    if (known && event.version !== undefined && known.version >= event.version) return;
    await fetchAndValidate(id);
  };

  const refreshName = async (name: string): Promise<void> => {
    const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolCode, tag: TAG.tool(name), limit: 50 });
    for (const item of items) {
      const known = records.get(item.id);
      if (!known || known.version < item.version) await fetchAndValidate(item.id);
    }
  };

  const codeTool = (name: string): Record_ | undefined => {
    let best: Record_ | undefined;
    for (const record of records.values()) {
      if (record.tool?.name !== name) continue;
      if (!best || record.createdAt < best.createdAt || (record.createdAt === best.createdAt && record.id < best.id)) best = record;
    }
    return best;
  };

  const resolve = (name: string): Route | undefined => {
    const code = codeTool(name);
    if (code?.tool) return { kind: 'code', tool: code.tool, breadcrumbId: code.id, breadcrumbVersion: code.version };
    const host = options.hostTools().find((tool) => tool.name === name);
    return host ? { kind: 'host', tool: host } : undefined;
  };

  const entries = (): CatalogEntry[] => {
    const out = new Map<string, CatalogEntry>();
    for (const host of options.hostTools()) {
      out.set(host.name, {
        name: host.name,
        description: host.description,
        version: host.manifestDigest.slice(0, 12),
        kind: 'host',
        inputSchema: host.inputSchema ?? { type: 'object' },
        ...(host.resultSchema ? { outputSchema: host.resultSchema } : {}),
        examples: [],
        status: 'active',
      });
    }
    const names = new Set<string>();
    for (const record of records.values()) if (record.tool) names.add(record.tool.name);
    for (const name of names) {
      const tool = codeTool(name)?.tool;
      if (!tool) continue;
      out.set(name, {
        name,
        description: tool.description,
        version: tool.version,
        kind: 'code',
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
        examples: tool.examples.map((example) => ({ description: example.description, input: example.input, output: example.output })),
        status: 'active',
      });
    }
    return [...out.values()].sort((a, b) => a.name.localeCompare(b.name));
  };

  const rejected = (): Array<{ id: string; name?: string; errors: Issue[] }> =>
    [...records.values()]
      .filter((record) => !record.tool)
      .map((record) => ({ id: record.id, ...(record.name !== undefined ? { name: record.name } : {}), errors: record.errors }));

  return { load, handleEvent, refreshName, resolve, entries, rejected };
}
