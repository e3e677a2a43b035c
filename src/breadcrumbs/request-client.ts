// The one way a caller (CLI, MCP, RAP tool server, console) writes a tool.request.v1 and waits for
// the runner's answer. Anyone can write a tool.response.v1 tagged `request:<rid>`, so an answer counts
// only when it carries the runner's answer tag of the request breadcrumb (an HMAC under the runner
// secret, see request-keys.ts), names that breadcrumb in `metadata.request_breadcrumb_id`, answers the
// same rid and is in the workspace.
//
// Waiting: each pending call is settled by whichever comes first of an event the owner feeds in
// (`handleEvent`, from its own event stream) or a poll of the answers tagged `request:<rid>` (growing
// from a few ms to `pollMaxMs`, so a quick tool is seen at once and a long one costs little; an event
// missed between the write and the wait is found by the first poll).

import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose/jwt/decode';
import type { StoreClient } from './client.js';
import { SCHEMA, TAG, ToolResponseContext, type StoreEvent } from './messages.js';
import type { RequestKeys } from './request-keys.js';
import { isNotFound } from './store-error.js';
import { backoffMs } from '../backoff.js';

/** The first answer poll comes this soon; later ones back off to `pollMaxMs`. */
const POLL_BACKOFF_INITIAL_MS = 4;

/** A request to write. */
export interface ToolCall {
  tool: string;
  input: unknown;
  /** `context.requestedBy` (a label; with auth on the store's verified writer is the identity). */
  requestedBy: string;
  /** Extra tags (e.g. `agent:mcp:<client>`); the request and workspace tags are always set. */
  tags?: readonly string[];
  /** Extra context fields (e.g. `version`, `isolation`, `rap`); never overrides tool, input, requestId or requestedBy. */
  context?: Record<string, unknown>;
  /** The correlation id; a fresh UUID when absent. */
  rid?: string;
}

/** A request written to the store. */
export interface WrittenRequest {
  rid: string;
  breadcrumbId: string;
}

/** The verified answer of a request. */
export interface Answered {
  kind: 'answered';
  answer: ToolResponseContext;
  /** The tool.response.v1 breadcrumb's id. */
  responseId: string;
}

export type WaitOutcome = Answered | { kind: 'timeout' } | { kind: 'cancelled' };

export interface RequestClientOptions {
  client: StoreClient;
  keys: RequestKeys;
  workspace: string;
  /** Longest gap between polls once a call has waited a while (default 2 s). */
  pollMaxMs?: number;
}

