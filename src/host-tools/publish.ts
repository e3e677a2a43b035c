// Publishes the operator's host tools as `tool.v1` breadcrumbs so agents can discover them.
//
// The breadcrumb is a description only: name, description, input schema, transport kind and the
// manifest digest — never the command, URL, headers or secrets. What runs is decided by the local
// manifests alone; a tool.v1 that no local manifest defines is never executed (see catalog).
// Upsert semantics as bootstrap: create when absent, If-Match update when different, else skip.

import type { StoreClient } from '../breadcrumbs/index.js';
import { isConflict, isNotFound, isVersionMismatch } from '../breadcrumbs/index.js';
import { SCHEMA, TAG, type ToolLegacyContext } from '../breadcrumbs/messages.js';
import type { Logger } from '../logger.js';
import type { HostTool } from './types.js';

export interface PublishResult {
  name: string;
  action: 'created' | 'updated' | 'unchanged' | 'failed';
  id?: string;
}

/** The tool.v1 context of a host tool (what agents may know about it). */
export function legacyContext(tool: HostTool): ToolLegacyContext {
  return {
    name: tool.name,
    description: tool.description,
    input_schema: tool.inputSchema ?? { type: 'object', additionalProperties: false },
    ...(tool.resultSchema ? { output_schema: tool.resultSchema } : {}),
    transport: tool.transport.kind,
    format: tool.format,
    manifest_digest: tool.manifestDigest,
    requires_confirmation: tool.requiresConfirmation,
    ...(tool.transport.kind === 'rap'
      ? {
          toolset: tool.transport.toolset,
          ...(tool.transport.annotations ? { annotations: tool.transport.annotations } : {}),
          ...(tool.transport.displayScript !== undefined ? { display_script: tool.transport.displayScript } : {}),
        }
      : {}),
  };
}

async function publishOne(client: StoreClient, tool: HostTool, workspace: string): Promise<PublishResult> {
  const context = legacyContext(tool);
  const body = {
    title: tool.name,
    description: tool.description,
    schema_name: SCHEMA.ToolLegacy,
    tags: [TAG.Tool, TAG.tool(tool.name), workspace, 'tool:host'],
    context,
  };
  for (let attempt = 0; attempt < 4; attempt++) {
    const items = await client.listBreadcrumbs({
      schema_name: SCHEMA.ToolLegacy,
      tag: TAG.tool(tool.name),
      include_context: true,
      limit: 20,
    });
    const mine = items.filter((item) => item.tags.includes(workspace)).sort((a, b) => a.id.localeCompare(b.id))[0];
    if (mine) {
      if (JSON.stringify(mine.context) === JSON.stringify(context))
        return { name: tool.name, action: 'unchanged', id: mine.id };
      try {
        await client.updateBreadcrumb(mine.id, body, { ifMatch: mine.version });
        return { name: tool.name, action: 'updated', id: mine.id };
      } catch (error) {
        if (isVersionMismatch(error) || isNotFound(error)) continue;
        throw error;
      }
    }
    try {
      const { id } = await client.createBreadcrumb(
        body,
        attempt === 0 ? { idempotencyKey: `host-tool:${workspace}:${tool.name}:${tool.manifestDigest}` } : {},
      );
      return { name: tool.name, action: 'created', id };
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  }
  return { name: tool.name, action: 'failed' };
}

/** Upserts one tool.v1 per host tool; failures are logged per tool and never fatal. */
export async function publishHostTools(
  client: StoreClient,
  tools: readonly HostTool[],
  workspace: string,
  logger: Logger,
): Promise<PublishResult[]> {
  const results: PublishResult[] = [];
  for (const tool of tools) {
    try {
      results.push(await publishOne(client, tool, workspace));
    } catch (error) {
      logger.warn('host tool publication failed', { tool: tool.name, error });
      results.push({ name: tool.name, action: 'failed' });
    }
  }
  return results;
}

/** Deletes this workspace's tool.v1 descriptions of `names` (host tools no longer exposed); never fatal. */
export async function unpublishHostTools(
  client: StoreClient,
  names: readonly string[],
  workspace: string,
  logger: Logger,
): Promise<string[]> {
  const removed: string[] = [];
  for (const name of names) {
    try {
      const items = await client.listBreadcrumbs({ schema_name: SCHEMA.ToolLegacy, tag: TAG.tool(name), limit: 20 });
      for (const item of items.filter((i) => i.tags.includes(workspace) && i.tags.includes('tool:host'))) {
        await client.deleteBreadcrumb(item.id).catch((error: unknown) => {
          if (!isNotFound(error)) throw error;
        });
        removed.push(name);
      }
    } catch (error) {
      logger.warn('host tool unpublication failed', { tool: name, error });
    }
  }
  return removed;
}
