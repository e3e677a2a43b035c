// tool.create.request.v1 -> tool.create.response.v1: agents create (or replace) tools.
//
// A request is validated (agent policy: screening, permissions, schemas), its examples run in the
// sandbox, and only then is the tool.code.v1 written: created when the name is free, updated when
// the request names the version it replaces (`replaces_version`), otherwise rejected as a conflict
// — a silent overwrite of someone else's tool never happens, and tools managed by the operator's
// bootstrap files cannot be replaced by agents. The catalog picks the new tool up from the event
// stream, so it is runnable without a restart.
//
// Several replicas: the answer is written with `Idempotency-Key: create-response:<rid>`, the tool
// with `tool-create:<workspace>:<rid>` (create) or If-Match (update), so racing replicas produce one
// tool and one answer. Requests are handled one at a time (they run examples).

import PQueue from 'p-queue';
import type { StoreClient } from '../breadcrumbs/index.js';
import { isConflict, isNotFound, isVersionMismatch } from '../breadcrumbs/index.js';
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
import { createResponder, type Responder } from '../responder/responder.js';
import type { Sandbox } from '../sandbox/index.js';
import { createSchemaValidator, SEMVER, validateToolDefinition, type SchemaValidator } from '../screen/index.js';
import type { ExtensionContext, ServiceExtension } from '../service/service.js';
import { createToolApi } from '../service/tool-api.js';
import { findTool } from './bootstrap.js';
import { runExamples } from './examples.js';

interface Deps {
  client: StoreClient;
  sandbox: Sandbox;
  config: Config;
  logger: Logger;
  responder: Responder;
  validator: SchemaValidator;
  isBootstrapTool(name: string, source: string): boolean;
}

const issue = (code: string, path: string, message: string): CreateIssue => ({ code, path, message });

function bumpPatch(version: string): string {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? `${match[1]}.${match[2]}.${Number(match[3]) + 1}` : '1.0.1';
}

