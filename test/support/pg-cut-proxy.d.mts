// Types of pg-cut-proxy.mjs (a proxy that cuts a replica's PostgreSQL connection mid-write).
import type pg from 'pg';

/** A running proxy. */
export interface CutProxy {
  port: number;
  /** Cuts the next connection that writes inside a transaction; resolves once it is cut. */
  arm(): Promise<void>;
  close(): void;
}

/** Starts a proxy to `target` on a free port of 127.0.0.1. */
export declare function startCutProxy(target: URL): Promise<CutProxy>;

/** Resolves once a session named `name` is idle inside a transaction; rejects after `boundMs`. */
export declare function idleInTransaction(
  pgModule: typeof pg,
  url: string,
  name: string,
  boundMs: number,
): Promise<void>;
