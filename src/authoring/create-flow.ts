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
// A create request is a request kind of the one request path (src/request): intake finds it (events
// and catch-up scans), the job claims it (so with several replicas exactly one runs its examples),
// reads it, hands it to the create executor below (validate, test the examples, deploy) and the
// responder writes its one tool.create.response.v1. The tool is written with
// `Idempotency-Key: tool-create:<request>` (create) or If-Match (update), so even a takeover after a
// crash mid-deploy produces one tool.

import semver from 'semver';
import type { Catalog, Ownership } from '../catalog/catalog.js';
import { agentOwner, DEPLOYMENT_FIELD, OPERATOR, type Stamper } from '../catalog/deployment.js';
import type { StoreClient } from '../breadcrumbs/index.js';
import { isConflict, isNotFound, isVersionMismatch, type RequestKeys } from '../breadcrumbs/index.js';
import {
  SCHEMA,
  TAG,
  ToolCreateRequestContext,
  type CreateIssue,
  type ToolCreateResponseContext,
} from '../breadcrumbs/messages.js';
import type { Config } from '../config/index.js';
import { ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { createRequestRid } from '../request/events.js';
import type { CreateExecutor, CreateRequestRecord } from '../request/execute.js';
import type { Sandbox } from '../sandbox/index.js';
import { validateToolDefinition, type SchemaValidator } from '../screen/index.js';
import { missingSecretsMessage, type SecretResolver } from '../tool-context/secrets.js';
import { createToolApi } from '../tool-context/tool-api.js';
import { runExamples } from './examples.js';

export interface CreateFlowDeps {
  client: StoreClient;
  keys: RequestKeys;
  sandbox: Sandbox;
  config: Config;
  logger: Logger;
  validator: SchemaValidator;
  stamper: Stamper;
  catalog: Pick<Catalog, 'ownership' | 'refreshName'>;
  /** Secrets for the examples: shared ones, and scope tool/<id> only when the owner replaces that definition. */
  secrets?: SecretResolver;
  /** Resolves once the service is running (operator tools pinned by bootstrap): no create is decided before. */
  ready?: Promise<void>;
}

type Deps = CreateFlowDeps;

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
function chooseTarget(
  name: string,
  ownership: Ownership,
  specVersion: unknown,
  replacesVersion: string | undefined,
): Target {
  const existing =
    ownership.kind === 'owned'
      ? ownership.versions.flatMap((v) => (v.id !== undefined ? [{ version: v.version, id: v.id }] : []))
      : [];
  const conflict = (path: string, message: string): Target => ({
    ok: false,
    issue: issue(ErrorCode.Conflict, path, message),
  });
  const list = existing.map((v) => v.version).join(', ');
  if (existing.length === 0) {
    return replacesVersion === undefined
      ? { ok: true }
      : conflict('/replaces_version', `replaces_version is set but no tool named "${name}" exists`);
  }
  const version = typeof specVersion === 'string' ? semver.valid(specVersion) : null;
  const replaced = existing.find((v) => v.version === replacesVersion);
  if (
    version !== null &&
    !existing.some((v) => semver.valid(v.version) !== null && semver.major(v.version) === semver.major(version))
  ) {
    if (replacesVersion !== undefined && !replaced)
      return conflict(
        '/replaces_version',
        `replaces_version is "${replacesVersion}" but "${name}" has no such version (versions: ${list})`,
      );
    return { ok: true };
  }
  const sameMajor =
    version !== null
      ? existing.filter((v) => semver.valid(v.version) !== null && semver.major(v.version) === semver.major(version))
      : existing;
  const current = sameMajor[0] ?? existing[0];
  if (replacesVersion === undefined) {
    return conflict(
      '/tool_spec/name',
      `a tool named "${name}" already exists (version ${current?.version ?? 'unknown'}); set replaces_version to "${current?.version ?? ''}" to replace it, or give tool_spec.version a new major to publish it beside the existing version(s)`,
    );
  }
  if (!replaced) {
    return conflict(
      '/replaces_version',
      `replaces_version is "${replacesVersion}" but the current version of "${name}" is "${existing.length === 1 ? current?.version : list}"`,
    );
  }
  if (version !== null && !sameMajor.includes(replaced)) {
    return conflict(
      '/replaces_version',
      `version "${version}" is a minor/patch of major ${semver.major(version)}, so it replaces a version of that major (${sameMajor.map((v) => v.version).join(', ')}), not "${replacesVersion}"`,
    );
  }
  if (typeof specVersion === 'string' && specVersion === replacesVersion) {
    return conflict(
      '/tool_spec/version',
      `version "${replacesVersion}" is the version being replaced; give the new tool a new version`,
    );
  }
  const clash =
    version !== null
      ? existing.find((v) => semver.valid(v.version) !== null && semver.eq(v.version, version))
      : undefined;
  if (clash)
    return conflict(
      '/tool_spec/version',
      `version "${version}" of "${name}" already exists (definition ${clash.id}); give the new tool a new version`,
    );
  return { ok: true, replaces: replaced };
}

/** Handles one create request; returns the answer to write (pure policy + store writes of the tool). */
export async function processCreateRequest(
  deps: Deps,
  breadcrumb: CreateRequestRecord,
  signal?: AbortSignal,
): Promise<{ rid: string; answer: ToolCreateResponseContext }> {
  const { client, config } = deps;
  const { rid, problem } = createRequestRid(breadcrumb);
  const reject = (
    errors: CreateIssue[],
    warnings: CreateIssue[] = [],
    examples: ToolCreateResponseContext['examples'] = [],
  ) => ({
    rid,
    answer: { request_id: rid, status: 'rejected' as const, errors, warnings, examples },
  });
  if (problem) return reject([issue(ErrorCode.InputInvalid, '/request_id', problem)]);

  const parsed = ToolCreateRequestContext.safeParse(breadcrumb.context);
  if (!parsed.success) {
    return reject(parsed.error.issues.map((i) => issue(ErrorCode.InputInvalid, '/' + i.path.join('/'), i.message)));
  }
  if (breadcrumb.version !== undefined && breadcrumb.version > 1) {
    return reject([
      issue(
        ErrorCode.PermissionDenied,
        '',
        `tool.create.request.v1 ${breadcrumb.id} was changed after it was written (store version ${breadcrumb.version}); write a new request instead`,
      ),
    ]);
  }
  const agentTag = breadcrumb.tags.find((tag) => tag.startsWith('agent:'))?.slice('agent:'.length);
  const agentId = parsed.data.agent_id ?? agentTag;
  if (!config.toolCreation)
    return reject([issue(ErrorCode.PermissionDenied, '', 'tool creation is disabled on this runner')]);
  if (config.toolCreationAgents.length > 0 && (!agentId || !config.toolCreationAgents.includes(agentId))) {
    return reject([
      issue(
        ErrorCode.PermissionDenied,
        '/agent_id',
        `agent ${JSON.stringify(agentId ?? null)} may not create tools on this runner`,
      ),
    ]);
  }

  const { [DEPLOYMENT_FIELD]: _ignored, ...spec } = parsed.data.tool_spec;
  const name = typeof spec['name'] === 'string' ? spec['name'] : undefined;
  const requester = agentOwner(breadcrumb.created_by ?? agentId);
  if (name !== undefined) await deps.catalog.refreshName(name);
  const ownership = name !== undefined ? deps.catalog.ownership(name) : ({ kind: 'free' } as const);
  if (ownership.kind === 'reserved' && ownership.collidesWith !== undefined) {
    return reject([
      issue(
        ErrorCode.Conflict,
        '/tool_spec/name',
        `the name "${name}" exports to MCP and RAP as the name of the operator's tool "${ownership.collidesWith}"; choose another name`,
      ),
    ]);
  }
  if (
    (ownership.kind === 'reserved' && ownership.by === 'bootstrap') ||
    (ownership.kind === 'owned' && ownership.owner === OPERATOR)
  ) {
    return reject([
      issue(
        ErrorCode.Conflict,
        '/tool_spec/name',
        `tool "${name}" is managed by the operator's bootstrap files and cannot be replaced by an agent`,
      ),
    ]);
  }
  if (ownership.kind === 'reserved') {
    return reject([
      issue(
        ErrorCode.Conflict,
        '/tool_spec/name',
        `the name "${name}" is reserved by a host tool of the operator's manifests; choose another name`,
      ),
    ]);
  }
  if (ownership.kind === 'owned' && ownership.owner !== requester) {
    return reject([
      issue(
        ErrorCode.PermissionDenied,
        '/tool_spec/name',
        `tool "${name}" belongs to ${ownership.owner}; only its owner can replace it (this request is from ${requester})`,
      ),
    ]);
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

  // An agent tool's examples get what its calls would: its own scoped secrets and shared ones (secrets.ts).
  const resolved =
    tool.requiredSecrets.length > 0 && deps.secrets
      ? await deps.secrets.resolve(tool.requiredSecrets, {
          tool: tool.name,
          rid,
          ...(existingId !== undefined ? { definitionId: existingId } : {}),
        })
      : undefined;
  if (resolved && resolved.unshared.length > 0)
    return reject([
      issue(ErrorCode.SecretMissing, '/tool_spec/required_secrets', missingSecretsMessage(tool.name, resolved)),
    ]);
  const secrets = resolved?.values;
  const examples = await runExamples(tool, {
    ...(secrets ? { secrets } : {}),
    sandbox: deps.sandbox,
    validator: deps.validator,
    workspace: config.workspace,
    ...(signal ? { signal } : {}),
    api: (t, index) =>
      createToolApi({ client, tool: t.name, rid: `${rid}:example:${index + 1}`, config, schemas: t.apiSchemas }),
  });
  const failed = examples.map((e, index) => ({ e, index })).filter(({ e }) => !e.ok);
  if (failed.length > 0) {
    return reject(
      failed.map(({ e, index }) =>
        issue(
          'example.failed',
          `/tool_spec/examples/${index}`,
          `example ${index + 1} (${e.description}) failed: ${e.error ?? 'unknown'}`,
        ),
      ),
      prefix(check.warnings),
      examples,
    );
  }

  const tags = [TAG.Tool, TAG.tool(tool.name), config.workspace, ...(agentId ? [`created-by:agent:${agentId}`] : [])];
  const context: Record<string, unknown> = { ...spec, name: tool.name, version: tool.version };
  const stamped = (id: string, version: number): Record<string, unknown> => ({
    ...context,
    [DEPLOYMENT_FIELD]: deps.stamper.stamp({
      workspace: config.workspace,
      name: tool.name,
      owner: requester,
      id,
      version,
      context,
    }),
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
      await client.updateBreadcrumb(existingId, body(stamped(existingId, current.version + 1)), {
        ifMatch: current.version,
      });
      id = existingId;
      status = 'updated';
    } else {
      const pending = { ...context, [DEPLOYMENT_FIELD]: deps.stamper.pending(requester, rid) };
      ({ id } = await client.createBreadcrumb(body(pending), {
        idempotencyKey: deps.keys.toolCreateKey(breadcrumb.id),
      }));
      await client.updateBreadcrumb(id, { context: stamped(id, 2) }, { ifMatch: 1 });
      status = 'created';
    }
  } catch (error) {
    if (isVersionMismatch(error) || isNotFound(error)) {
      return reject(
        [
          issue(
            ErrorCode.Conflict,
            '/tool_spec/name',
            `tool "${tool.name}" changed while this request was validated; retry with the new version`,
          ),
        ],
        prefix(check.warnings),
        examples,
      );
    }
    if (isConflict(error)) {
      return reject(
        [issue(ErrorCode.Conflict, '', `this request (breadcrumb ${breadcrumb.id}) already created a tool`)],
        prefix(check.warnings),
        examples,
      );
    }
    throw error;
  }
  return {
    rid,
    answer: {
      request_id: rid,
      status,
      tool: { id, name: tool.name, version: tool.version },
      errors: [],
      warnings: prefix(check.warnings),
      examples,
    },
  };
}

/**
 * The create executor of the request path (src/request/execute.ts, CreateExecutor): create requests
 * are claimed, read and answered by the path's one job like every request; this runs one. Creates
 * of the same tool name run one at a time on a replica (they would race for the name); others run
 * side by side.
 */
export function createCreateExecutor(deps: Deps): CreateExecutor {
  /** Tool name -> the create of it that runs now (its successors wait for it). */
  const running = new Map<string, Promise<unknown>>();
  return {
    async run(record, signal) {
      if (deps.ready) await untilReady(deps.ready, signal);
      const spec = record.context['tool_spec'] as { name?: unknown } | undefined;
      const name = typeof spec?.name === 'string' ? spec.name : '';
      const before = running.get(name);
      const mine = (before ?? Promise.resolve())
        .catch(() => undefined)
        .then(() => processCreateRequest(deps, record, signal));
      running.set(name, mine);
      try {
        return await mine;
      } finally {
        if (running.get(name) === mine) running.delete(name);
      }
    },
  };
}

/** Waits for `ready`; throws once `signal` aborts first (the job then releases its claim). */
function untilReady(ready: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(coerceAbort(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(coerceAbort(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    void ready.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

function coerceAbort(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted before the service was running');
}
