// CLI client commands (call, bootstrap, export) reach the store: its URL (--store-url, else the local
// embedded store's address from --host/--port), a client with the right credentials, and one line
// that says what is missing and how to fix it when the store cannot be used.

import { createStoreClient, type StoreClient } from '../breadcrumbs/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';
import { EXIT, type CommandContext } from './command.js';
import type { RequestKeys } from '../breadcrumbs/request-keys.js';
import { resolveRequestKeys } from '../catalog/runner-key.js';

/** The store base URL a client command should talk to. */
export function clientStoreUrl(config: Config): string {
  if (config.storeUrl) return config.storeUrl;
  const host =
    config.host === '0.0.0.0'
      ? '127.0.0.1'
      : config.host === '::'
        ? '[::1]'
        : config.host.includes(':')
          ? `[${config.host}]`
          : config.host;
  return `http://${host}:${config.port}`;
}

/**
 * The store client of a CLI command: `--store-token` when given, else a token minted for `agentId`
 * (with `--admin-key` when the store requires it).
 */
export function cliStoreClient(config: Config, logger: Logger, agentId: string, roles: string[]): StoreClient {
  return createStoreClient({
    baseUrl: clientStoreUrl(config),
    logger,
    auth: config.storeToken
      ? { token: config.storeToken }
      : {
          mint: {
            owner_id: config.ownerId,
            agent_id: agentId,
            roles,
            ...(config.adminKey ? { adminKey: config.adminKey } : {}),
          },
        },
  });
}

interface StoreFailure {
  status?: unknown;
  storeCode?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** The network reason of a failed call (ECONNREFUSED, ENOTFOUND, ...), if any. */
function networkReason(error: StoreFailure): string | undefined {
  const cause = error.cause as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = cause?.code ?? cause?.cause?.code;
  if (typeof code === 'string') return code;
  const match = typeof error.message === 'string' ? /\b(E[A-Z]{3,})\b/.exec(error.message) : null;
  return match?.[1];
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ECONNRESET: 'connection reset',
};

/**
 * When `error` means the store is unusable (unreachable, or refused the credentials), one line that
 * says what is missing and how to fix it, with exit code 4; otherwise undefined.
 */
export function storeProblem(
  error: unknown,
  config: Config,
  command: string,
  hint?: string,
): { line: string; exit: number } | undefined {
  const e = (error ?? {}) as StoreFailure;
  const url = clientStoreUrl(config);
  if (e.status === 0 && e.storeCode === 'network') {
    const code = networkReason(e);
    const why = code ? (REASONS[code] ?? code) : 'no answer';
    return {
      line: `tools-runner ${command}: no store at ${url} (${why}). Start one with "tools-runner start", or point --store-url (TOOLS_RUNNER_STORE_URL) at a running store.${hint ? ` ${hint}` : ''}`,
      exit: EXIT.Unavailable,
    };
  }
  if (e.status === 401 || e.status === 403) {
    return {
      line: `tools-runner ${command}: the store at ${url} refused the CLI's credentials (HTTP ${String(e.status)}: ${String(e.message)}). With auth on, pass --admin-key (to mint a token) or --store-token.`,
      exit: EXIT.Unavailable,
    };
  }
  return undefined;
}

/** A command's `catch`: a store that is unusable is its one line on stderr and exit code 4; anything else is rethrown. */
export function exitForStoreProblem(
  error: unknown,
  ctx: { config: Config; err(line: string): void },
  command: string,
  hint?: string,
): number {
  const problem = storeProblem(error, ctx.config, command, hint);
  if (!problem) throw error;
  ctx.err(problem.line);
  return problem.exit;
}

/** The request keys of the runner secret, or an error line (usage) when it cannot be had. */
export function cliKeys(ctx: Pick<CommandContext, 'config' | 'logger'>, command: string): RequestKeys | string {
  const { config, logger } = ctx;
  try {
    return resolveRequestKeys({
      runnerSecret: config.runnerSecret,
      dataDir: config.dataDir,
      logger,
      storeUrl: config.storeUrl,
    });
  } catch (error) {
    return `tools-runner ${command}: ${(error as Error).message}`;
  }
}
