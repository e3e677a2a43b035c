// What a part that joins the running service implements (bootstrap, MCP): the
// service starts each extension with an ExtensionContext, hands it the store's events, and serves the
// admin routes it declares. Types only; the service (src/service) is the one implementation.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { RequestKeys, StoreClient } from './breadcrumbs/index.js';
import type { StoreEvent } from './breadcrumbs/messages.js';
import type { Catalog, OperatorTool } from './catalog/catalog.js';
import type { Stamper } from './catalog/deployment.js';
import type { Config } from './config/index.js';
import type { Refusal } from './console/access.js';
import type { Logger } from './logger.js';
import type { Sandbox } from './sandbox/index.js';
import type { SchemaValidator } from './screen/index.js';
import type { SecretResolver } from './tool-context/secrets.js';

/** What the guard let through, for a route with a check of its own (the MCP SDK's allow-lists). */
export interface AdminRouteContext {
  /** The exact Host values and Origins allowed without a token; undefined when a token is required instead. */
  allowList?: { hosts: string[]; origins: string[] };
}

/**
 * A route an extension serves on the admin port (any method; it writes the whole response), after
 * the guard; `refuse`, when present, writes the guard's refusals in the route's own format.
 */
export type AdminRoute = ((req: IncomingMessage, res: ServerResponse, context: AdminRouteContext) => Promise<void>) & {
  refuse?(res: ServerResponse, refusal: Refusal): void;
};

/** A part that joins the running service (e.g. bootstrap, MCP). */
export interface ServiceExtension {
  name: string;
  start(ctx: ExtensionContext): Promise<void>;
  handleEvent?(event: StoreEvent): void;
  /** Called after the event stream reconnects (run a catch-up scan). */
  onReconnect?(): void;
  /** The store's copy of a pinned operator tool is missing or differs from its file. */
  onOperatorDrift?(name: string): void;
  stop?(): Promise<void>;
  /** Health warnings (said on /health without failing it), e.g. a schedule lagging more than its period. */
  warnings?(): string[];
  /** What the console shows of it (GET /api/extensions/<name>), e.g. the autonomy extension's subscriptions and continuous tools. */
  status?(): unknown;
  /** Routes it serves on the admin port (path → handler), e.g. `/mcp`. */
  adminRoutes?(): ReadonlyMap<string, AdminRoute>;
}

export interface ExtensionContext {
  client: StoreClient;
  /** The runner's key derivation (Idempotency-Keys, answer tags). */
  keys: RequestKeys;
  catalog: Catalog;
  sandbox: Sandbox;
  config: Config;
  logger: Logger;
  replica: string;
  signal: AbortSignal;
  /** Signs what the runner deploys (deployment stamps). */
  stamper: Stamper;
  /** Pins an operator tool: the catalog runs only this definition under its name. */
  pinOperatorTool(pin: OperatorTool): void;
  secrets: SecretResolver;
  /** The runner's one schema validator (compiled-schema cache), shared with the request path. */
  validator: SchemaValidator;
  /** Sends a message to the admin port's live feed (`tools-runner tail`, the console's Live page); no-op without one. */
  live?(
    message: { type: 'execution:started' | 'execution:finished'; rid: string; tool: string } & Record<string, unknown>,
  ): void;
  /** The service's Prometheus registry (`/metrics`), for the extension's own gauges. */
  metrics?: Registry;
}
