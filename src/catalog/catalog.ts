// The routing table: which tool runs when a request names N, and who may change the tool named N.
//
// Sources: the operator's bootstrap files (pinned: the runner keeps each file's validated definition
// and runs only that), the operator's host tools (local manifests), and the `tool.code.v1` records of
// the workspace, which follow the event stream so a tool deployed after start is runnable at once.
//
// Trust (README "Trust model"): every writer of the store is hostile. A record is a candidate only
// when its trust (deployment.ts) is `stamped` (deployed by this runner: create flow or bootstrap) or
// `direct` (written straight into the store and never changed since) and it passes validation
// (operator policy for operator-stamped records, agent policy otherwise). Reserved names: a pinned
// bootstrap tool's or a host tool's name belongs to the operator; no record of that name runs.
//
// Ownership: each name's owner is remembered from the definition that last ran under it, also after
// that definition is deleted or tampered with, for as long as this process lives. Only definitions
// of the remembered owner are candidates; among them the oldest record wins. With no remembered
// owner (a fresh start), the oldest candidate wins and its owner becomes the name's owner.
//
// Routing: pinned operator tool N; else host tool N; else the selected candidate; else nothing
// (tool.not_found, with the reason why each record of that name is not runnable).

import type { StoreClient } from '../breadcrumbs/index.js';
import { isNotFound } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, type CatalogEntry, type StoreEvent } from '../breadcrumbs/messages.js';
import type { Logger } from '../logger.js';
import type { HostTool } from '../legacy/index.js';
import type { Issue, Origin, ToolDefinition } from '../screen/index.js';
import { definitionDigest, OPERATOR, type Stamper } from './deployment.js';

export type Route =
  | { kind: 'code'; tool: ToolDefinition; breadcrumbId: string; breadcrumbVersion: number; owner: string }
  | { kind: 'host'; tool: HostTool };

export interface ValidationOutcome {
  ok: boolean;
  errors: Issue[];
  warnings: Issue[];
  tool?: ToolDefinition;
}

/** A tool of the operator's bootstrap files, validated with the operator policy when it was loaded. */
export interface OperatorTool {
  tool: ToolDefinition;
  /** The file's context (what bootstrap publishes, without the stamp). */
  context: Record<string, unknown>;
  file: string;
  /** Id of the store record bootstrap published it as (absent when publishing failed). */
  id?: string;
}

/** Who may change the tool named N (the create flow asks before it writes). */
export type Ownership =
  | { kind: 'reserved'; by: 'bootstrap' | 'host' }
  | { kind: 'owned'; owner: string; version: string; /** The owner's record, when it still exists. */ id?: string }
  | { kind: 'free' };

export interface CatalogOptions {
  client: StoreClient;
  workspace: string;
  logger: Logger;
  stamper: Stamper;
  validate(context: unknown, origin: Origin): ValidationOutcome;
  /** Pinned bootstrap tools by name. */
  operatorTools(): ReadonlyMap<string, OperatorTool>;
  /** Host tools of the local manifests (already filtered by policy). */
  hostTools(): readonly HostTool[];
  /** Called (debounced by the caller if needed) whenever the runnable set may have changed. */
  onChange?(): void;
  /** The store's copy of a pinned tool is missing or differs from the file (re-publish it). */
  onOperatorDrift?(name: string): void;
}

/** What the catalog knows of one tool.code.v1 breadcrumb. */
interface CodeRecord {
  id: string;
  version: number;
  createdAt: string;
  name?: string;
  /** Runnable candidate (trusted and valid). */
  tool?: ToolDefinition;
  owner?: string;
  /** The store's copy of a pinned operator tool (never routed; not a rejection either). */
  publication?: boolean;
  /** The pinned operator tools the record was judged against (a change re-judges it). */
  pins: string;
  errors: Issue[];
}

export interface RejectedTool {
  id: string;
  name?: string;
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
  /** Who may change the tool named `name`. */
  ownership(name: string): Ownership;
  /** Runnable tools, for tool.catalog.v1 and exports. */
  entries(): CatalogEntry[];
  /** Records that are present but not runnable, with why (the most telling reason first per name). */
  rejected(): RejectedTool[];
}

