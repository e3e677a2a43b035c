// Types of pg-cluster-core.mjs (a throwaway PostgreSQL cluster shared by the tests and the benches).

/** Why a cluster cannot start here, or undefined when it can. */
export declare const PG_UNAVAILABLE: string | undefined;

/** A running throwaway cluster. */
export interface PgCluster {
  port: number;
  dataDir: string;
  /** The connection URL of database `name` in this cluster. */
  url(name: string): string;
  /** The server's process id (postmaster.pid), for reading its CPU from /proc. */
  postmasterPid(): number;
  /** Creates a fresh, empty database (`name`, or a unique one) and returns its connection URL. */
  database(name?: string): Promise<string>;
  /** Stops the server immediately (a crash as clients see it) and starts it again on the same port and data dir. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a cluster; `durable` keeps fsync on, `settings` are extra `-c name=value` server settings. */
export declare function startPgCluster(options?: { durable?: boolean; settings?: string[] }): Promise<PgCluster>;
