// tool.create.request.v1 -> tool.create.response.v1: agents create (or replace) tools.
//
// A request is validated (agent policy: screening, permissions, schemas), its examples run in the
// sandbox, and only then is the tool.code.v1 written: created when the name is free, updated when
// the request names the version it replaces (`replaces_version`), otherwise rejected as a conflict
// — a silent overwrite of someone else's tool never happens, and tools managed by the operator's
// bootstrap files cannot be replaced by agents. The catalog picks the new tool up from the event
// stream, so it is runnable without a restart.
//
// Versions (chooseTarget): a new MAJOR from the owner — a `tool_spec.version` whose major number no
// existing version of the name has — is created as a new record and coexists with the existing
// versions (they stay runnable; requests pick one with `context.version`). A minor or patch (or a
// spec without a version) replaces the existing version named by `replaces_version`, which must be
// of the same major: that record is updated in place, as before versions coexisted.
//
// Ownership (docs/security.md "Trust model"): the requester is the store's record of who wrote the request
// (`created_by`; verified by the store when auth is on), else the declared agent_id. Names of
// operator tools (bootstrap files, host tools) are reserved; a name owned by another agent is
// refused (permission.denied); only the owner replaces its tool. What is written is stamped
// (src/catalog/deployment.ts): a new record first carries a pending stamp, then the stamp for its id
// and version 2; an update carries the stamp for the version it produces.
//
// Several replicas: the answer is written with `Idempotency-Key: create-response:<rid>`, the tool
// with `tool-create:<workspace>:<rid>` (create) or If-Match (update), so racing replicas produce one
// tool and one answer. Requests are handled one at a time (they run examples).

