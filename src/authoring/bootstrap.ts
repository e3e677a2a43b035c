// Bootstrap: upserts the operator's tool files as tool.code.v1 breadcrumbs.
//
// Per file: validate (operator policy: origin "bootstrap") -> find the tool of that name in the
// workspace -> skip when identical; otherwise run its examples in the sandbox (as the agent path
// does; a failing example rejects the file unless examples are skipped) -> create when absent,
// update with If-Match when different.
// Re-running changes nothing. Creates carry an Idempotency-Key derived from the content, so two
// replicas bootstrapping at once create one breadcrumb, not two.
//
// Every write is stamped as the operator's (src/catalog/deployment.ts): a new record is created with
// a pending stamp, then stamped for its id and version 2; an update is stamped for the version it
// produces. A record whose content matches but whose stamp does not verify (tampered, or written by a
// runner with another key) is re-stamped. `pin` hands each valid file's definition to the running
// service, which then runs only that definition under the name, whatever the store holds.

import { createHash } from 'node:crypto';
import type { StoreClient } from '../breadcrumbs/index.js';
import { isConflict, isNotFound, isVersionMismatch } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, type BreadcrumbFull } from '../breadcrumbs/messages.js';
import { DEPLOYMENT_FIELD, OPERATOR, type Stamper } from '../catalog/deployment.js';
import type { OperatorTool } from '../catalog/catalog.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';
import { canonicalJson, validateToolDefinition, type SchemaValidator, type ToolDefinition } from '../screen/index.js';
import type { ExampleReport } from './examples.js';
import { fixLine } from './fix-hint.js';
import type { NetworkStatus } from './network-probe.js';
import type { ToolFile } from './tool-files.js';

export type BootstrapAction = 'created' | 'updated' | 'unchanged' | 'rejected';

export interface BootstrapRow {
  file: string;
  name?: string;
  action: BootstrapAction;
  id?: string;
  reason?: string;
  /** Examples run before the write: passed / skipped counts, and why examples were skipped (each reason once). */
  examples?: { passed: number; skipped: number; why?: string[] };
}

export interface BootstrapOptions {
  client: StoreClient;
  files: readonly ToolFile[];
  config: Config;
  logger: Logger;
  validator: SchemaValidator;
  stamper: Stamper;
  /** Called for every accepted file (after its upsert, with the record id when it succeeded). */
  pin?(pin: OperatorTool): void;
  /**
   * Runs a tool's examples before it is created or updated; absent = examples are skipped
   * (`--skip-examples`). `network` tells which tools' network examples cannot run (called only for
   * tools whose examples run, so an unchanged directory costs no network probe).
   */
  examples?: {
    run(tool: ToolDefinition, network?: NetworkStatus): Promise<ExampleReport[]>;
    network?(tool: ToolDefinition): Promise<NetworkStatus>;
  };
}

type Desired = Extract<ToolFile, { ok: true }>['breadcrumb'];

const FIELDS = ['title', 'description', 'semantic_version', 'llm_hints'] as const;

function sameContent(existing: BreadcrumbFull, desired: Desired): boolean {
  for (const field of FIELDS) {
    if (canonicalJson(existing[field] ?? null) !== canonicalJson(desired[field] ?? null)) return false;
  }
  if ([...existing.tags].sort().join('\n') !== [...desired.tags].sort().join('\n')) return false;
  const { [DEPLOYMENT_FIELD]: _stamp, ...context } = existing.context;
  return canonicalJson(context) === canonicalJson(desired.context);
}

/** Finds the tool.code.v1 that owns `name` in the workspace (the oldest, as the catalog routes). */
export async function findTool(
  client: StoreClient,
  name: string,
  workspace: string,
): Promise<BreadcrumbFull | undefined> {
  const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolCode, tag: TAG.tool(name), limit: 50 });
  let best: BreadcrumbFull | undefined;
  for (const item of items) {
    let full: BreadcrumbFull;
    try {
      full = await client.getBreadcrumbFull(item.id);
    } catch (error) {
      if (isNotFound(error)) continue;
      throw error;
    }
    if (!full.tags.includes(workspace) || full.context['name'] !== name) continue;
    const created = full.created_at ?? full.updated_at;
    const bestCreated = best ? (best.created_at ?? best.updated_at) : undefined;
    if (!best || created < (bestCreated as string) || (created === bestCreated && full.id < best.id)) best = full;
  }
  return best;
}

