// Resolves the secrets a tool declares (`required_secrets`) for one call.
//
// Order: the store's secrets API — scope `tool`, then `workspace`/<workspace>, then `global` — and
// then the operator's secrets file (a JSON object of name -> value). The runner's own environment is
// never consulted wholesale. Every value learnt is registered with the logger's redaction so it
// cannot appear in a log line. Each store decrypt is audited by the store with a reason naming the
// tool and request.
//
// Who receives what (docs/security.md, the trust table of secrets):
// - Scope `tool` goes only to the definition it was granted to: a secret whose scope_id is the id of
//   the tool.code.v1 record being run (a UUID, as upstream rcrt-server requires for scope_id); a
//   scope_id equal to the tool's *name* counts only for operator tools (host tools and pinned
//   bootstrap tools), whose names agents cannot take.
// - The operator's secrets — `workspace`, `global` and the secrets file — reach operator tools, and
//   an agent-written tool only when `--share-secrets` shares that name with the tool's name or with
//   `agents`. An unshared one is never decrypted for an agent tool: the call is answered
//   secret.missing naming the secret and the share that would give it.
//
// Secrets are listed by `scope_type` alone and matched on scope_id here, because upstream types
// scope_id as a UUID: `?scope_id=<name>` or `?scope_id=workspace:tools` would be refused there
// (400), while listing by type works on both stores.

import { readFile } from 'node:fs/promises';
import type { StoreClient } from '../breadcrumbs/index.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { AGENT_TOOLS } from '../config/index.js';

export interface SecretResolution {
  values: Record<string, string>;
  missing: string[];
  /** Of `missing`: names the operator holds (workspace, global, secrets file) but has not shared with this agent tool. */
  unshared: string[];
}

/** Whom a call's secrets are for. */
export interface SecretScope {
  tool: string;
  rid: string;
  /** Id of the tool.code.v1 record being run (scope `tool`/<id>). */
  definitionId?: string;
  /**
   * True for operator tools (host tools, pinned bootstrap tools): scope `tool`/<name> applies too, and
   * so do the operator's secrets; absent = an agent-written tool (only its own and shared secrets).
   */
  operator?: boolean;
}

export interface SecretResolver {
  resolve(names: readonly string[], scope: SecretScope): Promise<SecretResolution>;
  /** Of `names`, those an agent tool asks for that are neither scoped to it nor shared with it (none for operator tools). */
  unshared(names: readonly string[], scope: SecretScope): Promise<string[]>;
  /** One secret by name (host tools' header placeholders). */
  resolveOne(name: string, scope: SecretScope): Promise<string | undefined>;
}

export interface SecretResolverOptions {
  client: StoreClient;
  workspace: string;
  logger: Logger;
  /** Already-loaded fallback values (see loadSecretsFile). */
  fileSecrets?: Readonly<Record<string, string>>;
  /** `--share-secrets`: operator secret name -> agent tool names or `agents`. */
  shares?: Readonly<Record<string, readonly string[]>>;
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

  const shared = (name: string, tool: string): boolean => {
    const to = options.shares?.[name];
    return to !== undefined && (to.includes(AGENT_TOOLS) || to.includes(tool));
  };

  const scoped = async (name: string, ctx: SecretScope): Promise<Listed | undefined> =>
    (await list('tool')).find(
      (item) =>
        item.name === name &&
        item.scope_type === 'tool' &&
        ((ctx.definitionId !== undefined && ctx.definitionId !== '' && item.scope_id === ctx.definitionId) ||
          (ctx.operator === true && item.scope_id === ctx.tool)),
    );

  // The operator's own secrets: workspace, then global (listed, not decrypted), then the secrets file.
  const held = async (name: string): Promise<Listed | 'file' | undefined> => {
    for (const type of ['workspace', 'global']) {
      const match = (await list(type)).find(
        (item) => item.name === name && item.scope_type === type && (type === 'global' || item.scope_id === workspace),
      );
      if (match) return match;
    }
    return options.fileSecrets?.[name] !== undefined ? 'file' : undefined;
  };

  const decrypt = async (item: Listed, ctx: SecretScope): Promise<string> => {
    const value = await client.decryptSecret(item.id, `tool:${ctx.tool} request:${ctx.rid}`);
    logger.redact(value);
    return value;
  };

  // A value, or why there is none: `unset` anywhere, or held by the operator and `unshared` with this agent tool.
  const lookup = async (name: string, ctx: SecretScope): Promise<string | 'unset' | 'unshared'> => {
    const own = await scoped(name, ctx);
    if (own) return decrypt(own, ctx);
    const found = await held(name);
    if (found === undefined) return 'unset';
    if (ctx.operator !== true && !shared(name, ctx.tool)) return 'unshared';
    return found === 'file' ? (options.fileSecrets?.[name] as string) : decrypt(found, ctx);
  };

  const resolveOne = async (name: string, ctx: SecretScope): Promise<string | undefined> => {
    const value = await lookup(name, ctx);
    return value === 'unset' || value === 'unshared' ? undefined : value;
  };

  const resolve = async (names: readonly string[], ctx: SecretScope): Promise<SecretResolution> => {
    const values: Record<string, string> = {};
    const missing: string[] = [];
    const unshared: string[] = [];
    for (const name of names) {
      const value = await lookup(name, ctx);
      if (value === 'unshared') unshared.push(name);
      if (value === 'unset' || value === 'unshared') missing.push(name);
      else values[name] = value;
    }
    return { values, missing, unshared };
  };

  const unshared = async (names: readonly string[], ctx: SecretScope): Promise<string[]> => {
    if (ctx.operator === true) return [];
    const out: string[] = [];
    for (const name of names) if (!shared(name, ctx.tool) && !(await scoped(name, ctx))) out.push(name);
    return out;
  };

  return { resolve, resolveOne, unshared };
}

/** The example runner's secrets: --secrets-file when set (read once, on first use), else none. */
export function secretsLoader(
  config: { readonly secretsFile?: string | undefined },
  logger: Logger,
): { secrets?: () => Promise<Record<string, string>> } {
  const file = config.secretsFile;
  return file ? { secrets: () => loadSecretsFile(file, logger) } : {};
}

/** The secret.missing message of a call: names each missing secret and, for an agent tool, how the operator gives it. */
export function missingSecretsMessage(
  tool: string,
  resolution: Pick<SecretResolution, 'missing' | 'unshared'>,
): string {
  const unset = resolution.missing.filter((name) => !resolution.unshared.includes(name));
  const parts: string[] = [];
  if (unset.length > 0) parts.push(`tool "${tool}" needs secret(s) that are not set: ${unset.join(', ')}`);
  if (resolution.unshared.length > 0)
    parts.push(
      `tool "${tool}" needs secret(s) the operator has not shared with agent-written tools: ${resolution.unshared.join(', ')} (the operator shares them with --share-secrets "${resolution.unshared.map((name) => `${name}=${tool}`).join(';')}", or scopes a secret to this tool's record)`,
    );
  return parts.join('; ');
}