/** Handles one create request; returns the answer to write (pure policy + store writes of the tool). */
export async function processCreateRequest(deps: Deps, breadcrumb: { id: string; tags: string[]; context: Record<string, unknown> }): Promise<{ rid: string; answer: ToolCreateResponseContext }> {
  const { client, config } = deps;
  const rawRid = breadcrumb.context['request_id'];
  const rid = typeof rawRid === 'string' && rawRid !== '' ? rawRid : breadcrumb.id;
  const reject = (errors: CreateIssue[], warnings: CreateIssue[] = [], examples: ToolCreateResponseContext['examples'] = []) => ({
    rid,
    answer: { request_id: rid, status: 'rejected' as const, errors, warnings, examples },
  });

  const parsed = ToolCreateRequestContext.safeParse(breadcrumb.context);
  if (!parsed.success) {
    return reject(parsed.error.issues.map((i) => issue(ErrorCode.InputInvalid, '/' + i.path.join('/'), i.message)));
  }
  const agentTag = breadcrumb.tags.find((tag) => tag.startsWith('agent:'))?.slice('agent:'.length);
  const agentId = parsed.data.agent_id ?? agentTag;
  if (!config.toolCreation) return reject([issue(ErrorCode.PermissionDenied, '', 'tool creation is disabled on this runner')]);
  if (config.toolCreationAgents.length > 0 && (!agentId || !config.toolCreationAgents.includes(agentId))) {
    return reject([issue(ErrorCode.PermissionDenied, '/agent_id', `agent ${JSON.stringify(agentId ?? null)} may not create tools on this runner`)]);
  }

  const spec = { ...parsed.data.tool_spec };
  const name = typeof spec['name'] === 'string' ? spec['name'] : undefined;
  const existing = name ? await findTool(client, name, config.workspace) : undefined;
  const existingVersion = existing && typeof existing.context['version'] === 'string' ? existing.context['version'] : undefined;
  if (existing) {
    const source = (existing.context['code'] as { source?: unknown } | undefined)?.source;
    if (typeof source === 'string' && deps.isBootstrapTool(name as string, source)) {
      return reject([issue(ErrorCode.Conflict, '/tool_spec/name', `tool "${name}" is managed by the operator's bootstrap files and cannot be replaced by an agent`)]);
    }
    if (parsed.data.replaces_version === undefined) {
      return reject([issue(ErrorCode.Conflict, '/tool_spec/name', `a tool named "${name}" already exists (version ${existingVersion ?? 'unknown'}); set replaces_version to "${existingVersion ?? ''}" to replace it`)]);
    }
    if (parsed.data.replaces_version !== existingVersion) {
      return reject([issue(ErrorCode.Conflict, '/replaces_version', `replaces_version is "${parsed.data.replaces_version}" but the current version of "${name}" is "${existingVersion ?? 'unknown'}"`)]);
    }
    if (spec['version'] === undefined) spec['version'] = bumpPatch(existingVersion ?? '1.0.0');
    else if (spec['version'] === existingVersion) {
      return reject([issue(ErrorCode.Conflict, '/tool_spec/version', `version "${existingVersion}" is the version being replaced; give the new tool a new version`)]);
    }
  } else if (parsed.data.replaces_version !== undefined) {
    return reject([issue(ErrorCode.Conflict, '/replaces_version', `replaces_version is set but no tool named "${name ?? ''}" exists`)]);
  }
  if (spec['version'] === undefined) spec['version'] = '1.0.0';

  const check = validateToolDefinition(spec, { origin: 'agent', config, validator: deps.validator });
  const prefix = (list: CreateIssue[]): CreateIssue[] => list.map((i) => ({ ...i, path: `/tool_spec${i.path}` }));
  if (!check.ok) return reject(prefix(check.errors), prefix(check.warnings));
  const tool = check.tool;

  const examples = await runExamples(tool, {
    sandbox: deps.sandbox,
    validator: deps.validator,
    workspace: config.workspace,
    api: (t, index) => createToolApi({ client, tool: t.name, rid: `${rid}:example:${index + 1}` }),
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
  const body = {
    title: tool.name,
    description: tool.description,
    semantic_version: tool.version,
    schema_name: SCHEMA.ToolCode,
    tags,
    context: { ...spec, name: tool.name, version: tool.version },
  };
  let id: string;
  let status: 'created' | 'updated';
  try {
    if (existing) {
      await client.updateBreadcrumb(existing.id, body, { ifMatch: existing.version });
      id = existing.id;
      status = 'updated';
    } else {
      ({ id } = await client.createBreadcrumb(body, { idempotencyKey: `tool-create:${config.workspace}:${rid}` }));
      status = 'created';
    }
  } catch (error) {
    if (isVersionMismatch(error) || isNotFound(error)) {
      return reject([issue(ErrorCode.Conflict, '/tool_spec/name', `tool "${tool.name}" changed while this request was validated; retry with the new version`)], prefix(check.warnings), examples);
    }
    if (isConflict(error)) {
      return reject([issue(ErrorCode.Conflict, '', `this request already created a tool (idempotency key tool-create:${rid})`)], prefix(check.warnings), examples);
    }
    throw error;
  }
  return { rid, answer: { request_id: rid, status, tool: { id, name: tool.name, version: tool.version }, errors: [], warnings: prefix(check.warnings), examples } };
}

/** The service extension that watches for create requests (events + catch-up scans). */
export function createToolCreationExtension(): ServiceExtension {
  const queue = new PQueue({ concurrency: 1 });
  const seen = new Set<string>();
  let deps: Deps | undefined;
  let ctx: ExtensionContext | undefined;

  const handle = (breadcrumb: { id: string; tags: string[]; context: Record<string, unknown> }): void => {
    if (!deps || seen.has(breadcrumb.id) || ctx?.signal.aborted) return;
    seen.add(breadcrumb.id);
    const d = deps;
    void queue.add(async () => {
      const rawRid = breadcrumb.context['request_id'];
      const rid = typeof rawRid === 'string' && rawRid !== '' ? rawRid : breadcrumb.id;
      const answered = await d.client.listBreadcrumbs({ schema_name: SCHEMA.ToolCreateResponse, tag: TAG.request(rid), limit: 1 });
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
      const spec = breadcrumb.context['tool_spec'] as { name?: unknown } | undefined;
      const specName = typeof spec?.name === 'string' && spec.name !== '' ? spec.name : undefined;
      await d.responder.respondCreate(result.rid, result.answer, extraTags, undefined, specName);
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
    const answered = new Set(responses.flatMap((r) => r.tags.filter((t) => t.startsWith('request:')).map((t) => t.slice('request:'.length))));
    for (const item of requests.reverse()) {
      const context = item.context ?? {};
      const rawRid = context['request_id'];
      const rid = typeof rawRid === 'string' && rawRid !== '' ? rawRid : item.id;
      if (!answered.has(rid)) handle({ id: item.id, tags: item.tags, context });
    }
  };

  return {
    name: 'tool-creation',
    async start(context) {
      ctx = context;
      deps = {
        client: context.client,
        sandbox: context.sandbox,
        config: context.config,
        logger: context.logger,
        responder: createResponder({ client: context.client, workspace: context.config.workspace, logger: context.logger }),
        validator: createSchemaValidator(),
        isBootstrapTool: context.isBootstrapTool,
      };
      void scan().catch((error: unknown) => context.logger.warn('create-request scan failed', { error }));
    },
    handleEvent(event: StoreEvent) {
      if (event.type !== 'breadcrumb.updated' || event.schema_name !== SCHEMA.ToolCreateRequest || !event.breadcrumb_id) return;
      if (!ctx || !(event.tags ?? []).includes(ctx.config.workspace)) return;
      const id = event.breadcrumb_id;
      void ctx.client
        .getBreadcrumbFull(id)
        .then((full) => handle({ id, tags: full.tags, context: full.context }))
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
