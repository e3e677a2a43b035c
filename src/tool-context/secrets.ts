// Resolves the secrets a tool declares (`required_secrets`) for one call.
//
// Order: the store's secrets API — scope `tool`, then `workspace`/<workspace>, then `global` — and
// then the operator's secrets file (a JSON object of name -> value). The runner's own environment is
// never consulted wholesale. Every value learnt is registered with the logger's redaction so it
// cannot appear in a log line. Each store decrypt is audited by the store with a reason naming the
// tool and request.
//
// Scope `tool` goes only to the definition it was granted to: a secret whose scope_id is the id of
// the tool.code.v1 record being run (a UUID, as upstream rcrt-server requires for scope_id); a
// scope_id equal to the tool's *name* counts only for operator tools (host tools and pinned bootstrap
// tools), whose names agents cannot take. Secrets are listed by `scope_type` alone and matched on
// scope_id here, because upstream types scope_id as a UUID: `?scope_id=<name>` or
// `?scope_id=workspace:tools` would be refused there (400), while listing by type works on both stores.

import { readFile } from 'node:fs/promises';
import type { StoreClient } from '../breadcrumbs/index.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';

export interface SecretResolution {
  values: Record<string, string>;
  missing: string[];
}

/** Whom a call's secrets are for. */
export interface SecretScope {
  tool: string;
  rid: string;
  /** Id of the tool.code.v1 record being run (scope `tool`/<id>). */
  definitionId?: string;
  /** True for operator tools (host tools, pinned bootstrap tools): scope `tool`/<name> applies too. */
  operator?: boolean;
}

export interface SecretResolver {
  resolve(names: readonly string[], scope: SecretScope): Promise<SecretResolution>;
  /** One secret by name (host tools' header placeholders). */
  resolveOne(name: string, scope: SecretScope): Promise<string | undefined>;
}

export interface SecretResolverOptions {
  client: StoreClient;
  workspace: string;
  logger: Logger;
  /** Already-loaded fallback values (see loadSecretsFile). */
  fileSecrets?: Readonly<Record<string, string>>;
  /** How long the list of secret ids (not values) is cached. */
  listCacheMs?: number;
}

/** Reads a secrets file: a JSON object whose values are all strings. Errors name the problem. */
export async function loadSecretsFile(path: string, logger: Logger): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new RunnerError(ErrorCode.ConfigInvalid, `cannot read secrets file "${path}": ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new RunnerError(ErrorCode.ConfigInvalid, `secrets file "${path}" is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new RunnerError(ErrorCode.ConfigInvalid, `secrets file "${path}" must hold a JSON object of name -> string`);
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value !== 'string') {
      throw new RunnerError(ErrorCode.ConfigInvalid, `secrets file "${path}": the value of "${name}" must be a string`);
    }
    out[name] = value;
    logger.redact(value);
  }
  return out;
}

type Listed = { id: string; name: string; scope_type: string; scope_id?: string | null };

/** Creates the secret resolver. */
export function createSecretResolver(options: SecretResolverOptions): SecretResolver {
  const { client, workspace, logger } = options;
  const listCacheMs = options.listCacheMs ?? 5_000;
  const listCache = new Map<string, { at: number; items: Listed[] }>();

  const list = async (scopeType: string): Promise<Listed[]> => {
    const cached = listCache.get(scopeType);
    if (cached && Date.now() - cached.at < listCacheMs) return cached.items;
    const items = await client.listSecrets({ scope_type: scopeType });
    listCache.set(scopeType, { at: Date.now(), items });
    return items;
  };

  const resolveOne = async (name: string, ctx: SecretScope): Promise<string | undefined> => {
    const scopes: Array<{ type: string; matches: (scopeId: string | null | undefined) => boolean }> = [
      {
        type: 'tool',
        matches: (scopeId) =>
          (ctx.definitionId !== undefined && ctx.definitionId !== '' && scopeId === ctx.definitionId) ||
          (ctx.operator === true && scopeId === ctx.tool),
      },
      { type: 'workspace', matches: (scopeId) => scopeId === workspace },
      { type: 'global', matches: () => true },
    ];
    for (const scope of scopes) {
      const match = (await list(scope.type)).find(
        (item) => item.name === name && item.scope_type === scope.type && scope.matches(item.scope_id),
      );
      if (!match) continue;
      const value = await client.decryptSecret(match.id, `tool:${ctx.tool} request:${ctx.rid}`);
      logger.redact(value);
      return value;
    }
    return options.fileSecrets?.[name];
  };

  const resolve = async (names: readonly string[], ctx: SecretScope): Promise<SecretResolution> => {
    const values: Record<string, string> = {};
    const missing: string[] = [];
    for (const name of names) {
      const value = await resolveOne(name, ctx);
      if (value === undefined) missing.push(name);
      else values[name] = value;
    }
    return { values, missing };
  };

  return { resolve, resolveOne };
}

/** The example runner's secrets: --secrets-file when set (read once, on first use), else none. */
export function secretsLoader(
  config: { readonly secretsFile?: string | undefined },
  logger: Logger,
): { secrets?: () => Promise<Record<string, string>> } {
  const file = config.secretsFile;
  return file ? { secrets: () => loadSecretsFile(file, logger) } : {};
}