async function upsert(
  client: StoreClient,
  stamper: Stamper,
  desired: Desired,
  name: string,
  workspace: string,
): Promise<{ action: BootstrapAction; id: string }> {
  const key = `bootstrap:${workspace}:${name}:${createHash('sha256').update(canonicalJson(desired)).digest('hex').slice(0, 32)}`;
  const stamped = (id: string, version: number): Desired => ({
    ...desired,
    context: {
      ...desired.context,
      [DEPLOYMENT_FIELD]: stamper.stamp({ workspace, name, owner: OPERATOR, id, version, context: desired.context }),
    },
  });
  for (let attempt = 0; attempt < 6; attempt++) {
    const existing = await findTool(client, name, workspace);
    if (existing) {
      const trust = stamper.assess(existing, workspace);
      if (sameContent(existing, desired) && trust.kind === 'stamped' && trust.owner === OPERATOR)
        return { action: 'unchanged', id: existing.id };
      try {
        await client.updateBreadcrumb(existing.id, stamped(existing.id, existing.version + 1), {
          ifMatch: existing.version,
        });
        return { action: 'updated', id: existing.id };
      } catch (error) {
        if (isVersionMismatch(error) || isNotFound(error)) continue;
        throw error;
      }
    }
    let id: string;
    try {
      // A spent key (the same content was created once and later deleted) falls back to a plain create.
      const pending = { ...desired, context: { ...desired.context, [DEPLOYMENT_FIELD]: stamper.pending(OPERATOR) } };
      ({ id } = await client.createBreadcrumb(pending, attempt === 0 ? { idempotencyKey: key } : {}));
    } catch (error) {
      if (!isConflict(error)) throw error;
      continue;
    }
    try {
      await client.updateBreadcrumb(id, { context: stamped(id, 2).context }, { ifMatch: 1 });
      return { action: 'created', id };
    } catch (error) {
      // Someone wrote to the new record first: look again (the next round re-stamps or updates it).
      if (isVersionMismatch(error) || isNotFound(error)) continue;
      throw error;
    }
  }
  throw new Error(`tool "${name}" kept changing while it was being bootstrapped`);
}

/** Upserts every file; one row per file. Never throws for a bad file (that row is "rejected"). */
export async function bootstrapTools(options: BootstrapOptions): Promise<BootstrapRow[]> {
  const { client, config, logger } = options;
  const rows: BootstrapRow[] = [];
  for (const file of options.files) {
    if (!file.ok) {
      rows.push({ file: file.path, ...(file.name ? { name: file.name } : {}), action: 'rejected', reason: file.error });
      continue;
    }
    for (const warning of file.warnings ?? [])
      logger.warn('bootstrap file warning', { file: file.path, tool: file.name, warning });
    const check = validateToolDefinition(file.breadcrumb.context, {
      origin: 'bootstrap',
      config,
      validator: options.validator,
    });
    if (!check.ok) {
      const fix = fixLine(check.errors);
      const reason =
        check.errors
          .slice(0, 5)
          .map((e) => `${e.path}${e.line ? ` (${e.line}:${e.column})` : ''}: ${e.message}`)
          .join('; ') + (fix ? ` — ${fix}` : '');
      rows.push({ file: file.path, name: file.name, action: 'rejected', reason });
      continue;
    }
    const pin: OperatorTool = { tool: check.tool, context: file.breadcrumb.context, file: file.path };
    let examples: BootstrapRow['examples'];
    try {
      if (options.examples) {
        const existing = await findTool(client, file.name, config.workspace);
        const trust = existing ? options.stamper.assess(existing, config.workspace) : undefined;
        const unchanged =
          existing !== undefined &&
          sameContent(existing, file.breadcrumb) &&
          trust?.kind === 'stamped' &&
          trust.owner === OPERATOR;
        if (!unchanged) {
          const reports = await options.examples.run(check.tool, await options.examples.network?.(check.tool));
          const failed = reports.map((r, i) => ({ r, i })).filter(({ r }) => !r.ok);
          if (failed.length > 0) {
            const reason = failed
              .map(({ r, i }) => `example ${i + 1} (${r.description}) failed: ${r.error ?? 'unknown'}`)
              .join('; ');
            // Not pinned either: a file whose examples fail does not run.
            rows.push({
              file: file.path,
              name: file.name,
              action: 'rejected',
              reason: `${reason} (--skip-examples to bootstrap anyway)`,
            });
            continue;
          }
          const why = [...new Set(reports.flatMap((r) => (r.skipped ? [r.skipped] : [])))];
          examples = {
            passed: reports.filter((r) => !r.skipped).length,
            skipped: reports.filter((r) => r.skipped).length,
            ...(why.length > 0 ? { why } : {}),
          };
        }
      }
      const { action, id } = await upsert(client, options.stamper, file.breadcrumb, file.name, config.workspace);
      rows.push({ file: file.path, name: file.name, action, id, ...(examples ? { examples } : {}) });
      pin.id = id;
    } catch (error) {
      logger.error('bootstrap upsert failed', { file: file.path, error });
      rows.push({ file: file.path, name: file.name, action: 'rejected', reason: `store: ${(error as Error).message}` });
    }
    // The file is the source of truth: its definition is pinned even when the store write failed.
    options.pin?.(pin);
  }
  return rows;
}

/** Renders the summary table printed by `tools-runner bootstrap` and logged by `start`. */
export function renderBootstrapTable(rows: readonly BootstrapRow[]): string {
  const note = (row: BootstrapRow): string => {
    if (row.reason) return `  — ${row.reason}`;
    if (!row.examples) return row.action === 'unchanged' ? '' : '  (examples not run: --skip-examples)';
    return `  (${row.examples.passed} example(s) passed${row.examples.skipped ? `, ${row.examples.skipped} skipped: ${(row.examples.why ?? ['network unreachable']).join('; ')}` : ''})`;
  };
  const lines = rows.map((row) => `${row.action.padEnd(9)} ${(row.name ?? '-').padEnd(24)} ${row.file}${note(row)}`);
  const count = (action: BootstrapAction): number => rows.filter((row) => row.action === action).length;
  lines.push(
    `${rows.length} file(s): ${count('created')} created, ${count('updated')} updated, ${count('unchanged')} unchanged, ${count('rejected')} rejected`,
  );
  return lines.join('\n');
}
