// The building blocks of the configuration schema (./schema.ts): option metadata, and the value
// types that also accept the strings env vars and flags carry (booleans, integers, lists, JSON
// objects, private-host grants).

import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export type OptionGroup = 'store' | 'runner' | 'sandbox' | 'authoring' | 'legacy' | 'rap' | 'general';

export interface OptionMeta {
  group: OptionGroup;
  doc: string;
  /** Shown instead of the JSON default in docs (e.g. for generated values). */
  defaultText?: string;
  /** Never echo the value (tokens, keys). */
  secret?: boolean;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

/** A boolean that also accepts the strings env vars and flags carry. */
export const boolish = z.preprocess((value) => {
  if (typeof value !== 'string') return value;
  const lower = value.trim().toLowerCase();
  if (TRUE.has(lower)) return true;
  if (FALSE.has(lower)) return false;
  return value;
}, z.boolean());

/** An integer that also accepts its decimal string form. */
export const intish = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.preprocess(
    (value) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value),
    z.number().int().min(min).max(max),
  );

/** A list given as a JSON array or a comma-separated string. */
export const listish = z.preprocess(
  (value) => {
    if (typeof value !== 'string') return value;
    const trimmed = value.trim();
    if (trimmed === '') return [];
    if (trimmed.startsWith('[')) {
      try {
        return JSON.parse(trimmed) as unknown;
      } catch {
        return value;
      }
    }
    return trimmed
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '');
  },
  z.array(z.string().min(1)),
);

export const optionalString = z.string().min(1).optional();

/** `host:port` of a private-host grant: a name, an IPv4 literal or a bracketed IPv6 literal, and a port. */
const PRIVATE_HOST =
  /^(?:\[[0-9a-f:.]+\]|(?:\d{1,3}\.){3}\d{1,3}|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*):([1-9]\d{0,4})$/;

/** Why one `host:port` of --allow-private-hosts is unusable, or undefined when it is fine. */
export function privateHostProblem(entry: string): string | undefined {
  const match = PRIVATE_HOST.exec(entry);
  if (!match)
    return `${JSON.stringify(entry)} is not host:port (a host name, an IPv4 address or [IPv6] address, and a port 1-65535)`;
  if (Number(match[1]) > 65535) return `${JSON.stringify(entry)} has a port above 65535`;
  const host = entry.slice(0, entry.lastIndexOf(':'));
  if (/^(?:\d{1,3}\.){3}\d{1,3}$/.test(host) && host.split('.').some((part) => Number(part) > 255)) {
    return `${JSON.stringify(entry)} is not a valid IPv4 address`;
  }
  if (host === '0.0.0.0' || host === '[::]' || host === '[0:0:0:0:0:0:0:0]')
    return `${JSON.stringify(entry)} is the unspecified address, which reaches every local service`;
  return undefined;
}

/**
 * `key=a[,b][;key=...]` (or a JSON object of key → list) as an object of lists, each entry through
 * `entry`; a part without `=` is left as a string naming the `expected` form (zod then refuses it).
 */
const keyedLists =
  (expected: string, entry: (text: string) => string) =>
  (value: unknown): unknown => {
    if (typeof value !== 'string') return value;
    const trimmed = value.trim();
    if (trimmed === '') return {};
    if (trimmed.startsWith('{')) {
      try {
        return JSON.parse(trimmed) as unknown;
      } catch {
        return value;
      }
    }
    const lists: Record<string, string[]> = {};
    for (const part of trimmed
      .split(';')
      .map((p) => p.trim())
      .filter((p) => p !== '')) {
      const eq = part.indexOf('=');
      if (eq === -1) return `${part} (expected ${expected})`;
      const key = part.slice(0, eq).trim();
      const entries = part
        .slice(eq + 1)
        .split(',')
        .map((h) => entry(h.trim()))
        .filter((h) => h !== '');
      lists[key] = [...(lists[key] ?? []), ...entries];
    }
    return lists;
  };

/** A tool name as the screen accepts it (src/screen/definition.ts TOOL_NAME; config sits below the screen). */
const TOOL_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * `--allow-private-hosts`: which operator (bootstrapped) tools may reach which private `host:port`,
 * as `tool=host:port[,host:port][;tool=...]` or a JSON object `{"tool": ["host:port", ...]}`.
 */
export const privateHostGrants = z.preprocess(
  keyedLists('tool=host:port', (h) => h.toLowerCase()),
  z
    .record(
      z.string(),
      z
        .array(
          z.string().superRefine((entry, ctx) => {
            const problem = privateHostProblem(entry);
            if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
          }),
        )
        .min(1, { error: 'each tool needs at least one host:port' }),
      {
        error: (issue) =>
          issue.code === 'invalid_type'
            ? `expected tool=host:port[,host:port][;tool=...] or a JSON object, got ${JSON.stringify(issue.input)}`
            : undefined,
      },
    )
    .superRefine((grants, ctx) => {
      for (const tool of Object.keys(grants)) {
        if (!TOOL_NAME.test(tool))
          ctx.addIssue({
            code: 'custom',
            message: `tool name ${JSON.stringify(tool)} must match ^[a-z][a-z0-9_-]{0,63}$`,
          });
      }
    }),
);

/** A JSON object given as JSON text (env vars and flags) or as an object (config files, tests). */
export const jsonObject = z.preprocess(
  (value) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  },
  z.record(z.string(), z.unknown()),
);

/**
 * The `bootstrap-breadcrumbs/` directory shipped with this installation (the package root is two levels
 * above both src/config/ and dist/config/), so the default does not depend on the working directory.
 */
export const SHIPPED_BOOTSTRAP_DIR = fileURLToPath(new URL('../../bootstrap-breadcrumbs', import.meta.url));

/** One option: its zod schema and its documentation. */
export function opt<T extends z.ZodType>(schema: T, meta: OptionMeta): { schema: T; meta: OptionMeta } {
  return { schema, meta };
}

/** Who may receive a shared secret: every agent-written tool. */
export const AGENT_TOOLS = 'agents';
/** A secret name as `required_secrets` accepts it (src/screen/definition.ts SECRET_NAME). */
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/;

/**
 * `--share-secrets`: which operator secrets (store scope `workspace`/`global`, `--secrets-file`)
 * agent-written tools receive, as `NAME=tool[,tool][;NAME=...]` (`agents` = every agent tool) or a
 * JSON object `{"NAME": ["tool", ...]}`.
 */
export const secretShares = z.preprocess(
  keyedLists('NAME=tool', (t) => t),
  z
    .record(
      z.string(),
      z
        .array(
          z.string().refine((t) => TOOL_NAME.test(t), {
            error: (issue) =>
              `${JSON.stringify(issue.input)} is neither "${AGENT_TOOLS}" nor a tool name (^[a-z][a-z0-9_-]{0,63}$)`,
          }),
        )
        .min(1, { error: `each secret needs at least one tool name or "${AGENT_TOOLS}"` }),
      {
        error: (issue) =>
          issue.code === 'invalid_type'
            ? `expected NAME=tool[,tool][;NAME=...] (tool "${AGENT_TOOLS}": every agent-written tool) or a JSON object, got ${JSON.stringify(issue.input)}`
            : undefined,
      },
    )
    .superRefine((shares, ctx) => {
      for (const name of Object.keys(shares)) {
        if (!SECRET_NAME.test(name))
          ctx.addIssue({
            code: 'custom',
            message: `secret name ${JSON.stringify(name)} must match ${SECRET_NAME.source}`,
          });
      }
    }),
);
