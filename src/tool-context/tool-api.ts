// `context.api` for a tool: store calls the HOST performs on the tool's behalf, under a policy.
//
// The tool never sees a token. The sandbox enforces the grant level (read: get/search; write: all
// four); this module enforces what a grant may touch (rules in tool-api-policy.ts):
// - reads never return breadcrumbs marked `sensitivity: Secret`, nor the runner's own records
//   (`tool.*` schemas, reserved tags: other agents' requests, responses, claims, definitions) unless
//   the operator listed the tool in `toolApiRunnerReaders`;
// - writes never create or touch the runner's records or reserved tags; a tool updates only the
//   breadcrumbs it created (its `created-by:tool:<name>` mark), so it cannot expire, hide or
//   downgrade anyone else's; provenance marks are added, never removed or forged;
// - a grant scoped to schemas (`permissions.breadcrumbs`, ToolDefinition.apiSchemas) reads only
//   records of its read and write schemas and creates/updates only records of its write schemas
//   (compared normalised, as below); anything else is permission.denied naming the schema;
// - one execution's calls are capped: `toolApiMaxConcurrent` at once (the rest queue),
//   `toolApiMaxReplyBytes` per reply and `toolApiMaxJobBytes` in total (`rate.exceeded` beyond).
//   Search reads candidates as context-free listings and then one full record at a time, stopping
//   as soon as the reply is complete or over its cap, so a call holds at most one record beyond
//   what it returns. Secret and runner records are removed before `limit` applies;
// - a triggered run's creations carry its chain's mark and count against the chain (chains.ts);
//   every creation for an agent carries `created-by:agent:<id>`, which the store's quota counts.

import type { StoreClient } from '../breadcrumbs/index.js';
import { isNotFound } from '../breadcrumbs/index.js';
import {
  CHARGED_AGENT_TAG_PREFIX,
  BreadcrumbCreate,
  BreadcrumbPatch,
  type BreadcrumbFull,
  type BreadcrumbListItem,
} from '../breadcrumbs/messages.js';
import type { Config } from '../config/index.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { SandboxApi } from '../sandbox/index.js';
import type { ChainLedger } from './chains.js';
import { CHAIN_TAG_PREFIX, DEPTH_TAG_PREFIX } from './origin.js';
import {
  checkUpdatable,
  checkWritable,
  isReservedTag,
  isRunnerRecord,
  isRunnerSchema,
  normaliseName,
  toolCreateBody,
  toolUpdateTags,
} from './tool-api-policy.js';

/** The caps and grants of `context.api`, from the service's config. */
export type ToolApiConfig = Pick<
  Config,
  'toolApiMaxConcurrent' | 'toolApiMaxReplyBytes' | 'toolApiMaxJobBytes' | 'toolApiRunnerReaders'
>;

export interface ToolApiOptions {
  client: StoreClient;
  tool: string;
  rid: string;
  config: ToolApiConfig;
  /** The grant's schema scope (`permissions.breadcrumbs`); absent = every schema the policy allows. */
  schemas?: { read: readonly string[]; write: readonly string[] } | undefined;
  /** The run's depth (origin.ts): its new records carry the `created-by:depth:<n>` mark, so subscriptions bound loops. */
  depth?: number;
  /** The agent the run's creations count against (the store's quota): they carry `created-by:agent:<id>`. */
  chargeTo?: string | undefined;
  /** A triggered run's chain (chains.ts): its new records carry `created-by:chain:<seed>` and count in the ledger. */
  chain?: { seed: string; ledger: ChainLedger };
  /** A lasting run (a continuous tool): `toolApiMaxJobBytes` counts per window of this length, not per run. */
  windowMs?: number;
}

/** Most results a search may return, and its default. */
export const MAX_SEARCH_RESULTS = 100;
export const DEFAULT_SEARCH_RESULTS = 20;
/** Most candidates a search examines (hidden ones included) with a listing, and with a text query. */
export const MAX_LIST_SCAN = 500;
export const MAX_QUERY_SCAN = 50;
const LIST_PAGE = 20;

const invalid = (message: string): RunnerError => new RunnerError(ErrorCode.InputInvalid, message);
const denied = (message: string): RunnerError => new RunnerError(ErrorCode.PermissionDenied, message);
const issues = (error: { issues: Array<{ path: PropertyKey[]; message: string }> }, root: string): string =>
  error.issues.map((i) => `${i.path.map(String).join('.') || root}: ${i.message}`).join('; ');

/** The view of a record a tool receives. */
function toolView(full: BreadcrumbFull, withContext: boolean): Record<string, unknown> {
  return {
    id: full.id,
    title: full.title,
    description: full.description ?? null,
    tags: full.tags,
    schema_name: full.schema_name ?? null,
    version: full.version,
    updated_at: full.updated_at,
    ...(withContext ? { context: full.context } : {}),
  };
}

