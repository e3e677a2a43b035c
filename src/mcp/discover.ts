// `server/discover` (MCP revision 2026-07-28): a client may ask which protocol versions, capabilities
// and identity a server has before anything else. The SDK this server is built on speaks the
// revisions up to 2025-11-25 (the `initialize` handshake), so the answer lists exactly those: a
// client of the newer revision learns that in one round trip and falls back to `initialize`,
// instead of meeting a 400 (HTTP) or "method not found" (stdio).

import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export const DISCOVER_METHOD = 'server/discover';

/** The request schema the SDK routes `server/discover` by. */
export const DiscoverRequestSchema = z.object({
  method: z.literal(DISCOVER_METHOD),
  params: z.optional(z.looseObject({})),
});

/** What a server says of itself, shared by `initialize` and `server/discover`. */
export interface ServerIdentity {
  serverInfo: { name: string; version: string };
  capabilities: Record<string, unknown>;
  instructions: string;
}

/** A discovery answer lasts this long in a client's cache (the catalog may change; its own notification says so). */
export const DISCOVER_TTL_MS = 60_000;

/** The `server/discover` result: versions this server speaks, capabilities, instructions, identity in `_meta`. */
export function discoverResult(identity: ServerIdentity): Record<string, unknown> {
  return {
    resultType: 'complete',
    supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
    capabilities: identity.capabilities,
    instructions: identity.instructions,
    ttlMs: DISCOVER_TTL_MS,
    cacheScope: 'public',
    _meta: { 'io.modelcontextprotocol/serverInfo': identity.serverInfo },
  };
}

/** The id of a JSON-RPC `server/discover` request, when `body` is one (a single request, not a batch). */
export function discoverRequestId(body: unknown): string | number | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const message = body as Record<string, unknown>;
  if (message['jsonrpc'] !== '2.0' || message['method'] !== DISCOVER_METHOD) return undefined;
  const id = message['id'];
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : undefined;
}
