// The in-process store transport's protocol: what the embedded store's endpoint (src/store/local.ts)
// serves and the store client's in-process transport (src/breadcrumbs/client-local.ts) calls. It
// lives here, beside config/errors/logger, so that neither side imports the other.

/** One in-process request, as the HTTP transport would have sent it. */
export interface LocalRequest {
  query: URLSearchParams;
  headers: Record<string, string>;
  /** The JSON body (a fresh copy owned by the store from here on); undefined when none. */
  body: unknown;
  token: string | undefined;
}

/** An in-process reply: the status and either the value or the `{error, code, ...}` failure body. */
export type LocalReply = { status: number; value: unknown } | { status: number; error: Record<string, unknown> };

/** Receives stream items in commit order: the event's JSON and its id (when `ids` was asked for). */
export interface LocalStreamSink {
  frame(data: string, id: string | undefined): void;
  /** The store ended the subscription (shutdown), as a server ends an SSE response. */
  end(): void;
}

/** The embedded store's in-process endpoint (`Store.local`). */
export interface LocalEndpoint {
  url: string;
  call(method: string, path: string, request: LocalRequest): Promise<LocalReply>;
  /** Opens an event subscription as `GET /events/stream` with `query` would; resolves with its close function or rejects with the failure reply. */
  stream(
    query: URLSearchParams,
    token: string | undefined,
    lastEventId: string | undefined,
    sink: LocalStreamSink,
  ): Promise<{ close(): void }>;
}
