// Step 1 of a request's life: a store event arrives. This is the one place that decides what an
// event means for the runner; every other part receives typed facts, never raw events.
//
// A `tool.request.v1` of this workspace becomes a request for intake (intake.ts); its deletion
// withdraws it; a `tool.response.v1` reports the answer tags it carries (only the runner's
// unforgeable `answer:<mac>` tags count, never the `request:<rid>` tag anyone can write); a
// `tool.code.v1` change of this workspace or any deletion goes to the catalog (as a CatalogChange:
// the catalog sees no raw events); every non-ping event goes to the extensions (tool authoring,
// MCP, console) and the RAP runtime, which keep their own interests. A record that looks meant as a
// request but is not one this runner runs is logged and counted (ignored-requests.ts).

import {
  APPROVAL_TAG_PREFIX,
  requestIdentity,
  requestIdProblem,
  SCHEMA,
  TAG,
  type StoreEvent,
} from '../breadcrumbs/messages.js';
import { ANSWER_TAG_PREFIX } from '../breadcrumbs/request-keys.js';
import type { CatalogChange } from '../catalog/catalog.js';
import type { Logger } from '../logger.js';

/** A request to run, as intake knows it (the job fetches the full breadcrumb itself). */
export interface PendingRequest {
  /** `create`: a tool.create.request.v1; absent: a tool.request.v1. */
  kind?: 'create';
  /** The request breadcrumb's id: jobs, claims and answers are keyed by it. */
  breadcrumbId: string;
  rid: string;
  /** The tool it calls (a create request: CREATE_QUEUE, its queue key). */
  tool: string;
  /** The request as an event carried it (saves the job a read); absent for scanned requests. */
  snapshot?: { tags: string[]; context: Record<string, unknown> };
  /** performance.now() when intake first learned of the request (event or scan): the start of its `queued` stage. */
  seenAt?: number;
}

/** What one store event means for the request path. */
export type RequestEvent =
  | { kind: 'request'; request: PendingRequest }
  | { kind: 'withdrawn'; breadcrumbId: string }
  | { kind: 'answered'; answerTags: string[] }
  | { kind: 'wake'; tokens: string[] }
  | { kind: 'none' };

/** The job-queue key (its per-tool limit) every create request shares. */
export const CREATE_QUEUE = 'tool.create';

/** The rid of a create request (`request_id`, else the breadcrumb id) and why `request_id` is unusable, if it is. */
export function createRequestRid(item: { id: string; context?: Record<string, unknown> | undefined }): {
  rid: string;
  problem?: string;
} {
  const raw = item.context?.['request_id'];
  if (raw === undefined || raw === '') return { rid: item.id };
  const problem = requestIdProblem(raw)?.replace(/^requestId/, 'request_id');
  return problem ? { rid: item.id, problem } : { rid: raw as string };
}

/**
 * The request a listed or fetched breadcrumb stands for, or undefined when it is not one of this
 * workspace's. `schema`: the record's schema when the item does not say (a listing by schema).
 */
export function pendingRequestOf(
  item: {
    id: string;
    tags: readonly string[];
    schema_name?: string | null | undefined;
    context?: Record<string, unknown> | undefined;
  },
  workspace: string,
  schema: string | null | undefined = item.schema_name,
): PendingRequest | undefined {
  if (!item.tags.includes(workspace)) return undefined;
  if (schema === SCHEMA.ToolCreateRequest)
    return { kind: 'create', breadcrumbId: item.id, rid: createRequestRid(item).rid, tool: CREATE_QUEUE };
  if (!item.tags.includes(TAG.Request)) return undefined;
  const { rid, tool } = requestIdentity(item);
  return { breadcrumbId: item.id, rid, tool };
}