/** Builds the policy-checked store access of one tool call (one instance per execution). */
export function createToolApi(options: ToolApiOptions): SandboxApi {
  const { client, tool, config } = options;
  const readsRunner = config.toolApiRunnerReaders.includes(tool);
  const scope = options.schemas
    ? {
        write: new Set(options.schemas.write.map(normaliseName)),
        read: new Set([...options.schemas.read, ...options.schemas.write].map(normaliseName)),
      }
    : undefined;
  const inScope = (kind: 'read' | 'write', schema: string | null | undefined): boolean =>
    !scope || (typeof schema === 'string' && scope[kind].has(normaliseName(schema)));
  const scopeList = (kind: 'read' | 'write'): string =>
    JSON.stringify(
      kind === 'read'
        ? [...new Set([...(options.schemas?.read ?? []), ...(options.schemas?.write ?? [])])]
        : (options.schemas?.write ?? []),
    );
  const checkScope = (kind: 'read' | 'write', schema: string | null | undefined, what: string): void => {
    if (!inScope(kind, schema)) {
      throw denied(
        `tool "${tool}" may ${kind} only breadcrumbs of the schemas ${scopeList(kind)} (permissions.breadcrumbs.${kind}); ${what} has schema ${JSON.stringify(schema ?? null)}`,
      );
    }
  };
  let jobBytes = 0;
  let windowStart = Date.now();
  let active = 0;
  const waiting: Array<() => void> = [];

  /** Runs `fn` when fewer than toolApiMaxConcurrent calls of this execution are in flight. */
  const limited = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= config.toolApiMaxConcurrent) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next)
        next(); // the slot passes on
      else active--;
    }
  };

  const roll = (): void => {
    if (options.windowMs !== undefined && Date.now() - windowStart >= options.windowMs) {
      windowStart = Date.now();
      jobBytes = 0;
    }
  };
  const checkJobBudget = (): void => {
    roll();
    if (jobBytes >= config.toolApiMaxJobBytes) {
      throw new RunnerError(
        ErrorCode.RateExceeded,
        `this execution already received ${jobBytes} bytes, the most one may (toolApiMaxJobBytes ${config.toolApiMaxJobBytes})`,
      );
    }
  };
  /** Charges a reply of `bytes` to the execution; refuses it when over a cap. */
  const charge = (bytes: number, hint: string): void => {
    roll();
    if (bytes > config.toolApiMaxReplyBytes) {
      throw new RunnerError(
        ErrorCode.RateExceeded,
        `the reply would exceed ${config.toolApiMaxReplyBytes} bytes (toolApiMaxReplyBytes)${hint}`,
      );
    }
    if (jobBytes + bytes > config.toolApiMaxJobBytes) {
      throw new RunnerError(
        ErrorCode.RateExceeded,
        `a reply of ${bytes} bytes would bring this execution past ${config.toolApiMaxJobBytes} bytes received (toolApiMaxJobBytes)`,
      );
    }
    jobBytes += bytes;
  };

  /** A full record the tool may see, or why not; `missing` when it vanished (deleted, expired). */
  const visible = async (id: string): Promise<BreadcrumbFull | 'secret' | 'runner' | 'missing'> => {
    let full: BreadcrumbFull;
    try {
      full = await client.getBreadcrumbFull(id);
    } catch (error) {
      if (isNotFound(error)) return 'missing';
      throw error;
    }
    if (full.sensitivity === 'Secret') return 'secret';
    if (!readsRunner && isRunnerRecord(full)) return 'runner';
    return full;
  };

  const readable = async (id: string): Promise<BreadcrumbFull> => {
    if (typeof id !== 'string' || id === '') throw invalid('a breadcrumb id string is needed');
    const found = await visible(id);
    if (found === 'missing') throw new RunnerError(ErrorCode.NotFound, `breadcrumb "${id}" not found`);
    if (found === 'secret') throw denied(`breadcrumb "${id}" is marked Secret`);
    if (found === 'runner')
      throw denied(`breadcrumb "${id}" is one of the runner's own records, which tool "${tool}" may not read`);
    return found;
  };

  /** Candidate listings in the store's order: pages of a listing, or growing windows of a text query. */
  async function* candidates(query: {
    q?: string;
    tag?: string;
    schema_name?: string;
  }): AsyncGenerator<BreadcrumbListItem> {
    const filter = {
      ...(query.tag !== undefined ? { tag: query.tag } : {}),
      ...(query.schema_name !== undefined ? { schema_name: query.schema_name } : {}),
    };
    if (query.q === undefined) {
      for (let offset = 0; offset < MAX_LIST_SCAN; offset += LIST_PAGE) {
        const page = await client.listBreadcrumbs({ ...filter, limit: LIST_PAGE, offset, include_context: false });
        yield* page;
        if (page.length < LIST_PAGE) return;
      }
      return;
    }
    // A text query has no offset: ask for a growing window and skip what was already seen.
    let seen = 0;
    for (let window = 10; ; window = Math.min(window * 2, MAX_QUERY_SCAN)) {
      const items = await client.search({ q: query.q, ...filter, limit: window });
      yield* items.slice(seen);
      seen = Math.max(seen, items.length);
      if (items.length < window || window >= MAX_QUERY_SCAN) return;
    }
  }

  return {
    getBreadcrumb: (id) =>
      limited(async () => {
        checkJobBudget();
        const found = await readable(id);
        checkScope('read', found.schema_name, `breadcrumb "${id}"`);
        const view = toolView(found, true);
        charge(Buffer.byteLength(JSON.stringify(view)), '; the breadcrumb is larger than a reply may be');
        return view;
      }),

    createBreadcrumb: (body) =>
      limited(async () => {
        const parsed = BreadcrumbCreate.safeParse(body);
        if (!parsed.success) throw invalid(`${issues(parsed.error, 'body')}`);
        checkWritable(parsed.data.schema_name, parsed.data.tags);
        checkScope('write', parsed.data.schema_name, 'the new breadcrumb');
        const created = toolCreateBody(parsed.data, tool);
        if (options.depth !== undefined && options.depth > 0)
          created.tags = [...created.tags, `${DEPTH_TAG_PREFIX}${options.depth}`];
        if (options.chargeTo !== undefined)
          created.tags = [...created.tags, CHARGED_AGENT_TAG_PREFIX + options.chargeTo];
        if (options.chain) {
          options.chain.ledger.charge(options.chain.seed, tool);
          created.tags = [...created.tags, `${CHAIN_TAG_PREFIX}${options.chain.seed}`];
        }
        return client.createBreadcrumb(created);
      }),

    updateBreadcrumb: (id, version, patch) =>
      limited(async () => {
        const parsed = BreadcrumbPatch.safeParse(patch);
        if (!parsed.success) throw invalid(`${issues(parsed.error, 'patch')}`);
        if (version !== undefined && (!Number.isInteger(version) || version < 1)) {
          throw invalid(`version must be a positive integer, got ${JSON.stringify(version)}`);
        }
        checkWritable(parsed.data.schema_name, parsed.data.tags);
        if (parsed.data.schema_name !== undefined) checkScope('write', parsed.data.schema_name, 'the patch');
        const current = await readable(id);
        checkWritable(current.schema_name, current.tags);
        checkScope('write', current.schema_name, `breadcrumb "${id}"`);
        checkUpdatable(id, current.tags, tool);
        const { tags, ...rest } = parsed.data;
        const body = tags === undefined ? rest : { ...rest, tags: toolUpdateTags(tags, current.tags, tool) };
        return client.updateBreadcrumb(id, body, version === undefined ? {} : { ifMatch: version });
      }),

    searchBreadcrumbs: (params) =>
      limited(async () => {
        const p = (params ?? {}) as Record<string, unknown>;
        const str = (key: string): string | undefined => {
          const value = p[key];
          if (value === undefined) return undefined;
          if (typeof value !== 'string') throw invalid(`${key} must be a string, got ${JSON.stringify(value)}`);
          return value;
        };
        const limitRaw = p['limit'];
        if (limitRaw !== undefined && !(Number.isInteger(limitRaw) && (limitRaw as number) > 0)) {
          throw invalid(`limit must be a positive integer, got ${JSON.stringify(limitRaw)}`);
        }
        const limit = Math.min((limitRaw as number | undefined) ?? DEFAULT_SEARCH_RESULTS, MAX_SEARCH_RESULTS);
        const withContext = p['include_context'] !== false;
        const q = str('q');
        const tag = str('tag');
        const schema = str('schema_name');
        if (!readsRunner && ((tag !== undefined && isReservedTag(tag)) || isRunnerSchema(schema))) {
          throw denied(
            `${tag !== undefined && isReservedTag(tag) ? `tag ${JSON.stringify(tag)}` : `schema ${JSON.stringify(schema)}`} names the runner's own records, which tool "${tool}" may not read`,
          );
        }
        if (schema !== undefined) checkScope('read', schema, 'the search');
        checkJobBudget();
        const results: Array<Record<string, unknown>> = [];
        let bytes = 2; // "[]"
        for await (const item of candidates({
          ...(q !== undefined ? { q } : {}),
          ...(tag !== undefined ? { tag } : {}),
          ...(schema !== undefined ? { schema_name: schema } : {}),
        })) {
          if (!readsRunner && isRunnerRecord(item)) continue; // the listing already tells
          if (!inScope('read', item.schema_name)) continue;
          const found = await visible(item.id);
          if (typeof found === 'string' || !inScope('read', found.schema_name)) continue;
          const view = toolView(found, withContext);
          const size = Buffer.byteLength(JSON.stringify(view)) + 1;
          if (bytes + size > config.toolApiMaxReplyBytes) {
            charge(
              bytes + size,
              ` at result ${results.length + 1} (limit ${limit}); ask for fewer results or pass include_context: false`,
            );
          }
          bytes += size;
          results.push(view);
          if (results.length >= limit) break;
        }
        charge(bytes, '');
        return results;
      }),
  };
}
