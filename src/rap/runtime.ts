// The RAP runtime's toolsets: what `--rap-servers` offer, and which of their tools become host tools.
//
// Each base URL is fetched at start and every refresh interval. A toolset that fails
// validation is dropped whole; a server that cannot be reached or answers non-2xx keeps its
// last good toolset (a restart of the tool server must not churn the catalog) and the error is
// reported. Names: a name defined by two toolsets, or by a toolset and a local host tool
// (manifests), is exposed by neither; a RAP tool named like a valid tool.code.v1 is not exposed
// (code tools always win routing, and agents can create them, so a code tool is never hidden).
// Every problem is logged and kept in status(); a change of the exposed set calls onChange.

import { createHash } from 'node:crypto';
import { canonicalJson, type SchemaValidator } from '../screen/index.js';
import { ErrorCode, RunnerError } from '../errors.js';
import type { HostTool } from '../host-tools/index.js';
import type { Logger } from '../logger.js';
import { contractFromRap } from '../contract/contract.js';
import { discoveryUrl, fetchToolset, isHttpUrl, type RapToolset } from './toolset.js';

/** Inputs of the runtime. */
export interface RapRuntimeOptions {
  servers: readonly string[];
  validator: SchemaValidator;
  logger: Logger;
  /** Result timeout given to each tool's transport. */
  resultTimeoutMs: number;
  fetchTimeoutMs?: number;
  /** Local host tools (manifests) at the time of the check. */
  localHostTools(): readonly HostTool[];
  /** Names of the runnable tool.code.v1 tools. */
  codeToolNames(): readonly string[];
  /** The bearer token for a server (`--rap-server-tokens`), by its base URL. */
  tokenFor?(base: string): string | undefined;
  onChange?(): void;
}

/** One configured server and what was last learnt from it. */
export interface RapServerStatus {
  base: string;
  url: string;
  toolset?: string;
  tools: string[];
  error?: string;
  fetchedAt?: string;
}

/** The runtime's public state. */
export interface RapRuntimeStatus {
  servers: RapServerStatus[];
  /** Name clashes: names exposed by nobody, and why. */
  clashes: string[];
  exposed: string[];
}

/** The runtime. */
export interface RapRuntime {
  /** Fetches every toolset again and recomputes the exposed tools. */
  refresh(signal?: AbortSignal): Promise<void>;
  /** The host tools to route: local ones minus clashing names, plus the exposed RAP tools. */
  hostTools(local: readonly HostTool[]): HostTool[];
  /** The exposed RAP tools. */
  tools(): readonly HostTool[];
  /** Local host tools kept out because a RAP tool has their name (a clash exposes neither). */
  blockedLocal(): string[];
  status(): RapRuntimeStatus;
}

/** Checks `--rap-servers`: every entry an absolute http(s) URL (RunnerError config.invalid otherwise). */
export function checkServerList(servers: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const base of servers) {
    if (!isHttpUrl(base))
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `--rap-servers entry ${JSON.stringify(base)} is not an absolute http(s) URL`,
      );
    const key = base.replace(/\/+$/, '');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(base);
  }
  return out;
}

/**
 * Parses `--rap-server-tokens` (`url=token`, `url` one of `servers`) into tokens by server key (the
 * base URL without trailing slashes; see serverKey). Matched against the configured URLs, so neither
 * a `=` in a URL nor one in a token is ambiguous. Errors name the entry, never its token.
 */
export function parseServerTokens(entries: readonly string[], servers: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const keys = [...new Set(servers.map(serverKey))].sort((a, b) => b.length - a.length);
  entries.forEach((entry, index) => {
    const trimmed = entry.trim();
    const key = keys.find((k) => trimmed.startsWith(`${k}=`) || trimmed.startsWith(`${k}/=`));
    if (key === undefined) {
      const shown = trimmed.includes('=') ? trimmed.slice(0, trimmed.indexOf('=')) : '(no "=")';
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `--rap-server-tokens entry ${index + 1} must be "url=token" with url one of --rap-servers (${servers.join(', ') || 'none set'}), got url ${JSON.stringify(shown.slice(0, 200))}`,
      );
    }
    const token = trimmed.slice(trimmed.indexOf('=', key.length) + 1).trim();
    if (token.length === 0 || /[\s\u0000-\u001f\u007f]/.test(token))
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `--rap-server-tokens: the token for ${key} is empty or contains whitespace or control characters`,
      );
    if (out.has(key)) throw new RunnerError(ErrorCode.ConfigInvalid, `--rap-server-tokens names ${key} twice`);
    out.set(key, token);
  });
  return out;
}

/** A --rap-servers entry as the key of its token. */
export function serverKey(base: string): string {
  return base.replace(/\/+$/, '');
}

interface ServerState {
  base: string;
  url: string;
  toolset?: RapToolset;
  error?: string;
  fetchedAt?: string;
}