const issue = (code: string, path: string, message: string): Issue => ({ code, path, message });
const older = (a: CodeRecord, b: CodeRecord): boolean => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);

/** Creates the catalog. */
export function createCatalog(options: CatalogOptions): Catalog {
  const { client, workspace, logger, stamper } = options;
  const records = new Map<string, CodeRecord>();
  /** name -> the owner and version of the definition that last ran under it (kept after deletion). */
  const owners = new Map<string, { owner: string; id: string; version: string }>();
  /** name -> selected record; id -> why a valid record is not selected. */
  let selected = new Map<string, CodeRecord>();
  let shadowed = new Map<string, Issue>();
  let loading = 0;

  const isHostName = (name: string): boolean => options.hostTools().some((tool) => tool.name === name);
  const pinsKey = (): string => [...options.operatorTools()].map(([name, pin]) => `${name}=${definitionDigest(pin.context)}`).sort().join(',');

  const reindex = (): void => {
    if (loading > 0) return;
    const byName = new Map<string, CodeRecord[]>();
    for (const record of records.values()) {
      if (!record.tool || !record.owner) continue;
      byName.set(record.tool.name, [...(byName.get(record.tool.name) ?? []), record]);
    }
    const nextSelected = new Map<string, CodeRecord>();
    const nextShadowed = new Map<string, Issue>();
    for (const [name, candidates] of byName) {
      const remembered = owners.get(name);
      let best: CodeRecord | undefined;
      for (const record of candidates) {
        if (remembered && record.owner !== remembered.owner) continue;
        if (!best || older(record, best)) best = record;
      }
      if (best) {
        nextSelected.set(name, best);
        owners.set(name, { owner: best.owner as string, id: best.id, version: (best.tool as ToolDefinition).version });
      }
      const owner = owners.get(name)?.owner;
      for (const record of candidates) {
        if (record === best) continue;
        nextShadowed.set(
          record.id,
          record.owner !== owner
            ? issue('trust.owner', '/name', `the name "${name}" belongs to ${owner}; this definition, by ${record.owner}, is not runnable`)
            : issue('trust.shadowed', '/name', `an older definition of "${name}" (${best?.id}) by the same owner wins`),
        );
      }
    }
    for (const [name, record] of selected) {
      if (nextSelected.get(name) !== record) logger.info('tool route changed', { name, from: record.id, to: nextSelected.get(name)?.id });
    }
    selected = nextSelected;
    shadowed = nextShadowed;
    for (const [name] of options.operatorTools()) {
      if (![...records.values()].some((record) => record.publication && record.name === name)) options.onOperatorDrift?.(name);
    }
    options.onChange?.();
  };

  const fetchAndValidate = async (id: string): Promise<void> => {
    let full;
    try {
      full = await client.getBreadcrumbFull(id);
    } catch (error) {
      if (isNotFound(error)) {
        if (records.delete(id)) reindex();
        return;
      }
      throw error;
    }
    if (full.schema_name !== SCHEMA.ToolCode || !full.tags.includes(workspace)) {
      if (records.delete(id)) reindex();
      return;
    }
    const context = full.context;
    const name = typeof context['name'] === 'string' ? context['name'] : undefined;
    const record: CodeRecord = { id, version: full.version, createdAt: full.created_at ?? full.updated_at, ...(name !== undefined ? { name } : {}), pins: pinsKey(), errors: [] };
    const trust = stamper.assess(full, workspace);
    const pinned = name !== undefined ? options.operatorTools().get(name) : undefined;
    if (pinned) {
      if (trust.kind === 'stamped' && trust.owner === OPERATOR && definitionDigest(context) === definitionDigest(pinned.context)) {
        record.publication = true;
      } else {
        record.errors = [issue('trust.reserved', '/name', `the name "${name}" is reserved by the operator's bootstrap file; the runner runs only that file's definition, not this record`)];
      }
    } else if (name !== undefined && isHostName(name)) {
      record.errors = [issue('trust.reserved', '/name', `the name "${name}" is reserved by a host tool of the operator's manifests; no tool.code.v1 of that name runs`)];
    } else if (trust.kind === 'untrusted') {
      record.errors = [issue('trust.untrusted', '/deployment', trust.reason)];
    } else {
      const origin: Origin = trust.kind === 'stamped' && trust.owner === OPERATOR ? 'bootstrap' : 'agent';
      const outcome = options.validate(context, origin);
      if (outcome.ok && outcome.tool) {
        record.tool = outcome.tool;
        record.owner = trust.owner;
      } else {
        record.errors = outcome.errors;
      }
    }
    if (name !== undefined && !full.tags.includes(TAG.tool(name))) logger.warn('tool tag does not match its name', { id, name, tags: full.tags });
    if (record.tool) logger.info('tool loaded', { id, name, version: record.tool.version, owner: record.owner, trust: trust.kind });
    else if (!record.publication) logger.warn('tool rejected', { id, name, errors: record.errors.map((e) => `${e.path}: ${e.message}`) });
    records.set(id, record);
    reindex();
  };

  const load = async (signal?: AbortSignal): Promise<void> => {
    loading++;
    try {
      const items = await client.listAll({ schema_name: SCHEMA.ToolCode, tag: workspace }, signal ? { signal } : {});
      const seen = new Set<string>();
      const pins = pinsKey();
      for (const item of items) {
        seen.add(item.id);
        const known = records.get(item.id);
        if (known && known.version === item.version && known.pins === pins) continue;
        await fetchAndValidate(item.id);
      }
      for (const id of records.keys()) if (!seen.has(id)) records.delete(id);
    } finally {
      loading--;
      reindex();
    }
  };

  const handleEvent = async (event: StoreEvent): Promise<void> => {
    const id = event.breadcrumb_id;
    if (!id) return;
    if (event.type === 'breadcrumb.deleted') {
      if (records.delete(id)) reindex();
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

  const resolve = (name: string): Route | undefined => {
    const pinned = options.operatorTools().get(name);
    if (pinned) return { kind: 'code', tool: pinned.tool, breadcrumbId: pinned.id ?? '', breadcrumbVersion: 0, owner: OPERATOR };
    const host = options.hostTools().find((tool) => tool.name === name);
    if (host) return { kind: 'host', tool: host };
    const code = selected.get(name);
    return code?.tool ? { kind: 'code', tool: code.tool, breadcrumbId: code.id, breadcrumbVersion: code.version, owner: code.owner as string } : undefined;
  };

  const ownership = (name: string): Ownership => {
    if (options.operatorTools().has(name)) return { kind: 'reserved', by: 'bootstrap' };
    if (isHostName(name)) return { kind: 'reserved', by: 'host' };
    const remembered = owners.get(name);
    if (!remembered) return { kind: 'free' };
    return { kind: 'owned', owner: remembered.owner, version: remembered.version, ...(records.has(remembered.id) ? { id: remembered.id } : {}) };
  };

  const codeEntry = (tool: ToolDefinition): CatalogEntry => ({
    name: tool.name,
    description: tool.description,
    version: tool.version,
    kind: 'code',
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema,
    examples: tool.examples.map((example) => ({ description: example.description, input: example.input, output: example.output })),
    status: 'active',
  });

  const entries = (): CatalogEntry[] => {
    const out = new Map<string, CatalogEntry>();
    for (const [name, record] of selected) if (record.tool) out.set(name, codeEntry(record.tool));
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
    for (const [name, pinned] of options.operatorTools()) out.set(name, codeEntry(pinned.tool));
    return [...out.values()].sort((a, b) => a.name.localeCompare(b.name));
  };

  const rejected = (): RejectedTool[] => {
    const out: RejectedTool[] = [];
    for (const record of records.values()) {
      const reason = shadowed.get(record.id);
      const errors = reason ? [reason] : record.errors;
      if (errors.length === 0 || record.publication) continue;
      out.push({ id: record.id, ...(record.name !== undefined ? { name: record.name } : {}), errors });
    }
    // The owner's own record first (e.g. the tampered one), then newest first.
    const rank = (item: RejectedTool): string => `${item.name !== undefined && owners.get(item.name)?.id === item.id ? 1 : 0}${records.get(item.id)?.createdAt ?? ''}`;
    return out.sort((a, b) => (rank(a) < rank(b) ? 1 : rank(a) > rank(b) ? -1 : 0));
  };

  return { load, handleEvent, refreshName, resolve, ownership, entries, rejected };
}
