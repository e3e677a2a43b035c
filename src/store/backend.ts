// The storage seam of the store: what the HTTP routes, the in-process endpoint and the SSE hub
// need from a database, so SQLite (db.ts and its repositories, synchronous) and PostgreSQL (pg/,
// asynchronous) serve the same API. Every method may answer directly or with a promise: the
// callers await, which costs the synchronous SQLite side nothing but a microtask.

import type { Actor } from './breadcrumb-writes.js';
import type { BreadcrumbWrites } from './breadcrumb-writes.js';
import type { ListFilter } from './breadcrumb-reads.js';
import type { Leases } from './leases.js';
import type { Registry } from './registry.js';
import type { SearchQuery } from './search.js';
import type { SecretsRepo } from './secrets.js';

/** A value now or later. */
export type MaybePromise<T> = T | Promise<T>;

/** `T` with every method allowed to answer through a promise. */
export type Awaitable<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => MaybePromise<R> : T[K];
};

/** A listing in progress (SQLite's cursors answer synchronously, PostgreSQL's page by page). Always `close()` it. */
export interface ItemCursor {
  next(): MaybePromise<Record<string, unknown> | undefined>;
  close(): void;
}

/** The read side as the operations use it. */
export interface ReadsPort {
  contextView(id: string, actor: Actor): MaybePromise<Record<string, unknown>>;
  full(id: string, actor: Actor): MaybePromise<Record<string, unknown>>;
  list(filter: ListFilter, actor: Actor): MaybePromise<ItemCursor>;
  history(id: string, actor: Actor): MaybePromise<Array<Record<string, unknown>>>;
}

/** The search as the operations use it. */
export interface SearchPort {
  search(query: SearchQuery, actor: Actor): Promise<ItemCursor>;
}

/** The write side, secrets and registries as the operations and routes use them. */
/** The SQLite-only parts (retention's row removal, transaction figures) are not part of the port. */
export type WritesPort = Awaitable<Omit<BreadcrumbWrites, 'removeRows' | 'stats' | 'defer' | 'flush'>>;
export type SecretsPort = Awaitable<SecretsRepo>;
export type RegistryPort = Awaitable<Registry>;
/** The lease table (leases.ts on SQLite, pg/leases.ts on PostgreSQL). */
export type LeasesPort = Awaitable<Leases>;