function toHostTool(
  toolset: RapToolset,
  def: RapToolset['tools'][number],
  base: string,
  url: string,
  timeoutMs: number,
): HostTool {
  const digest = createHash('sha256')
    .update(canonicalJson({ endpoint: toolset.endpoint, toolset: toolset.name, tool: def }))
    .digest('hex');
  return {
    name: def.name,
    description: def.description,
    format: 'rap',
    manifestPath: url,
    manifestDigest: digest,
    inputSchema: def.inputSchema,
    resultSchema: null,
    transport: {
      kind: 'rap',
      endpoint: toolset.endpoint,
      base,
      toolset: toolset.name,
      operation: def.name,
      ...(def.displayScript !== undefined ? { displayScript: def.displayScript } : {}),
      ...(def.annotations ? { annotations: def.annotations } : {}),
      timeoutMs,
    },
    capabilities: [],
    secrets: [],
    // The side-effect crosswalk (src/contract/contract.ts): destructive tools need confirmation, like Runloop's requires_confirmation.
    requiresConfirmation: def.annotations?.['destructive'] === true,
    observabilityTags: [`rap:${toolset.name}`],
    // readOnly / destructive / idempotent annotations -> side_effect / idempotent; none (or both) = unknown.
    contract: contractFromRap(def.annotations),
  };
}

/** Creates the runtime (call refresh() to load). */
export function createRapRuntime(options: RapRuntimeOptions): RapRuntime {
  const { logger } = options;
  const states: ServerState[] = checkServerList(options.servers).map((base) => ({ base, url: discoveryUrl(base) }));
  let exposed: HostTool[] = [];
  let blockedLocal = new Set<string>();
  let clashes: string[] = [];
  let fingerprint = '';

  const recompute = (): void => {
    const candidates: Array<{ tool: HostTool; state: ServerState; toolset: RapToolset }> = [];
    for (const state of states) {
      if (!state.toolset) continue;
      for (const def of state.toolset.tools)
        candidates.push({
          tool: toHostTool(state.toolset, def, state.base, state.url, options.resultTimeoutMs),
          state,
          toolset: state.toolset,
        });
    }
    const byName = new Map<string, typeof candidates>();
    for (const c of candidates) byName.set(c.tool.name, [...(byName.get(c.tool.name) ?? []), c]);
    const local = new Set(options.localHostTools().map((t) => t.name));
    const code = new Set(options.codeToolNames());
    const next: HostTool[] = [];
    const nextBlocked = new Set<string>();
    const reports: string[] = [];
    for (const [name, group] of [...byName.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const where = group.map((c) => `${JSON.stringify(c.toolset.name)} from ${c.state.url}`).join(', ');
      if (group.length > 1) {
        reports.push(
          `Duplicate tool names across toolsets: ${JSON.stringify(name)} is defined by ${where}; neither is exposed`,
        );
      } else if (local.has(name)) {
        nextBlocked.add(name);
        reports.push(
          `RAP tool ${JSON.stringify(name)} of toolset ${where} has the name of a local host tool; neither is exposed`,
        );
      } else if (code.has(name)) {
        reports.push(
          `RAP tool ${JSON.stringify(name)} of toolset ${where} has the name of a tool.code.v1 tool; the RAP tool is not exposed`,
        );
      } else {
        next.push((group[0] as (typeof group)[number]).tool);
      }
    }
    const nextPrint = canonicalJson({
      tools: next.map((t) => [t.name, t.manifestDigest]),
      blocked: [...nextBlocked].sort(),
    });
    for (const report of reports) if (!clashes.includes(report)) logger.error('rap tool name clash', { report });
    exposed = next;
    blockedLocal = nextBlocked;
    clashes = reports;
    if (nextPrint !== fingerprint) {
      fingerprint = nextPrint;
      logger.info('rap tools changed', { exposed: next.map((t) => t.name), blockedLocal: [...nextBlocked] });
      options.onChange?.();
    }
  };

  const refreshOne = async (state: ServerState, signal?: AbortSignal): Promise<void> => {
    const token = options.tokenFor?.(state.base);
    const fetched = await fetchToolset(state.base, {
      validator: options.validator,
      timeoutMs: options.fetchTimeoutMs ?? 10_000,
      ...(signal ? { signal } : {}),
      ...(token !== undefined ? { token } : {}),
    });
    state.fetchedAt = new Date().toISOString();
    if (fetched.ok) {
      if (state.error !== undefined) logger.info('rap toolset loaded again', { url: state.url });
      delete state.error;
      state.toolset = fetched.toolset;
      return;
    }
    if (state.error !== fetched.error)
      logger.error('rap toolset not loaded', {
        url: state.url,
        error: fetched.error,
        keptPrevious: fetched.kind !== 'invalid' && state.toolset !== undefined,
      });
    state.error = fetched.error;
    if (fetched.kind === 'invalid') delete state.toolset;
  };

  return {
    async refresh(signal) {
      await Promise.all(states.map((state) => refreshOne(state, signal)));
      recompute();
    },
    hostTools(local) {
      if (states.length === 0) return [...local];
      return [...local.filter((tool) => !blockedLocal.has(tool.name)), ...exposed];
    },
    tools: () => exposed,
    blockedLocal: () => [...blockedLocal],
    status: () => ({
      servers: states.map((s) => ({
        base: s.base,
        url: s.url,
        ...(s.toolset ? { toolset: s.toolset.name } : {}),
        tools: s.toolset?.tools.map((t) => t.name) ?? [],
        ...(s.error !== undefined ? { error: s.error } : {}),
        ...(s.fetchedAt ? { fetchedAt: s.fetchedAt } : {}),
      })),
      clashes: [...clashes],
      exposed: exposed.map((t) => t.name),
    }),
  };
}
