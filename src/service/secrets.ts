// Resolves the secrets a tool declares (`required_secrets`) for one call.
//
// Order: the store's secrets API — scope `tool`/<tool name>, then `workspace`/<workspace>, then
// `global` — and then the operator's secrets file (a JSON object of name -> value). The runner's own
// environment is never consulted wholesale. Every value learnt is registered with the logger's
// redaction so it cannot appear in a log line. Each store decrypt is audited by the store with a
// reason naming the tool and request.

import { readFile } from 'node:fs/promises';
import type { StoreClient } from '../breadcrumbs/index.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';

export interface SecretResolution {
  values: Record<string, string>;
  missing: string[];
}

export interface SecretResolver {
  resolve(names: readonly string[], scope: { tool: string; rid: string }): Promise<SecretResolution>;
  /** One secret by name (host tools' header placeholders). */
  resolveOne(name: string, scope: { tool: string; rid: string }): Promise<string | undefined>;
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

type Scope = { scope_type: string; scope_id?: string };

/** Creates the secret resolver. */
export function createSecretResolver(options: SecretResolverOptions): SecretResolver {
  const { client, workspace, logger } = options;
  const listCacheMs = options.listCacheMs ?? 5_000;
  const listCache = new Map<string, { at: number; items: Array<{ id: string; name: string }> }>();

  const list = async (scope: Scope): Promise<Array<{ id: string; name: string }>> => {
    const key = `${scope.scope_type}/${scope.scope_id ?? ''}`;
    const cached = listCache.get(key);
    if (cached && Date.now() - cached.at < listCacheMs) return cached.items;
    const items = await client.listSecrets(scope);
    listCache.set(key, { at: Date.now(), items });
    return items;
  };

  const resolveOne = async (name: string, ctx: { tool: string; rid: string }): Promise<string | undefined> => {
    const scopes: Scope[] = [
      { scope_type: 'tool', scope_id: ctx.tool },
      { scope_type: 'workspace', scope_id: workspace },
      { scope_type: 'global' },
    ];
    for (const scope of scopes) {
      const match = (await list(scope)).find((item) => item.name === name);
      if (!match) continue;
      const value = await client.decryptSecret(match.id, `tool:${ctx.tool} request:${ctx.rid}`);
      logger.redact(value);
      return value;
    }
    return options.fileSecrets?.[name];
  };

  const resolve = async (names: readonly string[], ctx: { tool: string; rid: string }): Promise<SecretResolution> => {
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
