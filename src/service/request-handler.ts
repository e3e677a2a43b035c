// One request, start to finish: claim -> read -> route -> validate -> secrets -> execute ->
// validate output -> respond -> tidy the claim.
//
// Every path that owns a claim ends in exactly one tool.response.v1, except a drain that aborts the
// job mid-run: then the claim is released without an answer so another replica (or this one after
// a restart) runs the request. The claim's lease is renewed while the job runs.

import { setTimeout as sleep } from 'node:timers/promises';
import type { StoreClient } from '../breadcrumbs/index.js';
import { isNotFound } from '../breadcrumbs/index.js';
import { requestIdentity, SCHEMA, TAG, ToolRequestContext, type BreadcrumbFull, type RequestIdentity } from '../breadcrumbs/messages.js';
import type { Catalog, Route } from '../catalog/catalog.js';
import type { Config } from '../config/index.js';
import { coerceError, ErrorCode } from '../errors.js';
import type { HostTool } from '../legacy/index.js';
import type { Logger } from '../logger.js';
import type { Responder } from '../responder/responder.js';
import { failure, jsonDepthExceeds, MAX_JSON_DEPTH, type ExecutionResult } from '../result.js';
import type { Sandbox } from '../sandbox/index.js';
import type { ClaimManager } from '../watcher/claims.js';
import { RequestWithdrawn, type JobOutcome, type PendingRequest } from '../watcher/intake.js';
import type { SecretResolver } from './secrets.js';
import { createToolApi } from './tool-api.js';

export interface SchemaValidator {
  validate(schema: object, data: unknown): { valid: boolean; errors: Array<{ path: string; message: string }> };
}

export interface ExecutionReport {
  rid: string;
  tool: string;
  kind: 'code' | 'host' | 'none';
  status: 'success' | 'error';
  code?: string;
  durationMs: number;
  /** The requesting agent, when the request names one. */
  agentId?: string;
}

export interface RequestHandlerOptions {
  client: StoreClient;
  claims: ClaimManager;
  catalog: Catalog;
  sandbox: Sandbox;
  responder: Responder;
  secrets: SecretResolver;
  validator: SchemaValidator;
  config: Config;
  logger: Logger;
  replica: string;
  /** Runs a host tool (legacy seam); undefined when no manifests are configured. */
  executeHost?(tool: HostTool, input: unknown, ctx: { rid: string; signal: AbortSignal; breadcrumbId?: string }): Promise<ExecutionResult>;
  /** Requests created before this (epoch ms) were answered by an older runner if a `request:<rid>` response exists. */
  legacyCutoverMs?: number;
  /** Aborted only when the service must stop NOW (not at drain start). */
  hardStop: AbortSignal;
  onStarted?(report: { rid: string; tool: string; agentId?: string }): void;
  onFinished?(report: ExecutionReport): void;
}

interface Executed {
  tool: string;
  kind: ExecutionReport['kind'];
  result: ExecutionResult;
  metadata: Record<string, unknown>;
}

/** How often a completed run's answer write is attempted before the job gives up (its lease then expires). */
const ANSWER_TRIES = 8;

/** Replaces a result nested too deeply to store with an output.invalid error. */
function limitDepth(result: ExecutionResult): ExecutionResult {
  if (!result.ok || !jsonDepthExceeds(result.output)) return result;
  const { durationMs, logs, logsTruncated } = result;
  return { ok: false, durationMs, logs, logsTruncated, error: failure(ErrorCode.OutputInvalid, `output is nested deeper than ${MAX_JSON_DEPTH} levels`) };
}

const errorResult = (code: ErrorCode, message: string, details?: Record<string, unknown>): ExecutionResult => ({
  ok: false,
  error: failure(code, message, details),
  durationMs: 0,
  logs: [],
  logsTruncated: false,
});

function formatErrors(errors: Array<{ path: string; message: string }>, max = 10): string {
  const shown = errors.slice(0, max).map((e) => `${e.path || '/'}: ${e.message}`);
  return shown.join('; ') + (errors.length > max ? `; and ${errors.length - max} more` : '');
}

