// The console's JSON API under /api (and its built pages at /): the catalog, a tool's page, live
// screening, example runs in the real sandbox, calls and tool creation through the store (real
// tool.request.v1 / tool.create.request.v1 records, answered by the runner like any agent's), and
// the request inspector. Access control happens before this (admin-server + access.ts).

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestKeys, StoreClient } from '../breadcrumbs/index.js';
import { createRequestClient, isNotFound } from '../breadcrumbs/index.js';
import { SCHEMA, TAG } from '../breadcrumbs/messages.js';
import type { Catalog, Route } from '../catalog/catalog.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';
import type { Sandbox } from '../sandbox/index.js';
import { validateToolDefinition, type SchemaValidator, type ToolDefinition } from '../screen/index.js';
import { createToolApi } from '../tool-context/tool-api.js';
import { HttpError, sendError, sendJson as sendJsonWith } from '../http.js';
import { defaultAssetsDir, JSON_HEADERS, loadAssets, readJsonObject } from './http.js';
import { inspectRequest } from './inspect.js';
import { runExample, type ExampleRun, type RunExamplesOptions } from '../authoring/examples.js';
import { createConsoleStats, type ConsoleStats } from './stats.js';
import { createToolIndex } from './tool-index.js';
import { BoundedMap } from '../bounded.js';

/** The agent id the console writes requests as (`agent:console`). */
export const CONSOLE_AGENT = 'console';

export interface ConsoleOptions {
  config: Config;
  client: StoreClient;
  keys: RequestKeys;
  catalog: Catalog;
  sandbox: Sandbox;
  validator: SchemaValidator;
  logger: Logger;
  /** The runner's health document (queue, pool, intake). */
  health(): Record<string, unknown>;
  /** Where the built browser files are (default dist/console/public). */
  assetsDir?: string;
  /** The status of a named extension (GET /api/extensions/<name>), undefined when there is none. */
  extensionStatus?(name: string): unknown;
}

export interface ConsoleApi {
  /** Execution figures; feed it the request handler's reports. */
  stats: ConsoleStats;
  /** Serves a console path (pages, /api/*); false when the path is not the console's. */
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean>;
}

/** A console JSON reply (with the console's headers). */
const sendJson = (res: ServerResponse, status: number, body: unknown): void =>
  sendJsonWith(res, status, body, JSON_HEADERS);

const MAX_REMEMBERED = 10_000;
const NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

function decode(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new HttpError(
      400,
      'bad_request',
      `${what} ${JSON.stringify(raw.slice(0, 140))} is not valid percent-encoding`,
    );
  }
}

function toolName(raw: string): string {
  const name = decode(raw, 'tool name');
  if (!NAME.test(name)) throw new HttpError(404, 'not_found', `no tool named ${JSON.stringify(name.slice(0, 140))}`);
  return name;
}

function specOf(body: Record<string, unknown>): Record<string, unknown> {
  const spec = body['tool_spec'];
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new HttpError(
      400,
      'bad_request',
      `tool_spec must be a JSON object, got ${spec === null ? 'null' : Array.isArray(spec) ? 'an array' : typeof spec}`,
    );
  }
  return spec as Record<string, unknown>;
}

/** The definition a code tool runs with, as a tool_spec (when its record is not in the index). */
function codeDefinition(t: ToolDefinition): Record<string, unknown> {
  return {
    name: t.name,
    description: t.description,
    version: t.version,
    code: { language: t.language, source: t.source },
    input_schema: t.inputSchema,
    output_schema: t.outputSchema,
    permissions: { net: t.extraPermissions.includes('net') ? true : t.net.length > 0 ? t.net : false, api: t.api },
    limits: { timeout_ms: t.timeoutMs, memory_mb: t.memoryMb },
    required_secrets: t.requiredSecrets,
    examples: t.examples,
  };
}

/** What a host tool's page shows of its manifest. */
function hostDefinition(host: Extract<Route, { kind: 'host' }>['tool']): Record<string, unknown> {
  return {
    name: host.name,
    description: host.description,
    input_schema: host.inputSchema,
    output_schema: host.resultSchema,
    transport: host.transport.kind,
    format: host.format,
    manifest: host.manifestPath,
    capabilities: host.capabilities,
    requires_confirmation: host.requiresConfirmation,
  };
}

/** Writes a tool.create.request.v1 for a console create body (tool_spec, replaces_version). */
async function writeCreateRequest(
  client: StoreClient,
  workspace: string,
  body: Record<string, unknown>,
): Promise<{ rid: string; id: string; spec: Record<string, unknown> }> {
  const spec = specOf(body);
  const replaces = body['replaces_version'];
  if (replaces !== undefined && (typeof replaces !== 'string' || replaces === '')) {
    throw new HttpError(
      400,
      'bad_request',
      `replaces_version must be a non-empty string, got ${JSON.stringify(replaces)}`,
    );
  }
  const rid = randomUUID();
  const { id } = await client.createBreadcrumb({
    title: `Create tool: ${typeof spec['name'] === 'string' ? spec['name'].slice(0, 64) : '?'}`,
    schema_name: SCHEMA.ToolCreateRequest,
    tags: [workspace, TAG.agent(CONSOLE_AGENT)],
    context: {
      request_id: rid,
      agent_id: CONSOLE_AGENT,
      tool_spec: spec,
      ...(replaces !== undefined ? { replaces_version: replaces } : {}),
    },
  });
  return { rid, id, spec };
}