export interface RequestClient {
  /** Writes the tool.request.v1 (throws on store failure; an `idempotencyKey` already used is the store's 409, thrown as is). */
  write(call: ToolCall, opts?: { signal?: AbortSignal; idempotencyKey?: string }): Promise<WrittenRequest>;
  /** Waits for the runner's verified answer of a written request, up to `timeoutMs` or until `signal` aborts. */
  wait(request: WrittenRequest, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<WaitOutcome>;
  /** The verified answer already in the store, if any (one listing). */
  find(request: WrittenRequest): Promise<Answered | undefined>;
  /** The store identity this client writes as (its bearer token's subject); undefined without a token. */
  writer(): Promise<string | undefined>;
  /** Deletes a written request, so a runner that has not finished it never answers it (false when already gone). */
  withdraw(request: WrittenRequest): Promise<boolean>;
  /** Feeds one store event from the owner's event stream (only tool.response.v1 events matter). */
  handleEvent(event: StoreEvent): void;
  /** After the owner's event stream reconnects: poll every pending call once. */
  onReconnect(): void;
  /** Ends every pending wait as cancelled. */
  close(): void;
}

interface PendingWait {
  request: WrittenRequest;
  settle(outcome: Answered): void;
}

/** The answer in `context`, when `tags`/`context` are the runner's genuine answer of `request` in `workspace`. */
export function verifiedAnswer(
  keys: RequestKeys,
  workspace: string,
  request: WrittenRequest,
  tags: readonly string[],
  context: unknown,
): ToolResponseContext | undefined {
  if (
    !tags.includes(workspace) ||
    !tags.includes(TAG.request(request.rid)) ||
    !tags.includes(keys.answerTag(request.breadcrumbId))
  )
    return undefined;
  const parsed = ToolResponseContext.safeParse(context);
  if (
    !parsed.success ||
    parsed.data.request_id !== request.rid ||
    parsed.data.metadata['request_breadcrumb_id'] !== request.breadcrumbId
  )
    return undefined;
  return parsed.data;
}

/** Creates a request client over `client`. */
export function createRequestClient(options: RequestClientOptions): RequestClient {
  const { client, keys, workspace } = options;
  const pollMaxMs = options.pollMaxMs ?? 2_000;
  // Pending waits by rid (a rid is a fresh UUID unless the caller chose one; several waits of one rid are allowed).
  const pending = new Map<string, Set<PendingWait>>();
  const closing = new AbortController();

  const find = async (request: WrittenRequest): Promise<Answered | undefined> => {
    const items = await client.listBreadcrumbs({
      schema_name: SCHEMA.ToolResponse,
      tag: TAG.request(request.rid),
      include_context: true,
      limit: 20,
    });
    for (const item of items) {
      const answer = verifiedAnswer(keys, workspace, request, item.tags, item.context);
      if (answer) return { kind: 'answered', answer, responseId: item.id };
    }
    return undefined;
  };

  const consider = async (entry: PendingWait, event: StoreEvent): Promise<void> => {
    let context: unknown = event.context;
    if (context === undefined && event.breadcrumb_id)
      context = (await client.getBreadcrumbFull(event.breadcrumb_id)).context;
    const answer = verifiedAnswer(keys, workspace, entry.request, event.tags ?? [], context);
    if (answer && event.breadcrumb_id) entry.settle({ kind: 'answered', answer, responseId: event.breadcrumb_id });
  };

  const poll = (entry: PendingWait): Promise<void> =>
    find(entry.request).then((found) => (found ? entry.settle(found) : undefined));

  const wait = (request: WrittenRequest, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<WaitOutcome> =>
    new Promise<WaitOutcome>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let polls = 0;
      let interval = POLL_BACKOFF_INITIAL_MS;
      let finished = false;
      const stop = AbortSignal.any([closing.signal, ...(opts.signal ? [opts.signal] : [])]);
      const entry: PendingWait = { request, settle: (outcome) => end(outcome) };
      const onAbort = (): void => end({ kind: 'cancelled' });
      const deadline = setTimeout(() => end({ kind: 'timeout' }), opts.timeoutMs);
      function end(outcome: WaitOutcome): void {
        if (finished) return;
        finished = true;
        clearTimeout(deadline);
        clearTimeout(timer);
        stop.removeEventListener('abort', onAbort);
        const set = pending.get(request.rid);
        set?.delete(entry);
        if (set?.size === 0) pending.delete(request.rid);
        resolve(outcome);
      }
      const tick = (): void => {
        timer = setTimeout(() => {
          poll(entry)
            .catch(() => undefined) // store trouble: the next poll or an event settles it
            .finally(() => {
              if (finished) return;
              interval = backoffMs({ initialMs: POLL_BACKOFF_INITIAL_MS, maxMs: pollMaxMs }, ++polls);
              tick();
            });
        }, interval);
      };
      if (stop.aborted) return end({ kind: 'cancelled' });
      stop.addEventListener('abort', onAbort, { once: true });
      let set = pending.get(request.rid);
      if (!set) pending.set(request.rid, (set = new Set()));
      set.add(entry);
      tick();
    });

  return {
    async write(call, opts) {
      const rid = call.rid ?? randomUUID();
      const { id } = await client.createBreadcrumb(
        {
          title: `Request: ${call.tool}`,
          schema_name: SCHEMA.ToolRequest,
          tags: [TAG.Request, workspace, ...(call.tags ?? [])],
          context: {
            ...call.context,
            tool: call.tool,
            input: call.input,
            requestId: rid,
            requestedBy: call.requestedBy,
          },
        },
        {
          ...(opts?.signal ? { signal: opts.signal } : {}),
          ...(opts?.idempotencyKey !== undefined ? { idempotencyKey: opts.idempotencyKey } : {}),
        },
      );
      return { rid, breadcrumbId: id };
    },
    async writer() {
      const token = await client.token();
      if (token === undefined) return undefined;
      try {
        const { sub } = decodeJwt(token);
        return typeof sub === 'string' && sub !== '' ? sub : undefined;
      } catch {
        return undefined; // an opaque token: the store cannot name its writer to us
      }
    },
    wait,
    find,
    async withdraw(request) {
      try {
        await client.deleteBreadcrumb(request.breadcrumbId);
        return true;
      } catch (error) {
        if (isNotFound(error)) return false;
        throw error;
      }
    },
    handleEvent(event) {
      if (event.type !== 'breadcrumb.updated' || event.schema_name !== SCHEMA.ToolResponse || pending.size === 0)
        return;
      for (const tag of event.tags ?? []) {
        if (!tag.startsWith('request:')) continue;
        for (const entry of pending.get(tag.slice('request:'.length)) ?? [])
          void consider(entry, event).catch(() => undefined);
      }
    },
    onReconnect() {
      for (const set of pending.values()) for (const entry of set) void poll(entry).catch(() => undefined);
    },
    close() {
      closing.abort();
    },
  };
}
