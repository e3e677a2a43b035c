// Step 1 of a request's life: a store event arrives. This is the one place that decides what an
// event means for the runner; every other part receives typed facts, never raw events.
//
// A `tool.request.v1` of this workspace becomes a request for intake (2-intake.ts); its deletion
// withdraws it; a `tool.response.v1` reports the answer tags it carries (only the runner's
// unforgeable `answer:<mac>` tags count, never the `request:<rid>` tag anyone can write); a
// `tool.code.v1` change of this workspace or any deletion goes to the catalog (as a CatalogChange:
// the catalog sees no raw events); every non-ping event goes to the extensions (tool authoring,
// MCP, console) and the RAP runtime, which keep their own interests. A record that looks meant as a
// request but is not one this runner runs is logged and counted (1-ignored.ts).

import { APPROVAL_TAG_PREFIX, requestIdentity, SCHEMA, TAG, type StoreEvent } from '../breadcrumbs/messages.js';
import { ANSWER_TAG_PREFIX } from '../breadcrumbs/request-keys.js';
import type { CatalogChange } from '../catalog/catalog.js';
import type { Logger } from '../logger.js';

/** A request to run, as intake knows it (the job fetches the full breadcrumb itself). */
export interface PendingRequest {
  /** The request breadcrumb's id: jobs, claims and answers are keyed by it. */
  breadcrumbId: string;
  rid: string;
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

/** The request a listed or fetched breadcrumb stands for, or undefined when it is not one of this workspace's. */
export function pendingRequestOf(item: { id: string; tags: readonly string[]; context?: Record<string, unknown> | undefined }, workspace: string): PendingRequest | undefined {
  if (!item.tags.includes(TAG.Request) || !item.tags.includes(workspace)) return undefined;
  const { rid, tool } = requestIdentity(item);
  return { breadcrumbId: item.id, rid, tool };
}

/** Classifies one store event for the request path. */
export function classifyRequestEvent(event: StoreEvent, workspace: string): RequestEvent {
  if (!event.breadcrumb_id) return { kind: 'none' };
  if (event.type === 'breadcrumb.deleted') {
    return event.schema_name === SCHEMA.ToolRequest ? { kind: 'withdrawn', breadcrumbId: event.breadcrumb_id } : { kind: 'none' };
  }
  if (event.type !== 'breadcrumb.updated') return { kind: 'none' };
  if (event.schema_name === SCHEMA.ToolResponse) {
    return { kind: 'answered', answerTags: (event.tags ?? []).filter((tag) => tag.startsWith(ANSWER_TAG_PREFIX)) };
  }
  if (event.schema_name === SCHEMA.ToolApprovalResponse) {
    // An approval's answer wakes the request parked on it (the approvals policy checks who wrote it).
    return { kind: 'wake', tokens: (event.tags ?? []).filter((tag) => tag.startsWith(APPROVAL_TAG_PREFIX)) };
  }
  if (event.schema_name !== SCHEMA.ToolRequest) return { kind: 'none' };
  const request = pendingRequestOf({ id: event.breadcrumb_id, tags: event.tags ?? [], context: event.context }, workspace);
  if (!request) return { kind: 'none' };
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
  intake: { offer(request: PendingRequest): void; withdraw(breadcrumbId: string): void; answered(answerTags: readonly string[]): void; wake(tokens: readonly string[]): void };
  catalog: { applyChange(change: CatalogChange): Promise<void> };
  /** Extensions and the RAP runtime: they receive every event but pings. */
  others(): ReadonlyArray<{ handleEvent?(event: StoreEvent): void }>;
  /** Sees every event that is no request of this workspace: logs and counts request-like ones (1-ignored.ts). */
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
