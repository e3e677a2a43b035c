// The routing table: which tool runs when a request names N, and who may change the tool named N.
//
// Sources: the operator's bootstrap files (pinned: the runner keeps each file's validated definition
// and runs only that), the operator's host tools (local manifests), and the `tool.code.v1` records of
// the workspace, which follow the event stream so a tool deployed after start is runnable at once.
//
// Trust (docs/security.md "Trust model"): every writer of the store is hostile. A record is a candidate only
// when its trust (deployment.ts) is `stamped` (deployed by this runner: create flow or bootstrap) or
// `direct` (written straight into the store and never changed since) and it passes validation
// (operator policy for operator-stamped records, agent policy otherwise). Reserved names: a pinned
// bootstrap tool's or a host tool's name belongs to the operator; no record of that name runs, nor one
// whose exported MCP/RAP name is an operator tool's (exported-names.ts; `trust.reserved`, logged once).
//
// Ownership: each name's owner is remembered from the definitions that last ran under it, also after
// they are deleted or tampered with, for as long as this process lives. Only definitions of the
// remembered owner are candidates (another writer's are `trust.owner` rejected: only the owner
// publishes versions). With no remembered owner (a fresh start), the owner of the oldest candidate
// becomes the name's owner.
//
// Versions: the owner's candidates are grouped by semantic version (build metadata ignored); per
// version the oldest record wins (a same-version duplicate is `trust.shadowed`), so several versions
// of one name are runnable at once. Pinned operator tools and host tools have one version each.
//
// Routing: pinned operator tool N; else host tool N; else one of N's selected versions, chosen by the
// request's `context.version` (exact or range; default the highest non-deprecated; versions.ts);
// else nothing (tool.not_found, with the reason why each record of that name is not runnable). A
// deprecated version routes with a warning; a removed one (past `removal_at`) does not route.

import type { StoreClient } from '../breadcrumbs/index.js';
import { isNotFound } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, type CatalogEntry } from '../breadcrumbs/messages.js';
import type { Logger } from '../logger.js';
import type { HostTool } from '../host-tools/index.js';
import { ErrorCode } from '../errors.js';
import type { Issue, Origin, ToolDefinition } from '../screen/index.js';
import { definitionDigest, OPERATOR, type Stamper, type Trust } from './deployment.js';
import { codeEntry, hostEntry, hostVersion } from './entries.js';
import { exportCollision, operatorExports as exportHolders, type ExportHolders } from './exported-names.js';
import { judgeRecord } from './judge-record.js';
import { selectVersions, versionOf, type CodeRecord, type Owners } from './selection.js';
import {
  badSpecMessage,
  chooseVersion,
  compareVersionsDesc,
  deprecationWarning,
  isVersionSpec,
  removedMessage,
  versionStatus,
  type VersionCandidate,
} from './versions.js';

/** What runs a request: `version` is the chosen version; `warnings` (deprecation) go to `metadata.warnings`. */
export type Route =
  | {
      kind: 'code';
      tool: ToolDefinition;
      breadcrumbId: string;
      breadcrumbVersion: number;
      owner: string;
      version: string;
      warnings?: string[];
    }
  | { kind: 'host'; tool: HostTool; version: string; warnings?: string[] };

/** A name's route for a request, why the request cannot have one, or `unknown` (no runnable tool of that name). */
export type Lookup =
  | { kind: 'route'; route: Route }
  | { kind: 'refused'; code: ErrorCode; message: string }
  | { kind: 'unknown' };

/** A tool.code.v1 change the event filter (src/request/events.ts) passes on: one of this workspace, or any deletion. */
export type CatalogChange = { kind: 'changed'; id: string; version?: number } | { kind: 'deleted'; id: string };

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
  | {
      kind: 'reserved';
      by: 'bootstrap' | 'host';
      /** The operator tool whose exported (MCP/RAP) name this one would take. */ collidesWith?: string;
    }
  | {
      kind: 'owned';
      owner: string;
      /** The highest version the owner published (and `id`, its record, when it still exists). */
      version: string;
      id?: string;
      /** Every version that ran under the name, newest first; `id` when its record still exists (maybe tampered with). */
      versions: Array<{ version: string; id?: string }>;
    }
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
  /** The clock deprecation dates are compared with (tests); Date.now by default. */
  now?(): number;
}

export interface RejectedTool {
  id: string;
  name?: string;
  errors: Issue[];
}

export interface Catalog {
  /** Full reload from the store: new, changed and deleted tools. */
  load(signal?: AbortSignal): Promise<void>;
  /** Applies a tool.code.v1 change of the workspace (or a deletion) the event stream reported. */
  applyChange(change: CatalogChange): Promise<void>;
  /** Looks the name up in the store (closes the race between a tool's event and a request's). */
  refreshName(name: string): Promise<void>;
  /** The route of `name` for a request's `context.version` (exact or range; absent = the default version). */
  lookup(name: string, versionSpec?: string): Lookup;
  /** `lookup` when it finds a route, else undefined. */
  resolve(name: string, versionSpec?: string): Route | undefined;
  /** Who may change the tool named `name`. */
  ownership(name: string): Ownership;
  /** Runnable tools, for tool.catalog.v1 and exports. */
  entries(): CatalogEntry[];
  /** Records that are present but not runnable, with why (the most telling reason first per name). */
  rejected(): RejectedTool[];
}

