// The request inspector: the whole life of one call, by request id — the tool.request.v1, its
// claims (attempts), the tool.response.v1 with its logs, and stage timings.
//
// Anyone can write breadcrumbs tagged `request:<rid>`, so what is shown is marked: a response is
// `genuine` only when it is the runner's verified answer of the request (`verifiedAnswer` of the
// request client: its unforgeable answer tag, the same rid and request breadcrumb), a claim only
// when its MAC verifies. The request is found by the breadcrumb id the console itself wrote, the
// genuine answer's `metadata.request_breadcrumb_id`, the rid itself (when it is a breadcrumb id), or
// among the newest requests of the workspace.

import type { RequestKeys, StoreClient } from '../breadcrumbs/index.js';
import { isNotFound, verifiedAnswer } from '../breadcrumbs/index.js';
import { requestIdentity, SCHEMA, TAG, ToolClaimContext, type BreadcrumbFull } from '../breadcrumbs/messages.js';
import type { CallRecord } from './stats.js';

export interface InspectOptions {
  client: StoreClient;
  keys: RequestKeys;
  workspace: string;
  /** Request breadcrumb id of a call the console made, by rid. */
  knownRequest(rid: string): string | undefined;
  /** The live record of a recent call, by rid. */
  liveCall(rid: string): CallRecord | undefined;
}

/** Everything known about one request. */
export interface Inspection {
  rid: string;
  found: boolean;
  request: {
    id: string;
    tool: string;
    agentId: string | null;
    createdAt: string | null;
    tags: string[];
    context: Record<string, unknown>;
  } | null;
  claims: Array<{
    id: string;
    attempt: number;
    holder: string;
    expiresAt: string;
    released: boolean;
    genuine: boolean;
  }>;
  responses: Array<{ id: string; genuine: boolean; context: Record<string, unknown> }>;
  attempts: number;
  timings: {
    receivedAt: string | null;
    startedAt: string | null;
    answeredAt: string | null;
    queueMs: number | null;
    executionMs: number | null;
    totalMs: number | null;
  };
  logs: unknown[];
  live: CallRecord | null;
}

const SCAN_LIMIT = 500;

const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** Looks one request up. Never throws for a request that does not exist (found: false). */
export async function inspectRequest(options: InspectOptions, rid: string): Promise<Inspection> {
  const { client, keys, workspace } = options;
  const responseItems = await client.listBreadcrumbs({
    schema_name: SCHEMA.ToolResponse,
    tag: TAG.request(rid),
    include_context: true,
    limit: 20,
  });
  const ofWorkspace = responseItems.filter((item) => item.tags.includes(workspace));

  let requestId = options.knownRequest(rid);
  if (requestId === undefined) {
    for (const item of ofWorkspace) {
      const candidate = (item.context?.['metadata'] as Record<string, unknown> | undefined)?.['request_breadcrumb_id'];
      if (
        typeof candidate === 'string' &&
        verifiedAnswer(keys, workspace, { rid, breadcrumbId: candidate }, item.tags, item.context)
      ) {
        requestId = candidate;
        break;
      }
    }
  }
  let full: BreadcrumbFull | undefined;
  const read = async (id: string): Promise<BreadcrumbFull | undefined> => {
    try {
      const found = await client.getBreadcrumbFull(id);
      return found.schema_name === SCHEMA.ToolRequest && found.tags.includes(workspace) ? found : undefined;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  if (requestId !== undefined) full = await read(requestId);
  if (!full && /^[0-9a-zA-Z-]{1,100}$/.test(rid)) full = await read(rid);
  if (!full) {
    const recent = await client.listBreadcrumbs({
      schema_name: SCHEMA.ToolRequest,
      tag: workspace,
      include_context: true,
      limit: SCAN_LIMIT,
    });
    const match = recent.find((item) => requestIdentity(item).rid === rid);
    if (match) full = await read(match.id);
  }

  const identity = full ? requestIdentity(full) : undefined;
  const claims: Inspection['claims'] = [];
  if (full) {
    const claimItems = await client.listAll({
      schema_name: SCHEMA.ToolClaim,
      tag: keys.claimTag(full.id),
      include_context: true,
      limit: 100,
    });
    for (const item of claimItems) {
      const parsed = ToolClaimContext.safeParse(item.context);
      if (!parsed.success) continue;
      const c = parsed.data;
      const genuine =
        c.request_breadcrumb_id === full.id &&
        keys.verifyClaimMac(
          {
            requestBreadcrumbId: c.request_breadcrumb_id,
            attempt: c.attempt,
            holder: c.holder,
            expiresAt: c.expires_at,
            released: c.released === true,
          },
          c.mac,
        );
      claims.push({
        id: item.id,
        attempt: c.attempt,
        holder: c.holder,
        expiresAt: c.expires_at,
        released: c.released === true,
        genuine,
      });
    }
    claims.sort((a, b) => a.attempt - b.attempt);
  }

  const responses = ofWorkspace.map((item) => ({
    id: item.id,
    genuine:
      full !== undefined &&
      verifiedAnswer(keys, workspace, { rid, breadcrumbId: full.id }, item.tags, item.context) !== undefined,
    context: item.context ?? {},
  }));
  responses.sort((a, b) => Number(b.genuine) - Number(a.genuine));
  const answer = responses.find((r) => r.genuine)?.context;
  const metadata = (answer?.['metadata'] ?? {}) as Record<string, unknown>;
  const totalMs = num(metadata['total_ms']);
  const answeredAt = typeof answer?.['timestamp'] === 'string' ? answer['timestamp'] : null;
  const receivedAt = full?.created_at ?? null;
  const startedAt =
    answeredAt !== null && totalMs !== null
      ? new Date(Date.parse(answeredAt) - totalMs).toISOString()
      : (options.liveCall(rid)?.startedAt ?? null);
  const attempts = Math.max(num(metadata['attempt']) ?? 0, ...claims.filter((c) => c.genuine).map((c) => c.attempt), 0);

  return {
    rid,
    found: full !== undefined || responses.length > 0,
    request:
      full && identity
        ? {
            id: full.id,
            tool: identity.tool,
            agentId: identity.agentId ?? null,
            createdAt: full.created_at ?? null,
            tags: full.tags,
            context: full.context,
          }
        : null,
    claims,
    responses,
    attempts,
    timings: {
      receivedAt,
      startedAt,
      answeredAt,
      queueMs:
        receivedAt !== null && startedAt !== null ? Math.max(0, Date.parse(startedAt) - Date.parse(receivedAt)) : null,
      executionMs: num(answer?.['execution_time_ms']),
      totalMs,
    },
    logs: Array.isArray(metadata['logs']) ? (metadata['logs'] as unknown[]) : [],
    live: options.liveCall(rid) ?? null,
  };
}
