// Which records of the store run: per name, its owner's candidates grouped by semantic version (the
// oldest record of a version wins), with the reason every other valid record is set aside
// (`trust.reserved`: an operator tool's exported name; `trust.owner`: another writer's;
// `trust.shadowed`: a younger copy of the same version). The catalog (./catalog.ts) calls it after
// every change; it remembers each name's owner and versions in `owners` (kept after deletion).

import type { Logger } from '../logger.js';
import type { Issue, ToolDefinition } from '../screen/index.js';
import { collisionMessage, exportCollision, type ExportHolders } from './exported-names.js';
import { versionKey } from './versions.js';

/** What the catalog knows of one tool.code.v1 breadcrumb. */
export interface CodeRecord {
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

/** name -> its owner and, per version key, the version and record that last ran (kept after deletion). */
export type Owners = Map<string, { owner: string; versions: Map<string, { version: string; id: string }> }>;

/** An Issue of a record that does not run. */
export const issue = (code: string, path: string, message: string): Issue => ({ code, path, message });
/** Whether `a` was created before `b` (ties: the smaller id). */
export const older = (a: CodeRecord, b: CodeRecord): boolean =>
  a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);

/** The semantic version of a runnable record. */
export const versionOf = (record: CodeRecord): string => (record.tool as ToolDefinition).version;

/** The selected record per name and version key, and why each other valid record is not selected. */
export function selectVersions(input: {
  records: Iterable<CodeRecord>;
  owners: Owners;
  /** The previous selection's reasons (a reserved-name collision is logged once). */
  shadowed: ReadonlyMap<string, Issue>;
  exports: ExportHolders;
  logger: Logger;
}): { selected: Map<string, Map<string, CodeRecord>>; shadowed: Map<string, Issue> } {
  const { records, owners, shadowed, exports, logger } = input;
  const byName = new Map<string, CodeRecord[]>();
  for (const record of records) {
    if (!record.tool || !record.owner) continue;
    byName.set(record.tool.name, [...(byName.get(record.tool.name) ?? []), record]);
  }
  const nextSelected = new Map<string, Map<string, CodeRecord>>();
  const nextShadowed = new Map<string, Issue>();
  for (const [name, candidates] of byName) {
    const holder = exportCollision(name, exports);
    if (holder) {
      for (const record of candidates) {
        // Logged once: when the record was not already set aside for this reason.
        if (shadowed.get(record.id)?.code !== 'trust.reserved')
          logger.warn('tool name collides with an operator tool', {
            id: record.id,
            name,
            operatorTool: holder.name,
            owner: record.owner,
          });
        nextShadowed.set(record.id, issue('trust.reserved', '/name', collisionMessage(name, holder)));
      }
      continue;
    }
    let owner = owners.get(name)?.owner;
    if (owner === undefined) owner = candidates.reduce((a, b) => (older(b, a) ? b : a)).owner as string;
    const byVersion = new Map<string, CodeRecord>();
    for (const record of candidates) {
      if (record.owner !== owner) continue;
      const key = versionKey(versionOf(record));
      const best = byVersion.get(key);
      if (!best || older(record, best)) byVersion.set(key, record);
    }
    if (byVersion.size > 0) {
      nextSelected.set(name, byVersion);
      const remembered = owners.get(name) ?? { owner, versions: new Map() };
      for (const [key, record] of byVersion) {
        // A record updated in place (create flow: a minor/patch) no longer stands for its old version.
        for (const [oldKey, entry] of remembered.versions)
          if (entry.id === record.id && oldKey !== key) remembered.versions.delete(oldKey);
        remembered.versions.set(key, { version: versionOf(record), id: record.id });
      }
      owners.set(name, remembered);
    }
    for (const record of candidates) {
      const best = byVersion.get(versionKey(versionOf(record)));
      if (record === best) continue;
      nextShadowed.set(
        record.id,
        record.owner !== owner
          ? issue(
              'trust.owner',
              '/name',
              `the name "${name}" belongs to ${owner}; this definition, by ${record.owner}, is not runnable`,
            )
          : issue(
              'trust.shadowed',
              '/name',
              `an older definition of "${name}" version ${versionOf(record)} (${best?.id}) by the same owner wins; publish a new version instead of a copy`,
            ),
      );
    }
  }
  return { selected: nextSelected, shadowed: nextShadowed };
}