/** Creates the catalog. */
export function createCatalog(options: CatalogOptions): Catalog {
  const { client, workspace, logger, stamper } = options;
  const now = options.now ?? Date.now;
  const records = new Map<string, CodeRecord>();
  /** name -> its owner and, per version key, the version and record that last ran (kept after deletion). */
  const owners: Owners = new Map();
  /** name -> version key -> selected record; id -> why a valid record is not selected. */
  let selected = new Map<string, Map<string, CodeRecord>>();
  let shadowed = new Map<string, Issue>();
  let loading = 0;

  const isHostName = (name: string): boolean => options.hostTools().some((tool) => tool.name === name);
  const pinsKey = (): string =>
    [...options.operatorTools()]
      .map(([name, pin]) => `${name}=${definitionDigest(pin.context)}`)
      .sort()
      .join(',');
  const operatorExports = (): ExportHolders =>
    exportHolders(
      options.hostTools().map((tool) => tool.name),
      options.operatorTools().keys(),
    );

  const reindex = (): void => {
    if (loading > 0) return;
    const next = selectVersions({ records: records.values(), owners, shadowed, exports: operatorExports(), logger });
    for (const [name, versions] of selected) {
      for (const [key, record] of versions) {
        const chosen = next.selected.get(name)?.get(key);
        if (chosen !== record)
          logger.info('tool route changed', { name, version: versionOf(record), from: record.id, to: chosen?.id });
      }
    }
    selected = next.selected;
    shadowed = next.shadowed;
    for (const [name] of options.operatorTools()) {
      if (![...records.values()].some((record) => record.publication && record.name === name))
        options.onOperatorDrift?.(name);
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
    const record: CodeRecord = {
      id,
      version: full.version,
      createdAt: full.created_at ?? full.updated_at,
      ...(name !== undefined ? { name } : {}),
      pins: pinsKey(),
      errors: [],
    };
    const trust = stamper.assess(full, workspace);
    const pinned = name !== undefined ? options.operatorTools().get(name) : undefined;
    judgeRecord(record, full, trust, pinned, isHostName, options.validate);
    if (name !== undefined && !full.tags.includes(TAG.tool(name))) {
      const tag = full.tags.find((t) => t.startsWith('tool:') && !t.startsWith('tool:request'));
      logger.warn('tool tag does not match its name; it runs as context.name', { id, name, tag, tags: full.tags });
    }
    if (record.tool)
      logger.info('tool loaded', { id, name, version: record.tool.version, owner: record.owner, trust: trust.kind });
    // A deployment writes the definition, then stamps it in the next version: not a rejection.
    else if (!record.publication && isFreshDeployment(trust, full.updated_at))
      logger.debug('tool being deployed', { id, name });
    else if (!record.publication)
      logger.warn('tool rejected', { id, name, errors: record.errors.map((e) => `${e.path}: ${e.message}`) });
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

  const applyChange = async (change: CatalogChange): Promise<void> => {
    if (change.kind === 'deleted') {
      if (records.delete(change.id)) reindex();
      return;
    }
    const known = records.get(change.id);
    if (known && change.version !== undefined && known.version >= change.version) return;
    await fetchAndValidate(change.id);
  };

  const refreshName = async (name: string): Promise<void> => {
    const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolCode, tag: TAG.tool(name), limit: 50 });
    for (const item of items) {
      const known = records.get(item.id);
      if (!known || known.version < item.version) await fetchAndValidate(item.id);
    }
  };

  const codeRoute = (
    tool: ToolDefinition,
    breadcrumbId: string,
    breadcrumbVersion: number,
    owner: string,
    warnings: string[],
  ): Route => ({
    kind: 'code',
    tool,
    breadcrumbId,
    breadcrumbVersion,
    owner,
    version: tool.version,
    ...(warnings.length > 0 ? { warnings } : {}),
  });

  const lookup = (name: string, versionSpec?: string): Lookup => {
    const nowMs = now();
    const pinned = options.operatorTools().get(name);
    if (pinned) {
      const choice = chooseVersion(
        name,
        [{ version: pinned.tool.version, contract: pinned.tool.contract, value: pinned }],
        versionSpec,
        nowMs,
      );
      if (!choice.ok) return { kind: 'refused', code: choice.code, message: choice.message };
      return { kind: 'route', route: codeRoute(pinned.tool, pinned.id ?? '', 0, OPERATOR, choice.warnings) };
    }
    const host = options.hostTools().find((tool) => tool.name === name);
    if (host) return hostLookup(host, versionSpec, nowMs);
    const versions = selected.get(name);
    if (!versions || versions.size === 0) return { kind: 'unknown' };
    const candidates: Array<VersionCandidate<CodeRecord>> = [...versions.values()].map((record) => ({
      version: versionOf(record),
      contract: record.tool?.contract,
      value: record,
    }));
    const choice = chooseVersion(name, candidates, versionSpec, nowMs);
    if (!choice.ok) return { kind: 'refused', code: choice.code, message: choice.message };
    const record = choice.chosen.value;
    return {
      kind: 'route',
      route: codeRoute(
        record.tool as ToolDefinition,
        record.id,
        record.version,
        record.owner as string,
        choice.warnings,
      ),
    };
  };

  const resolve = (name: string, versionSpec?: string): Route | undefined => {
    const found = lookup(name, versionSpec);
    return found.kind === 'route' ? found.route : undefined;
  };

  const ownership = (name: string): Ownership => {
    if (options.operatorTools().has(name)) return { kind: 'reserved', by: 'bootstrap' };
    if (isHostName(name)) return { kind: 'reserved', by: 'host' };
    const holder = exportCollision(name, operatorExports());
    if (holder) return { kind: 'reserved', by: holder.by, collidesWith: holder.name };
    const remembered = owners.get(name);
    const versions = [...(remembered?.versions.values() ?? [])]
      .sort((a, b) => compareVersionsDesc(a.version, b.version))
      .map(({ version, id }) => ({ version, ...(records.has(id) ? { id } : {}) }));
    const highest = versions[0];
    if (!remembered || !highest) return { kind: 'free' };
    return {
      kind: 'owned',
      owner: remembered.owner,
      version: highest.version,
      ...(highest.id !== undefined ? { id: highest.id } : {}),
      versions,
    };
  };

  const entries = (): CatalogEntry[] => {
    const nowMs = now();
    const out = new Map<string, CatalogEntry>();
    const exports = operatorExports();
    for (const [name, versions] of selected) {
      // A host tool that appeared since the last reindex (a RAP refresh) wins its exported name at once.
      if (exportCollision(name, exports)) continue;
      const tools = [...versions.values()].map((record) => record.tool as ToolDefinition);
      const entry = codeEntry(
        name,
        tools.map((tool) => ({ version: tool.version, contract: tool.contract, value: tool })),
        nowMs,
      );
      if (entry) out.set(name, entry);
    }
    for (const host of options.hostTools()) {
      const entry = hostEntry(host, nowMs);
      if (entry) out.set(host.name, entry);
    }
    for (const [name, pinned] of options.operatorTools()) {
      const entry = codeEntry(
        name,
        [{ version: pinned.tool.version, contract: pinned.tool.contract, value: pinned.tool }],
        nowMs,
      );
      if (entry) out.set(name, entry);
      else out.delete(name);
    }
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
    // The owner's own records first (e.g. a tampered one), then newest first.
    const ownRecord = (item: RejectedTool): boolean =>
      item.name !== undefined &&
      [...(owners.get(item.name)?.versions.values() ?? [])].some((entry) => entry.id === item.id);
    const rank = (item: RejectedTool): string => `${ownRecord(item) ? 1 : 0}${records.get(item.id)?.createdAt ?? ''}`;
    return out.sort((a, b) => (rank(a) < rank(b) ? 1 : rank(a) > rank(b) ? -1 : 0));
  };

  return { load, applyChange, refreshName, lookup, resolve, ownership, entries, rejected };
}

