// `context.api` for a tool: store calls the HOST performs on the tool's behalf, under a policy.
//
// The tool never sees a token. The sandbox enforces the grant level (read: get/search; write: all
// four); this module enforces what a grant may touch. Tools may not read breadcrumbs marked
// `sensitivity: Secret`, and may not create or modify the runner's own records (tool definitions,
// requests, responses, claims, catalogs) — otherwise a tool could answer other requests, deploy
// unscreened tools or forge claims. Everything a tool creates carries the tag `created-by:tool:<name>`.

import type { StoreClient } from '../breadcrumbs/index.js';
import { BreadcrumbCreate, BreadcrumbPatch, SCHEMA } from '../breadcrumbs/messages.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { SandboxApi } from '../sandbox/index.js';

const PROTECTED_SCHEMAS: ReadonlySet<string> = new Set(Object.values(SCHEMA));

export interface ToolApiOptions {
  client: StoreClient;
  tool: string;
  rid: string;
  /** Most results a search may return. */
  maxSearchResults?: number;
}

function denied(message: string): RunnerError {
  return new RunnerError(ErrorCode.PermissionDenied, message);
}

function invalid(message: string): RunnerError {
  return new RunnerError(ErrorCode.InputInvalid, message);
}

function checkSchema(schema: unknown, action: string): void {
  if (typeof schema === 'string' && PROTECTED_SCHEMAS.has(schema)) {
    throw denied(`tools may not ${action} "${schema}" breadcrumbs`);
  }
}

/** Builds the policy-checked store access of one tool call. */
export function createToolApi(options: ToolApiOptions): SandboxApi {
  const { client, tool } = options;
  const maxResults = options.maxSearchResults ?? 100;
  const provenance = `created-by:tool:${tool}`;

  const readable = async (id: string) => {
    if (typeof id !== 'string' || id === '') throw invalid('getBreadcrumb(id) needs a breadcrumb id string');
    const full = await client.getBreadcrumbFull(id);
    if (full.sensitivity === 'Secret') throw denied(`breadcrumb "${id}" is marked Secret`);
    return full;
  };

  return {
    async getBreadcrumb(id) {
      const full = await readable(id);
      return {
        id: full.id,
        title: full.title,
        description: full.description ?? null,
        context: full.context,
        tags: full.tags,
        schema_name: full.schema_name ?? null,
        version: full.version,
        updated_at: full.updated_at,
      };
    },

    async createBreadcrumb(body) {
      const parsed = BreadcrumbCreate.safeParse(body);
      if (!parsed.success) {
        throw invalid(`createBreadcrumb: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`);
      }
      checkSchema(parsed.data.schema_name, 'create');
      const tags = parsed.data.tags.includes(provenance) ? parsed.data.tags : [...parsed.data.tags, provenance];
      return client.createBreadcrumb({ ...parsed.data, tags });
    },

    async updateBreadcrumb(id, version, patch) {
      const parsed = BreadcrumbPatch.safeParse(patch);
      if (!parsed.success) {
        throw invalid(`updateBreadcrumb: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'patch'}: ${i.message}`).join('; ')}`);
      }
      if (version !== undefined && (!Number.isInteger(version) || version < 1)) {
        throw invalid(`updateBreadcrumb: version must be a positive integer, got ${JSON.stringify(version)}`);
      }
      const current = await readable(id);
      checkSchema(current.schema_name, 'update');
      checkSchema(parsed.data.schema_name, 'update into');
      return client.updateBreadcrumb(id, parsed.data, version === undefined ? {} : { ifMatch: version });
    },

    async searchBreadcrumbs(params) {
      const p = (params ?? {}) as Record<string, unknown>;
      const str = (key: string): string | undefined => {
        const value = p[key];
        if (value === undefined) return undefined;
        if (typeof value !== 'string') throw invalid(`searchBreadcrumbs: ${key} must be a string`);
        return value;
      };
      const limitRaw = p['limit'];
      const limit = typeof limitRaw === 'number' && Number.isInteger(limitRaw) && limitRaw > 0 ? Math.min(limitRaw, maxResults) : 20;
      const q = str('q');
      const tag = str('tag');
      const schema = str('schema_name');
      const query = { ...(tag ? { tag } : {}), ...(schema ? { schema_name: schema } : {}), limit };
      const items = q
        ? await client.search({ q, ...query })
        : await client.listBreadcrumbs({ ...query, include_context: true });
      // List items do not carry `sensitivity`: read each record to keep Secret ones out.
      const fulls = await Promise.all(items.map((item) => client.getBreadcrumbFull(item.id).catch(() => undefined)));
      return fulls
        .filter((full) => full !== undefined && full.sensitivity !== 'Secret')
        .map((full) => ({
          id: full!.id,
          title: full!.title,
          tags: full!.tags,
          schema_name: full!.schema_name ?? null,
          version: full!.version,
          updated_at: full!.updated_at,
          context: full!.context,
        }));
    },
  };
}