import PQueue from 'p-queue';
import semver from 'semver';
import type { Catalog, Ownership } from '../catalog/catalog.js';
import { agentOwner, DEPLOYMENT_FIELD, OPERATOR, type Stamper } from '../catalog/deployment.js';
import type { StoreClient } from '../breadcrumbs/index.js';
import { ANSWER_TAG_PREFIX, isConflict, isNotFound, isVersionMismatch, requestIdProblem, type RequestKeys } from '../breadcrumbs/index.js';
import {
  SCHEMA,
  TAG,
  ToolCreateRequestContext,
  type CreateIssue,
  type StoreEvent,
  type ToolCreateResponseContext,
} from '../breadcrumbs/messages.js';
import type { Config } from '../config/index.js';
import { coerceError, ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { createResponder, type Responder } from '../request/7-respond.js';
import type { Sandbox } from '../sandbox/index.js';
import { SEMVER, validateToolDefinition, type SchemaValidator } from '../screen/index.js';
import type { ExtensionContext, ServiceExtension } from '../extension.js';
import type { SecretResolver } from '../tool-context/secrets.js';
import { createToolApi } from '../tool-context/tool-api.js';
import { runExamples } from './examples.js';
import { createRecentIds } from './recent-ids.js';

interface Deps {
  client: StoreClient;
  keys: RequestKeys;
  sandbox: Sandbox;
  config: Config;
  logger: Logger;
  responder: Responder;
  validator: SchemaValidator;
  stamper: Stamper;
  catalog: Pick<Catalog, 'ownership' | 'refreshName'>;
  /** Secrets for the examples: workspace/global, and scope tool/<id> only when the owner replaces that definition. */
  secrets?: SecretResolver;
}

/** A create request as read from the store (`created_by` from `/full`). */
export interface CreateRequestRecord {
  id: string;
  tags: string[];
  context: Record<string, unknown>;
  created_by?: string | null | undefined;
  /** Store version; a request changed after it was written (version > 1) is refused. */
  version?: number;
}

const issue = (code: string, path: string, message: string): CreateIssue => ({ code, path, message });

function bumpPatch(version: string): string {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? `${match[1]}.${match[2]}.${Number(match[3]) + 1}` : '1.0.1';
}

/** The version a create request replaces (its record is updated), or none (a new record), or the conflict. */
type Target = { ok: true; replaces?: { version: string; id: string } } | { ok: false; issue: CreateIssue };

/**
 * Where the owner's new definition goes (the requester is the owner or the name is free):
 * - no runnable version of the name (new, or its records deleted): a new record; `replaces_version` is a conflict;
 * - a new MAJOR (`tool_spec.version`'s major is none of the existing versions'): a new record beside the
 *   existing versions, which stay runnable; `replaces_version`, if given, must name an existing version;
 * - otherwise (a minor/patch, or no version given): `replaces_version` must name an existing version of
 *   the same major; that version's record is updated in place (no version given: its patch + 1).
 */
function chooseTarget(name: string, ownership: Ownership, specVersion: unknown, replacesVersion: string | undefined): Target {
  const existing = ownership.kind === 'owned' ? ownership.versions.flatMap((v) => (v.id !== undefined ? [{ version: v.version, id: v.id }] : [])) : [];
  const conflict = (path: string, message: string): Target => ({ ok: false, issue: issue(ErrorCode.Conflict, path, message) });
  const list = existing.map((v) => v.version).join(', ');
  if (existing.length === 0) {
    return replacesVersion === undefined ? { ok: true } : conflict('/replaces_version', `replaces_version is set but no tool named "${name}" exists`);
  }
  const version = typeof specVersion === 'string' ? semver.valid(specVersion) : null;
  const replaced = existing.find((v) => v.version === replacesVersion);
  if (version !== null && !existing.some((v) => semver.valid(v.version) !== null && semver.major(v.version) === semver.major(version))) {
    if (replacesVersion !== undefined && !replaced) return conflict('/replaces_version', `replaces_version is "${replacesVersion}" but "${name}" has no such version (versions: ${list})`);
    return { ok: true };
  }
  const sameMajor = version !== null ? existing.filter((v) => semver.valid(v.version) !== null && semver.major(v.version) === semver.major(version)) : existing;
  const current = sameMajor[0] ?? existing[0];
  if (replacesVersion === undefined) {
    return conflict(
      '/tool_spec/name',
      `a tool named "${name}" already exists (version ${current?.version ?? 'unknown'}); set replaces_version to "${current?.version ?? ''}" to replace it, or give tool_spec.version a new major to publish it beside the existing version(s)`,
    );
  }
  if (!replaced) {
    return conflict('/replaces_version', `replaces_version is "${replacesVersion}" but the current version of "${name}" is "${existing.length === 1 ? current?.version : list}"`);
  }
  if (version !== null && !sameMajor.includes(replaced)) {
    return conflict('/replaces_version', `version "${version}" is a minor/patch of major ${semver.major(version)}, so it replaces a version of that major (${sameMajor.map((v) => v.version).join(', ')}), not "${replacesVersion}"`);
  }
  if (typeof specVersion === 'string' && specVersion === replacesVersion) {
    return conflict('/tool_spec/version', `version "${replacesVersion}" is the version being replaced; give the new tool a new version`);
  }
  const clash = version !== null ? existing.find((v) => semver.valid(v.version) !== null && semver.eq(v.version, version)) : undefined;
  if (clash) return conflict('/tool_spec/version', `version "${version}" of "${name}" already exists (definition ${clash.id}); give the new tool a new version`);
  return { ok: true, replaces: replaced };
}

/** The rid of a create request (`request_id`, else the breadcrumb id) and why `request_id` is unusable, if it is. */
function createRequestRid(breadcrumb: { id: string; context: Record<string, unknown> }): { rid: string; problem?: string } {
  const raw = breadcrumb.context['request_id'];
  if (raw === undefined || raw === '') return { rid: breadcrumb.id };
  const problem = requestIdProblem(raw)?.replace(/^requestId/, 'request_id');
  return problem ? { rid: breadcrumb.id, problem } : { rid: raw as string };
}

/** Handles one create request; returns the answer to write (pure policy + store writes of the tool). */
export async function processCreateRequest(deps: Deps, breadcrumb: CreateRequestRecord): Promise<{ rid: string; answer: ToolCreateResponseContext }> {
  const { client, config } = deps;
  const { rid, problem } = createRequestRid(breadcrumb);
  const reject = (errors: CreateIssue[], warnings: CreateIssue[] = [], examples: ToolCreateResponseContext['examples'] = []) => ({
    rid,
    answer: { request_id: rid, status: 'rejected' as const, errors, warnings, examples },
  });
  if (problem) return reject([issue(ErrorCode.InputInvalid, '/request_id', problem)]);

  const parsed = ToolCreateRequestContext.safeParse(breadcrumb.context);
  if (!parsed.success) {
    return reject(parsed.error.issues.map((i) => issue(ErrorCode.InputInvalid, '/' + i.path.join('/'), i.message)));
  }
  if (breadcrumb.version !== undefined && breadcrumb.version > 1) {
    return reject([issue(ErrorCode.PermissionDenied, '', `tool.create.request.v1 ${breadcrumb.id} was changed after it was written (store version ${breadcrumb.version}); write a new request instead`)]);
  }
  const agentTag = breadcrumb.tags.find((tag) => tag.startsWith('agent:'))?.slice('agent:'.length);
  const agentId = parsed.data.agent_id ?? agentTag;
  if (!config.toolCreation) return reject([issue(ErrorCode.PermissionDenied, '', 'tool creation is disabled on this runner')]);
  if (config.toolCreationAgents.length > 0 && (!agentId || !config.toolCreationAgents.includes(agentId))) {
    return reject([issue(ErrorCode.PermissionDenied, '/agent_id', `agent ${JSON.stringify(agentId ?? null)} may not create tools on this runner`)]);
  }

  const { [DEPLOYMENT_FIELD]: _ignored, ...spec } = parsed.data.tool_spec;
  const name = typeof spec['name'] === 'string' ? spec['name'] : undefined;
  const requester = agentOwner(breadcrumb.created_by ?? agentId);
  if (name !== undefined) await deps.catalog.refreshName(name);
  const ownership = name !== undefined ? deps.catalog.ownership(name) : ({ kind: 'free' } as const);
  if (ownership.kind === 'reserved' && ownership.collidesWith !== undefined) {
    return reject([issue(ErrorCode.Conflict, '/tool_spec/name', `the name "${name}" exports to MCP and RAP as the name of the operator's tool "${ownership.collidesWith}"; choose another name`)]);
  }
  if ((ownership.kind === 'reserved' && ownership.by === 'bootstrap') || (ownership.kind === 'owned' && ownership.owner === OPERATOR)) {
    return reject([issue(ErrorCode.Conflict, '/tool_spec/name', `tool "${name}" is managed by the operator's bootstrap files and cannot be replaced by an agent`)]);
  }
  if (ownership.kind === 'reserved') {
    return reject([issue(ErrorCode.Conflict, '/tool_spec/name', `the name "${name}" is reserved by a host tool of the operator's manifests; choose another name`)]);
  }
  if (ownership.kind === 'owned' && ownership.owner !== requester) {
    return reject([issue(ErrorCode.PermissionDenied, '/tool_spec/name', `tool "${name}" belongs to ${ownership.owner}; only its owner can replace it (this request is from ${requester})`)]);
  }
  const target = chooseTarget(name ?? '', ownership, spec['version'], parsed.data.replaces_version);
  if (!target.ok) return reject([target.issue]);
  const existingId = target.replaces?.id;
  if (target.replaces && spec['version'] === undefined) spec['version'] = bumpPatch(target.replaces.version);
  if (spec['version'] === undefined) spec['version'] = '1.0.0';

  const check = validateToolDefinition(spec, { origin: 'agent', config, validator: deps.validator });
  const prefix = (list: CreateIssue[]): CreateIssue[] => list.map((i) => ({ ...i, path: `/tool_spec${i.path}` }));
  if (!check.ok) return reject(prefix(check.errors), prefix(check.warnings));
  const tool = check.tool;

  const secrets =
    tool.requiredSecrets.length > 0 && deps.secrets
      ? (await deps.secrets.resolve(tool.requiredSecrets, { tool: tool.name, rid, ...(existingId !== undefined ? { definitionId: existingId } : {}) })).values
      : undefined;
  const examples = await runExamples(tool, {
    ...(secrets ? { secrets } : {}),
    sandbox: deps.sandbox,
    validator: deps.validator,
    workspace: config.workspace,
    api: (t, index) => createToolApi({ client, tool: t.name, rid: `${rid}:example:${index + 1}`, config, schemas: t.apiSchemas }),
  });
  const failed = examples.map((e, index) => ({ e, index })).filter(({ e }) => !e.ok);
  if (failed.length > 0) {
    return reject(
      failed.map(({ e, index }) => issue('example.failed', `/tool_spec/examples/${index}`, `example ${index + 1} (${e.description}) failed: ${e.error ?? 'unknown'}`)),
      prefix(check.warnings),
      examples,
    );
  }

  const tags = [TAG.Tool, TAG.tool(tool.name), config.workspace, ...(agentId ? [`created-by:agent:${agentId}`] : [])];
  const context: Record<string, unknown> = { ...spec, name: tool.name, version: tool.version };
  const stamped = (id: string, version: number): Record<string, unknown> => ({
    ...context,
    [DEPLOYMENT_FIELD]: deps.stamper.stamp({ workspace: config.workspace, name: tool.name, owner: requester, id, version, context }),
  });
  const body = (deployment: Record<string, unknown>) => ({
    title: tool.name,
    description: tool.description,
    semantic_version: tool.version,
    schema_name: SCHEMA.ToolCode,
    tags,
    context: deployment,
  });
  let id: string;
  let status: 'created' | 'updated';
  try {
    if (existingId !== undefined) {
      // The owner's record, whatever state it is in now (it may have been tampered with): overwritten.
      const current = await client.getBreadcrumbFull(existingId);
      await client.updateBreadcrumb(existingId, body(stamped(existingId, current.version + 1)), { ifMatch: current.version });
      id = existingId;
      status = 'updated';
    } else {
      const pending = { ...context, [DEPLOYMENT_FIELD]: deps.stamper.pending(requester, rid) };
      ({ id } = await client.createBreadcrumb(body(pending), { idempotencyKey: deps.keys.toolCreateKey(breadcrumb.id) }));
      await client.updateBreadcrumb(id, { context: stamped(id, 2) }, { ifMatch: 1 });
      status = 'created';
    }
  } catch (error) {
    if (isVersionMismatch(error) || isNotFound(error)) {
      return reject([issue(ErrorCode.Conflict, '/tool_spec/name', `tool "${tool.name}" changed while this request was validated; retry with the new version`)], prefix(check.warnings), examples);
    }
    if (isConflict(error)) {
      return reject([issue(ErrorCode.Conflict, '', `this request (breadcrumb ${breadcrumb.id}) already created a tool`)], prefix(check.warnings), examples);
    }
    throw error;
  }
  return { rid, answer: { request_id: rid, status, tool: { id, name: tool.name, version: tool.version }, errors: [], warnings: prefix(check.warnings), examples } };
}

/** How many create-request ids the extension remembers by default (recent-ids.ts). */
export const MAX_SEEN_CREATE_REQUESTS = 10_000;

/** The service extension that watches for create requests (events + catch-up scans). */
export function createToolCreationExtension(options: { maxSeen?: number } = {}): ServiceExtension {
  const queue = new PQueue({ concurrency: 1 });
  /** Create requests queued or being answered (bounded: the store is the real record). */
  const seen = createRecentIds(options.maxSeen ?? MAX_SEEN_CREATE_REQUESTS);
  let deps: Deps | undefined;
  let ctx: ExtensionContext | undefined;

  const handle = (breadcrumb: CreateRequestRecord): void => {
    if (!deps || seen.has(breadcrumb.id) || ctx?.signal.aborted) return;
    seen.add(breadcrumb.id);
    const d = deps;
    void queue.add(async () => {
      const { rid } = createRequestRid(breadcrumb);
      const answered = await d.client.listBreadcrumbs({ schema_name: SCHEMA.ToolCreateResponse, tag: d.keys.answerTag(breadcrumb.id), limit: 1 });
      if (answered.length > 0) return;
      let result: { rid: string; answer: ToolCreateResponseContext };
      try {
        result = await processCreateRequest(d, breadcrumb);
      } catch (error) {
        const e = coerceError(error);
        d.logger.error('tool creation failed', { rid, error: e.message });
        result = { rid, answer: { request_id: rid, status: 'rejected', errors: [issue(e.code, '', e.message)], warnings: [], examples: [] } };
      }
      const extraTags = breadcrumb.tags.filter((tag) => tag.startsWith('agent:'));
      // Titled with the tool's name (the spec's when nothing was created), else the request id.
      const spec = breadcrumb.context['tool_spec'] as { name?: unknown } | undefined;
      const specName = typeof spec?.name === 'string' && spec.name !== '' ? spec.name : undefined;
      const title = `Tool ${result.answer.status}: ${result.answer.tool?.name ?? specName ?? result.rid}`;
      await d.responder.respondCreate({ breadcrumbId: breadcrumb.id, rid: result.rid }, result.answer, extraTags, title);
      d.logger.info('tool creation answered', { rid, status: result.answer.status, tool: result.answer.tool?.name, errors: result.answer.errors.length });
    }).catch((error: unknown) => {
      seen.delete(breadcrumb.id);
      d.logger.warn('tool creation answer not written; will retry on the next scan', { id: breadcrumb.id, error });
    });
  };

  const scan = async (): Promise<void> => {
    if (!deps || !ctx) return;
    const requests = await deps.client.listAll({ schema_name: SCHEMA.ToolCreateRequest, tag: ctx.config.workspace, include_context: true, limit: 200 });
    const responses = await deps.client.listAll({ schema_name: SCHEMA.ToolCreateResponse, tag: ctx.config.workspace, limit: 500 });
    const answered = new Set(responses.flatMap((r) => r.tags.filter((t) => t.startsWith(ANSWER_TAG_PREFIX))));
    for (const item of requests.reverse()) {
      if (answered.has(deps.keys.answerTag(item.id)) || seen.has(item.id)) continue;
      // The full record: who wrote it (created_by) and whether it was changed since (version).
      const full = await deps.client.getBreadcrumbFull(item.id).catch((error: unknown) => {
        ctx?.logger.warn('create request unreadable', { id: item.id, error });
        return undefined;
      });
      if (full) handle(full);
    }
  };

  return {
    name: 'tool-creation',
    async start(context) {
      ctx = context;
      deps = {
        client: context.client,
        keys: context.keys,
        sandbox: context.sandbox,
        config: context.config,
        logger: context.logger,
        responder: createResponder({ client: context.client, workspace: context.config.workspace, keys: context.keys, logger: context.logger }),
        validator: context.validator,
        stamper: context.stamper,
        catalog: context.catalog,
        secrets: context.secrets,
      };
      void scan().catch((error: unknown) => context.logger.warn('create-request scan failed', { error }));
    },
    handleEvent(event: StoreEvent) {
      if (event.type !== 'breadcrumb.updated' || event.schema_name !== SCHEMA.ToolCreateRequest || !event.breadcrumb_id) return;
      if (!ctx || !(event.tags ?? []).includes(ctx.config.workspace)) return;
      const id = event.breadcrumb_id;
      void ctx.client
        .getBreadcrumbFull(id)
        .then((full) => handle(full))
        .catch((error: unknown) => ctx?.logger.warn('create request unreadable', { id, error }));
    },
    onReconnect() {
      void scan().catch((error: unknown) => ctx?.logger.warn('create-request scan failed', { error }));
    },
    async stop() {
      queue.clear();
      await queue.onIdle();
    },
  };
}