/** A host tool's route: one version (exact match only), deprecation from its contract. */
function hostLookup(host: HostTool, versionSpec: string | undefined, nowMs: number): Lookup {
  const version = hostVersion(host);
  if (versionSpec !== undefined && versionSpec !== version) {
    if (!isVersionSpec(versionSpec))
      return { kind: 'refused', code: ErrorCode.InputInvalid, message: badSpecMessage(versionSpec) };
    return {
      kind: 'refused',
      code: ErrorCode.ToolNotFound,
      message: `host tool "${host.name}" has one version (${version}); context.version ${JSON.stringify(versionSpec)} does not match it`,
    };
  }
  const status = versionStatus(host.contract, nowMs);
  if (status === 'removed')
    return {
      kind: 'refused',
      code: ErrorCode.ToolNotFound,
      message: removedMessage(host.name, version, host.contract),
    };
  return {
    kind: 'route',
    route: {
      kind: 'host',
      tool: host,
      version,
      ...(status === 'deprecated' ? { warnings: [deprecationWarning(host.name, version, host.contract)] } : {}),
    },
  };
}

/** A definition the runner is deploying right now (its stamp follows), not one stuck half-deployed. */
function isFreshDeployment(trust: Trust, updatedAt: string | undefined): boolean {
  if (trust.kind !== 'untrusted' || trust.pending !== true) return false;
  const at = updatedAt === undefined ? Number.NaN : Date.parse(updatedAt);
  // After a minute without its stamp, a deployment stopped half-way: reported.
  return Number.isNaN(at) || Date.now() - at < 60_000;
}