/** Creates the per-request pipeline used by the queue's jobs. */
export function createRequestHandler(options: RequestHandlerOptions) {
  const { client, claims, catalog, sandbox, responder, secrets, validator, config, logger } = options;

  const route = async (name: string): Promise<Route | undefined> => {
    const found = catalog.resolve(name);
    if (found) return found;
    await catalog.refreshName(name);
    return catalog.resolve(name);
  };

  const execute = async (full: Pick<BreadcrumbFull, 'tags' | 'context'>, identity: RequestIdentity, signal: AbortSignal): Promise<Executed> => {
    const { rid, tool: toolName, agentId } = identity;
    if (identity.problem) {
      return { tool: toolName, kind: 'none', metadata: {}, result: errorResult(ErrorCode.InputInvalid, `malformed tool.request.v1: ${identity.problem}`) };
    }
    const parsed = ToolRequestContext.safeParse(full.context);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'context'}: ${i.message}`).join('; ');
      return { tool: toolName, kind: 'none', metadata: {}, result: errorResult(ErrorCode.InputInvalid, `malformed tool.request.v1: ${problems}`) };
    }
    const { input } = parsed.data;
    if (jsonDepthExceeds(input)) {
      return { tool: toolName, kind: 'none', metadata: {}, result: errorResult(ErrorCode.InputInvalid, `input is nested deeper than ${MAX_JSON_DEPTH} levels`) };
    }
    const target = await route(toolName);
    if (!target) {
      const rejected = catalog.rejected().find((r) => r.name === toolName);
      const why = rejected?.errors[0] ? ` (a tool.code.v1 named "${toolName}" exists but was rejected: ${rejected.errors[0].path}: ${rejected.errors[0].message})` : '';
      return { tool: toolName, kind: 'none', metadata: {}, result: errorResult(ErrorCode.ToolNotFound, `no runnable tool named "${toolName}"${why}`) };
    }

    if (target.kind === 'host') {
      const metadata = { kind: 'host', transport: target.tool.transport.kind, replica: options.replica };
      if (target.tool.inputSchema) {
        const check = validator.validate(target.tool.inputSchema, input);
        if (!check.valid) {
          return { tool: toolName, kind: 'host', metadata, result: errorResult(ErrorCode.InputInvalid, `input does not match the input schema of "${toolName}": ${formatErrors(check.errors)}`, { errors: check.errors }) };
        }
      }
      if (!options.executeHost) {
        return { tool: toolName, kind: 'host', metadata, result: errorResult(ErrorCode.ToolNotFound, `host tool "${toolName}" has no executor`) };
      }
      return { tool: toolName, kind: 'host', metadata, result: limitDepth(await options.executeHost(target.tool, input, { rid, signal, breadcrumbId: identity.breadcrumbId })) };
    }

    const tool = target.tool;
    const metadata: Record<string, unknown> = { kind: 'code', tool_version: tool.version, tool_id: target.breadcrumbId, replica: options.replica };
    const inputCheck = validator.validate(tool.inputSchema, input);
    if (!inputCheck.valid) {
      return { tool: toolName, kind: 'code', metadata, result: errorResult(ErrorCode.InputInvalid, `input does not match the input_schema of "${toolName}": ${formatErrors(inputCheck.errors)}`, { errors: inputCheck.errors }) };
    }
    const resolved = await secrets.resolve(tool.requiredSecrets, { tool: toolName, rid, definitionId: target.breadcrumbId, operator: target.owner === 'operator' });
    if (resolved.missing.length > 0) {
      return { tool: toolName, kind: 'code', metadata, result: errorResult(ErrorCode.SecretMissing, `tool "${toolName}" needs secret(s) that are not set: ${resolved.missing.join(', ')}`, { missing: resolved.missing }) };
    }
    const result = limitDepth(await sandbox.run({
      tool: { name: tool.name, version: tool.version, source: tool.source, net: tool.net, api: tool.api, extraPermissions: tool.extraPermissions, timeoutMs: tool.timeoutMs, memoryMb: tool.memoryMb },
      input,
      secrets: resolved.values,
      request: { id: rid, workspace: config.workspace, ...(agentId ? { agentId } : {}) },
      ...(tool.api ? { api: createToolApi({ client, tool: toolName, rid, config }) } : {}),
      signal,
    }));
    if (result.ok) {
      const outputCheck = validator.validate(tool.outputSchema, result.output);
      if (!outputCheck.valid) {
        return {
          tool: toolName,
          kind: 'code',
          metadata,
          result: {
            ok: false,
            durationMs: result.durationMs,
            logs: result.logs,
            logsTruncated: result.logsTruncated,
            error: failure(ErrorCode.OutputInvalid, `output does not match the output_schema of "${toolName}": ${formatErrors(outputCheck.errors)}`, { errors: outputCheck.errors }),
          },
        };
      }
    }
    return { tool: toolName, kind: 'code', metadata, result };
  };

  const handle = async (request: PendingRequest, signal: AbortSignal): Promise<JobOutcome> => {
    const acquired = await claims.acquire({ breadcrumbId: request.breadcrumbId, rid: request.rid });
    if (acquired.kind !== 'acquired') return acquired.kind;
    const claim = acquired.claim;
    const log = logger.child({ rid: request.rid, tool: request.tool, attempt: claim.attempt });
    const renewEvery = Math.max(250, Math.floor(config.claimTtlMs / 3));
    const renewal = setInterval(() => {
      claim.renew().catch((error: unknown) => log.warn('claim renewal failed', { error }));
    }, renewEvery);
    try {
      let full: Pick<BreadcrumbFull, 'tags' | 'context' | 'created_at'>;
      try {
        full = request.snapshot ?? (await client.getBreadcrumbFull(request.breadcrumbId));
      } catch (error) {
        if (!isNotFound(error)) throw error;
        log.info('request deleted before it ran');
        await claims.cleanup(request.breadcrumbId);
        return 'answered';
      }
      // The record actually run decides the identity (it may differ from the event that queued it).
      const identity = requestIdentity({ id: request.breadcrumbId, tags: full.tags, context: full.context });
      const { rid } = identity;
      if (full.created_at !== undefined && Date.parse(full.created_at) < (options.legacyCutoverMs ?? 0)) {
        const legacy = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolResponse, tag: TAG.request(rid), limit: 1 });
        if (legacy.length > 0) {
          log.info('request answered by an older runner; not run again');
          await claim.drop();
          return 'answered';
        }
      }
      options.onStarted?.({ rid, tool: identity.tool, ...(identity.agentId ? { agentId: identity.agentId } : {}) });
      const startedAt = performance.now();
      let executed: Executed;
      try {
        executed = await execute(full, identity, signal);
      } catch (error) {
        // Infrastructure trouble on the way (secrets API, catalog refresh): still an answer.
        const e = coerceError(error);
        log.warn('request failed before or around execution', { code: e.code, error: e.message });
        executed = {
          tool: identity.tool,
          kind: 'none',
          metadata: { replica: options.replica },
          result: { ok: false, error: failure(e.code, e.message), durationMs: performance.now() - startedAt, logs: [], logsTruncated: false },
        };
      }
      if (signal.aborted && signal.reason instanceof RequestWithdrawn) {
        log.info('request deleted while it ran; no answer');
        await claim.drop();
        return 'withdrawn';
      }
      if (signal.aborted) {
        log.warn('job aborted by drain, releasing its claim');
        await claim.release().catch((error: unknown) => log.warn('claim release failed', { error }));
        return 'released';
      }
      const totalMs = performance.now() - startedAt;
      const extraTags = full.tags.filter((tag) => tag.startsWith('agent:'));
      const answer = {
        requestBreadcrumbId: request.breadcrumbId,
        rid,
        tool: executed.tool,
        result: executed.result,
        extraTags,
        metadata: { ...executed.metadata, attempt: claim.attempt, total_ms: Math.round(totalMs * 1000) / 1000 },
      };
      // A completed run always ends in an answer: keep trying through store trouble until the
      // service must stop (then the lease runs out and another attempt answers).
      for (let tries = 1; ; tries++) {
        try {
          await responder.respond(answer, options.hardStop);
          break;
        } catch (error) {
          if (options.hardStop.aborted || tries >= ANSWER_TRIES) throw error;
          log.warn('answer write failed, retrying', { tries, error });
          await sleep(Math.min(5_000, 200 * 2 ** tries), undefined, { signal: options.hardStop }).catch(() => undefined);
        }
      }
      void claim.drop();
      const report: ExecutionReport = {
        rid,
        tool: executed.tool,
        kind: executed.kind,
        status: executed.result.ok ? 'success' : 'error',
        ...(executed.result.ok ? {} : { code: executed.result.error.code }),
        durationMs: totalMs,
        ...(identity.agentId ? { agentId: identity.agentId } : {}),
      };
      options.onFinished?.(report);
      log.info('request answered', { status: report.status, code: report.code, durationMs: Math.round(totalMs) });
      return 'answered';
    } finally {
      clearInterval(renewal);
    }
  };

  return { handle };
}

export type RequestHandler = ReturnType<typeof createRequestHandler>;