/** Builds the console API. */
export function createConsoleApi(options: ConsoleOptions): ConsoleApi {
  const { config, client, keys, catalog, sandbox, validator, logger } = options;
  const workspace = config.workspace;
  const stats = createConsoleStats();
  const index = createToolIndex({ client, workspace, catalog, stats });
  const assets = loadAssets(options.assetsDir ?? defaultAssetsDir());
  const requestClient = createRequestClient({ client, keys, workspace });
  const requests = new BoundedMap<string, string>(MAX_REMEMBERED);
  const creates = new BoundedMap<string, string>(MAX_REMEMBERED);
  const maxBody = config.maxSourceBytes * 2 + 256 * 1024;
  // The one example runner (authoring/examples.ts), as the create flow and `tools-runner test` use it;
  // the console holds no secrets (examples of tools that need some fail with secret.missing).
  const exampleOptions: RunExamplesOptions = {
    sandbox,
    validator,
    workspace,
    agentId: CONSOLE_AGENT,
    requestId: (tool, i) => `console-example:${tool.name}:${i + 1}`,
    api: (tool, i) =>
      createToolApi({
        client,
        tool: tool.name,
        rid: `console-example:${tool.name}:${i + 1}`,
        config,
        schemas: tool.apiSchemas,
      }),
  };
  const runAllExamples = async (tool: ToolDefinition): Promise<ExampleRun[]> => {
    const runs: ExampleRun[] = [];
    for (let i = 0; i < tool.examples.length; i++) runs.push(await runExample(tool, i, exampleOptions));
    return runs;
  };

  const validate = (spec: Record<string, unknown>) =>
    validateToolDefinition(spec, { origin: 'agent', config, validator });

  const currentTool = (name: string): ToolDefinition => {
    const route = catalog.resolve(name);
    if (route?.kind !== 'code')
      throw new HttpError(404, 'not_found', `no runnable code tool named ${JSON.stringify(name)}`);
    return route.tool;
  };

  const toolPage = async (name: string, id: string | null) => {
    const rows = (await index.rows()).filter((row) => row.name === name);
    const row =
      (id ? rows.find((r) => r.breadcrumbId === id) : undefined) ??
      rows.find((r) => r.state === 'runnable' || r.state === 'deprecated') ??
      rows[0];
    if (!row) throw new HttpError(404, 'not_found', `no tool named ${JSON.stringify(name)}`);
    const route = catalog.resolve(name);
    let definition: Record<string, unknown> | null = null;
    let warnings: unknown[] = [];
    if (row.kind === 'code' && row.breadcrumbId) {
      const record = (await index.records()).get(row.breadcrumbId);
      definition = record?.context ?? null;
      if (definition) warnings = validate(definition).warnings;
    }
    if (!definition && route?.kind === 'code') definition = codeDefinition(route.tool);
    else if (route?.kind === 'host') definition = hostDefinition(route.tool);
    return { tool: row, others: rows.filter((r) => r !== row), definition, warnings, stats: stats.tool(name) };
  };

  const api = async (
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: URLSearchParams,
  ): Promise<void> => {
    const method = req.method ?? 'GET';
    const parts = path.split('/').slice(2);
    const route = `${method} /${parts.map((p, i) => (i === 1 && (parts[0] === 'tools' || parts[0] === 'requests' || parts[0] === 'create' || parts[0] === 'extensions') ? ':x' : i === 3 && parts[2] === 'examples' ? ':i' : p)).join('/')}`;
    switch (route) {
      case 'GET /catalog': {
        const rows = await index.rows();
        const counts = { total: rows.length, runnable: 0, deprecated: 0, rejected: 0 };
        for (const row of rows) counts[row.state] += 1;
        return sendJson(res, 200, { workspace, counts, tools: rows });
      }
      case 'GET /extensions/:x': {
        const name = decode(parts[1] as string, 'extension name');
        const status = options.extensionStatus?.(name);
        if (status === undefined)
          throw new HttpError(404, 'not_found', `no extension ${JSON.stringify(name.slice(0, 140))} with a status`);
        return sendJson(res, 200, status);
      }
      case 'GET /health':
        return sendJson(res, 200, options.health());
      case 'GET /tools/:x':
        return sendJson(res, 200, await toolPage(toolName(parts[1] as string), query.get('id')));
      case 'GET /tools/:x/history': {
        const name = toolName(parts[1] as string);
        const route = catalog.resolve(name);
        if (route?.kind !== 'code')
          throw new HttpError(404, 'not_found', `no runnable code tool named ${JSON.stringify(name)}`);
        const history = await client.history(route.breadcrumbId);
        return sendJson(res, 200, {
          id: route.breadcrumbId,
          versions: history.map((h) => ({
            version: h.version,
            tool_version: h.context['version'] ?? null,
            updated_at: h.updated_at,
            updated_by: h.updated_by ?? null,
          })),
        });
      }
      case 'POST /tools/:x/examples/:i': {
        const tool = currentTool(toolName(parts[1] as string));
        const i = Number(parts[3]);
        if (!Number.isInteger(i) || i < 0 || i >= tool.examples.length) {
          throw new HttpError(
            404,
            'not_found',
            `tool "${tool.name}" has ${tool.examples.length} example(s); there is no example ${JSON.stringify(parts[3])}`,
          );
        }
        return sendJson(res, 200, await runExample(tool, i, exampleOptions));
      }
      case 'POST /tools/:x/call': {
        const name = toolName(parts[1] as string);
        const body = await readJsonObject(req, res, maxBody);
        if (!('input' in body))
          throw new HttpError(400, 'bad_request', 'body must have an "input" field (the tool input)');
        // The answer is read later by the inspector (GET /requests/:rid), which marks only the runner's verified answer genuine.
        const { rid, breadcrumbId: id } = await requestClient.write({
          tool: name,
          input: body['input'],
          requestedBy: CONSOLE_AGENT,
          tags: [TAG.agent(CONSOLE_AGENT)],
        });
        requests.set(rid, id);
        logger.info('console call written', { rid, tool: name });
        return sendJson(res, 202, { rid, request_breadcrumb_id: id });
      }
      case 'POST /screen': {
        const result = validate(specOf(await readJsonObject(req, res, maxBody)));
        return sendJson(res, 200, { ok: result.ok, errors: result.errors, warnings: result.warnings });
      }
      case 'POST /examples': {
        const result = validate(specOf(await readJsonObject(req, res, maxBody)));
        if (!result.ok)
          return sendJson(res, 422, { ok: false, errors: result.errors, warnings: result.warnings, examples: [] });
        const runs = await runAllExamples(result.tool);
        return sendJson(res, 200, {
          ok: runs.every((r) => r.ok),
          errors: [],
          warnings: result.warnings,
          examples: runs,
        });
      }
      case 'POST /create': {
        const { rid, id, spec } = await writeCreateRequest(client, workspace, await readJsonObject(req, res, maxBody));
        creates.set(rid, id);
        logger.info('console create request written', { rid, tool: spec['name'] });
        return sendJson(res, 202, { rid, request_breadcrumb_id: id });
      }
      case 'GET /create/:x': {
        const rid = decode(parts[1] as string, 'request id');
        const id = creates.get(rid);
        if (id === undefined)
          throw new HttpError(
            404,
            'not_found',
            `no create request ${JSON.stringify(rid.slice(0, 140))} was made from this console`,
          );
        const items = await client.listBreadcrumbs({
          schema_name: SCHEMA.ToolCreateResponse,
          tag: keys.answerTag(id),
          include_context: true,
          limit: 1,
        });
        const answer = items.find((item) => item.tags.includes(workspace));
        return sendJson(
          res,
          200,
          answer ? { rid, status: 'answered', response: answer.context } : { rid, status: 'pending' },
        );
      }
      case 'GET /requests/:x': {
        const rid = decode(parts[1] as string, 'request id');
        if (rid === '' || rid.length > 200)
          throw new HttpError(400, 'bad_request', `request id must be 1-200 characters, got ${rid.length}`);
        const found = await inspectRequest(
          { client, keys, workspace, knownRequest: (r) => requests.get(r), liveCall: (r) => stats.call(r) },
          rid,
        );
        return sendJson(
          res,
          found.found ? 200 : 404,
          found.found
            ? found
            : { ...found, error: `no request ${JSON.stringify(rid)} in ${workspace}`, code: 'not_found' },
        );
      }
      default:
        throw new HttpError(404, 'not_found', `no console API route ${method} ${path}`);
    }
  };

  return {
    stats,
    async handle(req, res, path) {
      const method = req.method ?? 'GET';
      if (path.startsWith('/api/')) {
        const query = new URL(req.url ?? '/', 'http://console').searchParams;
        try {
          await api(req, res, path, query);
        } catch (error) {
          if (error instanceof HttpError) sendError(res, error, JSON_HEADERS);
          else if (isNotFound(error))
            sendError(res, new HttpError(404, 'not_found', (error as Error).message), JSON_HEADERS);
          else {
            logger.error('console API failed', { path, error });
            sendError(
              res,
              new HttpError(500, 'internal', `console API ${method} ${path} failed: ${(error as Error).message}`),
              JSON_HEADERS,
            );
          }
        }
        return true;
      }
      if (method !== 'GET' && method !== 'HEAD') return false;
      if (path === '/' && !assets.built) {
        sendError(
          res,
          new HttpError(
            503,
            'console_not_built',
            'the console is not built: run `npm run build` (dist/console/public is missing)',
          ),
          JSON_HEADERS,
        );
        return true;
      }
      return assets.serve(res, path, method === 'HEAD');
    },
  };
}
