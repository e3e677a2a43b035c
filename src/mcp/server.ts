// One MCP session: an SDK `Server` whose `tools/list` and `tools/call` go to the shared bridge.
//
// tools/list: the exported catalog, sorted by exported name, PAGE_SIZE tools per page; the cursor
// is the last name of the previous page (base64url), so a catalog change between pages neither
// repeats nor skips a tool that stayed. tools/call: the bridge's result; while it runs, a
// `notifications/progress` every `progressMs` when the client sent a progress token.
// `notifications/tools/list_changed` is sent whenever the bridge reports a change.

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode as McpErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { toMcpTool } from '../export/index.js';
import type { Logger } from '../logger.js';
import type { McpBridge } from './bridge.js';
import { DiscoverRequestSchema, discoverResult, type ServerIdentity } from './discover.js';

/** Tools per `tools/list` page. */
export const PAGE_SIZE = 100;
/** Version the server reports in `initialize`. */
export const SERVER_VERSION = '0.1.0';

export interface McpSessionOptions {
  bridge: McpBridge;
  logger: Logger;
  /** Interval of progress notifications. */
  progressMs: number;
  pageSize?: number;
}

/** The `agent:mcp:<client>` part of a client's self-reported name: [A-Za-z0-9._-], at most 64, else `unknown`. */
export function agentName(clientName: unknown): string {
  if (typeof clientName !== 'string') return 'unknown';
  const cleaned = clientName.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 64);
  return /[A-Za-z0-9]/.test(cleaned) ? cleaned : 'unknown';
}

function decodeCursor(cursor: string): string {
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name) || Buffer.from(name).toString('base64url') !== cursor) {
    throw new McpError(
      McpErrorCode.InvalidParams,
      `invalid cursor ${JSON.stringify(cursor.slice(0, 100))}: not a cursor this server issued`,
    );
  }
  return name;
}

/** The `_meta` key by which a tools/call demands an isolation (only `process`: a fresh sandbox process for the call). */
export const ISOLATION_META = 'tools-runner/isolation';

/** The isolation a tools/call demands in `_meta`, if any; anything but `"process"` is a -32602 naming the value. */
export function isolationOf(meta: Record<string, unknown> | undefined): 'process' | undefined {
  const value = meta?.[ISOLATION_META];
  if (value === undefined) return undefined;
  if (value === 'process') return 'process';
  throw new McpError(
    McpErrorCode.InvalidParams,
    `_meta["${ISOLATION_META}"] must be "process" (a fresh sandbox process for the call; omit it for the runner's default), got ${JSON.stringify(value)?.slice(0, 100) ?? String(value)}`,
  );
}

/** What this server says of itself in `initialize` and `server/discover`. */
export const IDENTITY: ServerIdentity = {
  serverInfo: { name: 'tools-runner', version: SERVER_VERSION },
  capabilities: { tools: { listChanged: true } },
  instructions:
    'Tools of a tools-runner workspace. Every call is recorded as a tool.request.v1 and answered by the runner.',
};

/** Creates the SDK server of one session (connect it to a transport). */
export function createMcpSession(options: McpSessionOptions): Server {
  const { bridge, logger, progressMs } = options;
  const pageSize = options.pageSize ?? PAGE_SIZE;
  const server = new Server(IDENTITY.serverInfo, {
    capabilities: IDENTITY.capabilities,
    instructions: IDENTITY.instructions,
  });

  // Answered before and after initialize (stdio clients probe with it first).
  server.setRequestHandler(DiscoverRequestSchema, () => discoverResult(IDENTITY));

  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const views = await bridge.views();
    const cursor = request.params?.cursor;
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const start = after === undefined ? 0 : views.tools.findIndex((tool) => tool.exportName > after);
    const page = start < 0 ? [] : views.tools.slice(start, start + pageSize);
    const last = page.at(-1);
    const more = start >= 0 && start + pageSize < views.tools.length && last !== undefined;
    return {
      tools: page.map(toMcpTool),
      ...(more ? { nextCursor: Buffer.from(last.exportName).toString('base64url') } : {}),
    };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    const token = request.params._meta?.progressToken;
    const isolation = isolationOf(request.params._meta);
    let progress: NodeJS.Timeout | undefined;
    // one counter for both kinds of notification: MCP wants `progress` to increase with every one
    let count = 0;
    const notify = (message: string): void => {
      if (token === undefined) return;
      count++;
      extra
        .sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: count, message },
        })
        .catch((error: unknown) => logger.debug('MCP progress notification failed', { error }));
    };
    if (token !== undefined) {
      const startedAt = performance.now();
      progress = setInterval(() => {
        const seconds = Math.round((performance.now() - startedAt) / 100) / 10;
        notify(`${name}: running for ${seconds} s`);
      }, progressMs);
    }
    // the tool's own reports (context.progress): `{text}` as its text, anything else as JSON
    const onProgress = (value: unknown): void => {
      const text =
        value !== null && typeof value === 'object' && typeof (value as { text?: unknown }).text === 'string'
          ? (value as { text: string }).text
          : JSON.stringify(value);
      notify(text);
    };
    try {
      return await bridge.call(name, request.params.arguments ?? {}, {
        agent: agentName(server.getClientVersion()?.name),
        signal: extra.signal,
        ...(token !== undefined ? { onProgress } : {}),
        ...(isolation ? { isolation } : {}),
      });
    } finally {
      clearInterval(progress);
    }
  });

  const off = bridge.onListChanged(() => {
    server
      .sendToolListChanged()
      .catch((error: unknown) => logger.debug('MCP list_changed notification failed', { error }));
  });
  server.onclose = () => off();
  return server;
}