/** Classifies one store event for the request path. */
export function classifyRequestEvent(event: StoreEvent, workspace: string): RequestEvent {
  if (!event.breadcrumb_id) return { kind: 'none' };
  if (event.type === 'breadcrumb.deleted') {
    const isRequest = event.schema_name === SCHEMA.ToolRequest || event.schema_name === SCHEMA.ToolCreateRequest;
    return isRequest ? { kind: 'withdrawn', breadcrumbId: event.breadcrumb_id } : { kind: 'none' };
  }
  if (event.type !== 'breadcrumb.updated') return { kind: 'none' };
  if (event.schema_name === SCHEMA.ToolResponse || event.schema_name === SCHEMA.ToolCreateResponse) {
    return { kind: 'answered', answerTags: (event.tags ?? []).filter((tag) => tag.startsWith(ANSWER_TAG_PREFIX)) };
  }
  if (event.schema_name === SCHEMA.ToolApprovalResponse) {
    // An approval's answer wakes the request parked on it (the approvals policy checks who wrote it).
    return { kind: 'wake', tokens: (event.tags ?? []).filter((tag) => tag.startsWith(APPROVAL_TAG_PREFIX)) };
  }
  if (event.schema_name !== SCHEMA.ToolRequest && event.schema_name !== SCHEMA.ToolCreateRequest)
    return { kind: 'none' };
  const request = pendingRequestOf(
    { id: event.breadcrumb_id, tags: event.tags ?? [], context: event.context },
    workspace,
    event.schema_name,
  );
  if (!request) return { kind: 'none' };
  // A create request is always read in full by its job (who wrote it, whether it changed since).
  if (request.kind === 'create') return { kind: 'request', request };
  // Only a creation event stands in for the record: after an update the job reads the record
  // itself (it needs created_at to recognise requests answered before the answer-tag cutover).
  if (event.context && event.version === 1) request.snapshot = { tags: event.tags ?? [], context: event.context };
  return { kind: 'request', request };
}

/** What the event means for the catalog: a tool.code.v1 change of this workspace, any deletion, or nothing. */
export function catalogChangeOf(event: StoreEvent, workspace: string): CatalogChange | undefined {
  const id = event.breadcrumb_id;
  if (!id) return undefined;
  // A deletion event may not carry the schema: the catalog forgets the id if it knew it.
  if (event.type === 'breadcrumb.deleted') return { kind: 'deleted', id };
  if (event.type !== 'breadcrumb.updated' || event.schema_name !== SCHEMA.ToolCode) return undefined;
  // Events without tags pass: the catalog reads the record and checks its workspace itself.
  if (event.tags && !event.tags.includes(workspace)) return undefined;
  return { kind: 'changed', id, ...(event.version !== undefined ? { version: event.version } : {}) };
}

/** The parts an event may reach. */
export interface EventTargets {
  workspace: string;
  logger: Logger;
  intake: {
    offer(request: PendingRequest): void;
    withdraw(breadcrumbId: string): void;
    answered(answerTags: readonly string[]): void;
    wake(tokens: readonly string[]): void;
  };
  catalog: { applyChange(change: CatalogChange): Promise<void> };
  /** Extensions and the RAP runtime: they receive every event but pings. */
  others(): ReadonlyArray<{ handleEvent?(event: StoreEvent): void }>;
  /** Sees every event that is no request of this workspace: logs and counts request-like ones (ignored-requests.ts). */
  ignored?(event: StoreEvent): void;
}

/** Creates the event stream's `onEvent`: one dispatch for every event. */
export function createEventRouter(targets: EventTargets): (event: StoreEvent) => void {
  const { intake, catalog, logger, workspace } = targets;
  return (event) => {
    if (event.type === 'ping') return;
    const meaning = classifyRequestEvent(event, workspace);
    if (meaning.kind === 'request') intake.offer(meaning.request);
    else if (meaning.kind === 'withdrawn') intake.withdraw(meaning.breadcrumbId);
    else if (meaning.kind === 'answered' && meaning.answerTags.length > 0) intake.answered(meaning.answerTags);
    else if (meaning.kind === 'wake' && meaning.tokens.length > 0) intake.wake(meaning.tokens);
    else if (meaning.kind === 'none') targets.ignored?.(event);
    const change = catalogChangeOf(event, workspace);
    if (change) catalog.applyChange(change).catch((error: unknown) => logger.warn('catalog update failed', { error }));
    for (const other of targets.others()) other.handleEvent?.(event);
  };
}
