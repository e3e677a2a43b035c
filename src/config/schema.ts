// The one configuration schema of tools-runner.
//
// Every option has a camelCase key, a CLI flag (`--kebab-case`) and an environment variable
// (`TOOLS_RUNNER_SCREAMING_CASE`), derived from the key so the three can never drift apart.
// Raw values from env and argv are strings; each option's zod schema coerces them.
// docs/configuration.md's table is generated from this file (`npm run docs:config`).

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
export const listish = z.preprocess((value) => {
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
  return trimmed.split(',').map((part) => part.trim()).filter((part) => part !== '');
}, z.array(z.string().min(1)));

const optionalString = z.string().min(1).optional();

/** `host:port` of a private-host grant: a name, an IPv4 literal or a bracketed IPv6 literal, and a port. */
const PRIVATE_HOST = /^(?:\[[0-9a-f:.]+\]|(?:\d{1,3}\.){3}\d{1,3}|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*):([1-9]\d{0,4})$/;

/** Why one `host:port` of --allow-private-hosts is unusable, or undefined when it is fine. */
export function privateHostProblem(entry: string): string | undefined {
  const match = PRIVATE_HOST.exec(entry);
  if (!match) return `${JSON.stringify(entry)} is not host:port (a host name, an IPv4 address or [IPv6] address, and a port 1-65535)`;
  if (Number(match[1]) > 65535) return `${JSON.stringify(entry)} has a port above 65535`;
  const host = entry.slice(0, entry.lastIndexOf(':'));
  if (/^(?:\d{1,3}\.){3}\d{1,3}$/.test(host) && host.split('.').some((part) => Number(part) > 255)) {
    return `${JSON.stringify(entry)} is not a valid IPv4 address`;
  }
  if (host === '0.0.0.0' || host === '[::]' || host === '[0:0:0:0:0:0:0:0]') return `${JSON.stringify(entry)} is the unspecified address, which reaches every local service`;
  return undefined;
}

/**
 * `--allow-private-hosts`: which operator (bootstrapped) tools may reach which private `host:port`,
 * as `tool=host:port[,host:port][;tool=...]` or a JSON object `{"tool": ["host:port", ...]}`.
 */
export const privateHostGrants = z.preprocess((value) => {
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
  const grants: Record<string, string[]> = {};
  for (const part of trimmed.split(';').map((p) => p.trim()).filter((p) => p !== '')) {
    const eq = part.indexOf('=');
    if (eq === -1) return `${part} (expected tool=host:port)`;
    const tool = part.slice(0, eq).trim();
    const hosts = part.slice(eq + 1).split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
    grants[tool] = [...(grants[tool] ?? []), ...hosts];
  }
  return grants;
}, z.record(
  z.string(),
  z.array(z.string().superRefine((entry, ctx) => {
    const problem = privateHostProblem(entry);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  })).min(1, { error: 'each tool needs at least one host:port' }),
  { error: (issue) => (issue.code === 'invalid_type' ? `expected tool=host:port[,host:port][;tool=...] or a JSON object, got ${JSON.stringify(issue.input)}` : undefined) },
).superRefine((grants, ctx) => {
  for (const tool of Object.keys(grants)) {
    if (!/^[a-z][a-z0-9_-]{0,63}$/.test(tool)) ctx.addIssue({ code: 'custom', message: `tool name ${JSON.stringify(tool)} must match ^[a-z][a-z0-9_-]{0,63}$` });
  }
}));


/** A JSON object given as JSON text (env vars and flags) or as an object (config files, tests). */
export const jsonObject = z.preprocess((value) => {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}, z.record(z.string(), z.unknown()));

/**
 * The `bootstrap-breadcrumbs/` directory shipped with this installation (the package root is two levels
 * above both src/config/ and dist/config/), so the default does not depend on the working directory.
 */
export const SHIPPED_BOOTSTRAP_DIR = fileURLToPath(new URL('../../bootstrap-breadcrumbs', import.meta.url));

function opt<T extends z.ZodType>(schema: T, meta: OptionMeta): { schema: T; meta: OptionMeta } {
  return { schema, meta };
}

/** All options, in documentation order. */
export const OPTIONS = {
  // --- general -------------------------------------------------------------------------------
  logLevel: opt(z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'), {
    group: 'general',
    doc: 'Minimum level of the log lines written to stderr. Client commands (`call`, `export`, ...) write only warn and above unless this is `debug`.',
  }),

  logFormat: opt(z.enum(['auto', 'json', 'text']).default('auto'), {
    group: 'general',
    doc: 'Log line format on stderr: `text` (human-readable), `json` (one object per line), or `auto`: text when stderr is a terminal, JSON otherwise.',
  }),

  format: opt(z.enum(['openai', 'mcp', 'rap', 'typescript', 'aruntime']).default('openai'), {
    group: 'general',
    doc: 'Output format of `tools-runner export`: OpenAI function tools, MCP `tools/list` entries, a RAP toolset, TypeScript declarations, or ARuntime tool descriptions (with each tool\'s contract).',
  }),

  fromFiles: opt(boolish.default(false), {
    group: 'general',
    doc: '`tools-runner export` reads the bootstrap directory and `--manifests` instead of a running store (works offline).',
  }),

  as: opt(z.string().min(1).max(64).optional(), {
    group: 'general',
    doc: 'Who decides with `tools-runner approve|deny` (recorded in the sealed decision as `operator:<name>`; distinct names count as distinct approvers for `min_approvers`).',
  }),

  callIsolation: opt(z.enum(['process']).optional(), {
    group: 'general',
    doc: '`tools-runner call`: demand a fresh, never-reused Deno process for the call (`context.isolation: "process"`).',
  }),

  reason: opt(z.string().min(1).max(2000).optional(), {
    group: 'general',
    doc: 'The reason `tools-runner approve|deny` records with the decision (shown to the requester on a denial).',
  }),

  // --- embedded store ------------------------------------------------------------------------
  host: opt(z.string().min(1).default('127.0.0.1'), {
    group: 'store',
    doc: 'Address the embedded store binds to. Auth is off by default only on 127.0.0.1/::1.',
  }),
  port: opt(intish(0, 65535).default(8081), {
    group: 'store',
    doc: 'Port of the embedded store; 0 picks a free port.',
  }),
  // No schema default: loadConfig fills it from the environment (`$XDG_DATA_HOME`, `$HOME`).
  dataDir: opt(z.string().min(1), {
    group: 'store',
    doc: 'Directory of the SQLite database, the generated runner and secrets keys and (by default) the audit logs; `:memory:` keeps no database or keys on disk. Client commands read the runner key here.',
    defaultText: '`$XDG_DATA_HOME/tools-runner`, else `~/.local/share/tools-runner`',
  }),
  db: opt(optionalString, {
    group: 'store',
    doc: 'Database of the store: unset keeps SQLite in `--data-dir`; a `postgres://user:pass@host:port/db` URL puts the store on PostgreSQL (several `store`/`start` replicas may share it; needs `--secrets-key`; docs/deployment.md).',
    defaultText: 'SQLite in `--data-dir`',
    secret: true,
  }),
  dbPoolSize: opt(intish(1, 1000).default(10), {
    group: 'store',
    doc: 'Connections of the store\'s PostgreSQL pool per replica (plus one for LISTEN); see docs/deployment.md for sizing.',
  }),
  maxBodyBytes: opt(intish(1024).default(1024 * 1024), {
    group: 'store',
    doc: 'Largest request body the embedded store accepts (bytes); larger bodies get 413.',
  }),
  authSecret: opt(optionalString, {
    group: 'store',
    doc: 'HS256 secret for bearer tokens. When set, every store route requires a valid token.',
    secret: true,
  }),
  adminKey: opt(optionalString, {
    group: 'store',
    doc: 'Key required (header `X-Admin-Key`) to mint tokens at `POST /auth/token` when auth is on.',
    secret: true,
  }),
  secretsKey: opt(optionalString, {
    group: 'store',
    doc: 'AES-256-GCM key for secrets at rest (64 hex chars or base64 of 32 bytes).',
    defaultText: 'generated into `<data-dir>/secrets.key`',
    secret: true,
  }),
  pingIntervalMs: opt(intish(50).default(5000), {
    group: 'store',
    doc: 'Interval of the SSE ping frame on `/events/stream`.',
  }),
  eventRetention: opt(intish(100).default(100_000), {
    group: 'store',
    doc: 'Events kept for `Last-Event-ID` resume; older ones are pruned.',
  }),
  leaseKey: opt(z.string().min(16, 'must be at least 16 characters long').optional(), {
    group: 'store',
    doc: 'Key (16+ characters; header `X-Lease-Key`) of the store\'s lease routes `/x/leases/*`, which runner replicas use for claims instead of `tool.claim.v1` breadcrumbs. `tools-runner store`: unset turns the lease routes off; give every runner replica the same value. `start`: unset derives it from the runner secret, for the embedded store and for replicas on `--store-url` alike.',
    defaultText: 'derived from the runner secret (`start`); off (`store`)',
    secret: true,
  }),
  retentionMs: opt(intish(0).default(7 * 24 * 3600_000), {
    group: 'store',
    doc: 'How long the store keeps the runner\'s finished records: an answered request and its answer (counted from the answer), claims, progress reports, decided approvals; 0 keeps them forever. Never removes an unanswered request or a pending approval.',
  }),
  auditRetentionMs: opt(intish(0).default(30 * 24 * 3600_000), {
    group: 'store',
    doc: 'How long the store keeps audit-bearing records (idempotency records of settled calls, approval decisions of calls that ran); 0 keeps them forever.',
  }),
  authMint: opt(z.enum(['admin-key', 'open']).default('admin-key'), {
    group: 'store',
    doc: 'Who may mint tokens at `POST /auth/token` when auth is on: `admin-key` (needs `X-Admin-Key`) or `open` (ANYONE who can reach the port mints a token for ANY owner, like upstream rcrt-server; see docs/compat.md).',
  }),
  embedUrl: opt(optionalString, {
    group: 'store',
    doc: 'HTTP endpoint that embeds text for `/breadcrumbs/search` (POST `{"text"}` → `{"embedding":[numbers]}`); unset: text search ranks with SQLite FTS5.',
  }),
  embedCommand: opt(optionalString, {
    group: 'store',
    doc: 'Command that embeds text (text on stdin, a JSON array of numbers on stdout); used when `embedUrl` is unset.',
  }),

  // --- runner --------------------------------------------------------------------------------
  storeUrl: opt(optionalString, {
    group: 'runner',
    doc: 'URL of an external RCRT store. When unset, `start` runs the embedded store in-process.',
  }),
  storeTransport: opt(z.enum(['auto', 'http']).default('auto'), {
    group: 'runner',
    doc: 'How `start` talks to its embedded store: `auto` calls it in-process (no HTTP, same semantics), `http` over its HTTP port like an external store. Ignored with --store-url.',
  }),
  storeToken: opt(optionalString, {
    group: 'runner',
    doc: 'Bearer token for the store. When unset, the runner mints one at `/auth/token`.',
    secret: true,
  }),
  ownerId: opt(z.string().min(1).default('00000000-0000-0000-0000-000000000001'), {
    group: 'runner',
    doc: 'owner_id the runner acts as when it mints its own token.',
  }),
  agentId: opt(z.string().min(1).default('tools-runner'), {
    group: 'runner',
    doc: 'Agent id (`sub`) of the runner on the store; also the claim holder prefix.',
  }),
  workspace: opt(z.string().regex(/^workspace:[^\s]+$/).default('workspace:tools'), {
    group: 'runner',
    doc: 'Workspace tag the runner serves.',
  }),
  adminHost: opt(z.string().min(1).default('127.0.0.1'), {
    group: 'runner',
    doc: 'Bind address of the admin port (`/health`, `/metrics`, `/live`, the web console). A non-loopback address needs `adminToken`.',
  }),
  adminPort: opt(intish(-1, 65535).default(8082), {
    group: 'runner',
    doc: 'Admin port; 0 picks a free port, -1 disables it.',
  }),
  adminToken: opt(z.string().min(16).optional(), {
    group: 'runner',
    doc: 'Bearer token (16+ characters) the admin port requires for the web console and its API, `/mcp`, `/live` and `/metrics` (`Authorization: Bearer <token>`, or the console\'s login cookie); `/health` stays open. Without it the admin port only binds to loopback addresses.',
    secret: true,
  }),
  adminHosts: opt(listish.default([]), {
    group: 'runner',
    doc: 'Extra Host names the admin port answers to when no `adminToken` is set (`name`: without a port or with the admin port; `name:port`: exactly that), e.g. a name in /etc/hosts. By default only `127.0.0.1`, `localhost` and `[::1]` with the admin port: a web page whose name was rebound to 127.0.0.1 (DNS rebinding) is refused.',
  }),
  mcpProgressMs: opt(intish(100).default(2_000), {
    group: 'runner',
    doc: 'MCP `tools/call`: interval of progress notifications while a call runs (sent only when the client asked with a progress token).',
  }),
  concurrency: opt(intish(0, 1024).default(0), {
    group: 'runner',
    doc: 'Tool calls in flight at once, across all tools: computing, or waiting on a timer, the network or a nested call (one tool holds at most 3/4 of them). `0`: as many sandbox processes as half the machine\'s memory holds at the default memory limit (`defaultMemoryMb` + 64 MB each), 4 to 256.',
    defaultText: '0 (from memory)',
  }),
  cpuConcurrency: opt(intish(0, 1024).default(0), {
    group: 'runner',
    doc: 'Tool calls computing at once. A call whose sandbox process sleeps (a timer, the network, a nested call) lends its slot to the next call until it computes again. `0`: 2 per core.',
    defaultText: '0 (2 per core)',
  }),
  toolConcurrency: opt(intish(1, 1024).default(4), {
    group: 'runner',
    doc: 'Calls of any one tool computing at once (free slots go to the tools round robin).',
  }),
  backlog: opt(intish(1).default(1000), {
    group: 'runner',
    doc: 'Requests held in memory waiting to run; when full, intake pauses and the store stays the queue.',
  }),
  claimTtlMs: opt(intish(1000).default(30_000), {
    group: 'runner',
    doc: 'Lease length of a claim; the holder renews it while the job runs.',
  }),
  claims: opt(z.enum(['auto', 'lease', 'breadcrumb']).default('auto'), {
    group: 'runner',
    doc: 'How replicas share requests: `lease` uses the store\'s lease routes (this project\'s store only; no breadcrumbs, no events), `breadcrumb` uses `tool.claim.v1` breadcrumbs (any RCRT store), `auto` picks `lease` when the store offers it. Every replica of one store must end up with the same kind.',
  }),
  scanIntervalMs: opt(intish(100).default(15_000), {
    group: 'runner',
    doc: 'Interval of the periodic catch-up scan (also run at start and after every reconnect).',
  }),
  storeWaitMs: opt(intish(0).default(30_000), {
    group: 'runner',
    doc: 'At start, how long the runner waits for the store to answer; then `start` exits 1 naming the store URL (dependency.unavailable).',
  }),
  drainGraceMs: opt(intish(0).default(15_000), {
    group: 'runner',
    doc: 'On SIGTERM, how long running jobs may finish before they are killed.',
  }),
  callTimeoutMs: opt(intish(1).default(60_000), {
    group: 'runner',
    doc: 'How long `tools-runner call` waits for the response.',
  }),
  callProgress: opt(boolish.default(false), {
    group: 'runner',
    doc: '`tools-runner call`: print the running tool\'s progress reports (`context.progress`) to stderr as they arrive — a `{text}` report as its text, any other as one JSON line.',
  }),
  runnerSecret: opt(
    z
      .string()
      .min(16, 'must be at least 16 characters long')
      .refine((text) => !text.startsWith('hex:') || /^hex:[0-9a-fA-F]{64}$/.test(text), 'a secret starting with "hex:" must be followed by exactly 64 hex digits')
      .optional(),
    {
    group: 'runner',
    doc: 'Secret (16+ characters; `hex:<64 hex digits>` stands for those 32 bytes) every key of the runner derives from: Idempotency-Keys, claim MACs and answer tags (so no other writer can forge or squat them) and the stamps on the tools it deploys. Every replica of one store, and the client commands (`bootstrap`, `export`, `mcp --store-url`, `approvals`), must use the same value; required with `--store-url`. `<data-dir>/runner.key` holds the same text.',
    defaultText: 'read from `<data-dir>/runner.key` (the service generates it with the embedded store)',
    secret: true,
    },
  ),
  secretsFile: opt(optionalString, {
    group: 'runner',
    doc: 'Fallback secrets: a JSON object file `{NAME: value}` consulted after the store\'s secrets API.',
  }),
  toolApiMaxConcurrent: opt(intish(1, 64).default(2), {
    group: 'runner',
    doc: '`context.api` calls of one execution performed at once; later ones wait their turn.',
  }),
  toolApiMaxReplyBytes: opt(intish(1024).default(2 * 1024 * 1024), {
    group: 'runner',
    doc: 'Largest `context.api` reply (JSON bytes); a bigger one is refused with `rate.exceeded`.',
  }),
  toolApiMaxJobBytes: opt(intish(1024).default(16 * 1024 * 1024), {
    group: 'runner',
    doc: 'Total `context.api` reply bytes one execution may receive; beyond it calls fail with `rate.exceeded`.',
  }),
  nestedCallMaxDepth: opt(intish(1, 32).default(4), {
    group: 'runner',
    doc: 'Deepest chain of nested calls (`context.tools.call`, subscription triggers caused by a triggered run): a call one level deeper is refused with `rate.exceeded` (docs/autonomy.md).',
  }),
  subscriptionRatePerMinute: opt(intish(1).default(600), {
    group: 'runner',
    doc: 'Most runs one subscription may start per minute on this replica; further triggers wait for the next catch-up (docs/autonomy.md "Subscriptions").',
  }),
  continuousMaxLifetimeMs: opt(intish(1000).default(24 * 60 * 60 * 1000), {
    group: 'runner',
    doc: 'Longest one run of a continuous tool lasts before the runner stops and restarts it (docs/autonomy.md "Continuous tools").',
  }),
  continuousLeaseMs: opt(intish(1000).default(15_000), {
    group: 'runner',
    doc: 'Lease of the replica running a continuous tool: renewed at a third of it; another replica takes over when it has expired.',
  }),
  toolApiRunnerReaders: opt(listish.default([]), {
    group: 'runner',
    doc: 'Tools (names) whose `context.api` may read the runner\'s own `tool.*` records (requests, responses, claims, definitions); others never see them.',
  }),
  rateLimits: opt(jsonObject.default({}), {
    group: 'runner',
    doc: 'Operator rate limits by tool name, overriding the tool contract\'s `rate_limits`: a JSON object `{"<tool>": {"per_tool": {"limit": 10, "window_ms": 1000, "burst": 0}, "per_agent": {...}}}`. Limits are per replica (docs/tool-contracts.md "Rate limits").',
  }),
  approvalTimeoutMs: opt(intish(1000, 7 * 86_400_000).default(3_600_000), {
    group: 'runner',
    doc: 'How long a call waits for an approval when its contract gives no `approval.timeout_ms` (and for `--confirm-external-actions`); then it is answered `approval.required` (docs/tool-contracts.md "Approvals").',
  }),

  // --- sandbox -------------------------------------------------------------------------------
  denoPath: opt(optionalString, {
    group: 'sandbox',
    doc: 'Deno binary to use.',
    defaultText: 'the pinned `deno` npm dependency',
  }),
  poolSize: opt(intish(0, 64).default(4), {
    group: 'sandbox',
    doc: 'Warm, pre-spawned Deno processes kept per permission set.',
  }),
  poolMax: opt(intish(0, 256).default(0), {
    group: 'sandbox',
    doc: 'Upper bound on warm processes (spares and parked warm ones) across all permission sets. `0`: 4 per CPU slot (`cpuConcurrency`), at least 8, within the memory bound of `concurrency`.',
    defaultText: '0 (from cores and memory)',
  }),
  poolIdleMs: opt(intish(1000).default(60_000), {
    group: 'sandbox',
    doc: 'A warm process unused this long is retired.',
  }),
  sandboxLauncher: opt(z.enum(['spawner', 'direct']).default('spawner'), {
    group: 'sandbox',
    doc: 'How Deno processes are started: `spawner` (a small helper process forks them, so the service never stalls on fork, and kills them if the service dies) or `direct`.',
  }),
  reuseTools: opt(listish.default([]), {
    group: 'sandbox',
    doc: 'Tools (names) served by warm processes even when `isolation` is `process` (unless the tool itself demands `process`).',
  }),
  isolation: opt(z.enum(['warm', 'process']).default('warm'), {
    group: 'sandbox',
    doc: 'Default isolation of tool calls: `warm` (a process serves consecutive calls of exactly one tool version, permission set and secrets, one at a time, each with a fresh module instance) or `process` (one fresh process per call, for all tools). A tool may demand `process` with `limits.isolation`.',
  }),
  warmMaxCalls: opt(intish(1, 1_000_000).default(100), {
    group: 'sandbox',
    doc: 'A warm process is retired after serving this many calls.',
  }),
  defaultTimeoutMs: opt(intish(1).default(30_000), {
    group: 'sandbox',
    doc: 'Timeout of a tool that declares none.',
  }),
  maxTimeoutMs: opt(intish(1).default(300_000), {
    group: 'sandbox',
    doc: 'Upper bound on any tool\'s declared timeout.',
  }),
  defaultMemoryMb: opt(intish(16).default(128), {
    group: 'sandbox',
    doc: 'Memory limit of a tool that declares none.',
  }),
  maxMemoryMb: opt(intish(16).default(1024), {
    group: 'sandbox',
    doc: 'Upper bound on any tool\'s declared memory limit.',
  }),
  maxOutputBytes: opt(intish(1024).default(1024 * 1024), {
    group: 'sandbox',
    doc: 'Bytes a tool may write to stdout+stderr (logs included) before it is killed.',
  }),
  maxResultBytes: opt(intish(64).default(512 * 1024), {
    group: 'sandbox',
    doc: 'Largest result (serialised JSON) a tool may return.',
  }),
  progressIntervalMs: opt(intish(10, 60_000).default(250), {
    group: 'sandbox',
    doc: 'How often the reports of a running call (`context.progress`) are written to its `tool.progress.v1` record (the MCP endpoint forwards them as progress notifications).',
  }),
  maxLogBytes: opt(intish(0).default(16 * 1024), {
    group: 'sandbox',
    doc: 'Log text kept per call (the rest is dropped and marked truncated).',
  }),

  // --- authoring -----------------------------------------------------------------------------
  bootstrap: opt(boolish.default(true), {
    group: 'authoring',
    doc: 'Whether `start` upserts the tools of the bootstrap directory.',
  }),
  bootstrapDir: opt(z.string().min(1).default(SHIPPED_BOOTSTRAP_DIR), {
    group: 'authoring',
    doc: 'Directory of tool JSON files for `bootstrap` (searched recursively).',
    defaultText: 'the `bootstrap-breadcrumbs/` directory of the installation',
  }),
  bootstrapWaitMs: opt(intish(0).default(30_000), {
    group: 'authoring',
    doc: 'How long `tools-runner bootstrap` waits for the running service to list the tools it wrote at their new version (a tool that does not load is reported, with why, and exits 1); 0 does not wait.',
  }),
  bootstrapAllow: opt(listish.default([]), {
    group: 'authoring',
    doc: 'Extra permissions the operator\'s bootstrapped tools may declare: `read`, `write`, `env`, `run`, `sys` (Deno permissions, unscoped), and `net` (`permissions.net: true` = any public host; private, loopback and link-local ranges stay denied). Never for agent tools.',
  }),
  bootstrapMaxTimeoutMs: opt(intish(1).default(86_400_000), {
    group: 'authoring',
    doc: 'Upper bound on the declared timeout of the operator\'s bootstrapped tools (24 h by default; agent tools stay under `--max-timeout-ms`).',
  }),
  allowPrivateHosts: opt(privateHostGrants.default({}), {
    group: 'authoring',
    doc: 'Private `host:port`s that named operator (bootstrapped) tools may reach, e.g. `ollama=localhost:11434;browser-capture=127.0.0.1:9222` (or a JSON object of tool → list). Only that port of that host is let through the private-range deny list, only for that tool; agent-created tools never get it (docs/sandbox.md).',
  }),
  skipExamples: opt(boolish.default(false), {
    group: 'authoring',
    doc: 'Bootstrap (`bootstrap`, and `start` unless `--no-bootstrap`) without running the tools\' examples first; by default a tool whose example fails is rejected.',
  }),
  networkProbe: opt(z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:\[\]]+):\d{1,5}$/).optional(), {
    group: 'authoring',
    doc: '`host:port` checked once (TCP connect, 1.5 s) before running examples marked `requires_network`; unreachable → those examples are skipped. Default: the first declared host of each such tool, port 443.',
  }),
  toolCreation: opt(boolish.default(true), {
    group: 'authoring',
    doc: 'Whether agents may create tools with `tool.create.request.v1`.',
  }),
  toolCreationAgents: opt(listish.default([]), {
    group: 'authoring',
    doc: 'Agent ids allowed to create tools; empty allows every agent.',
  }),
  maxNetDomains: opt(intish(0, 100).default(5), {
    group: 'authoring',
    doc: 'Most network domains a tool may declare.',
  }),
  maxSourceBytes: opt(intish(256).default(200 * 1024), {
    group: 'authoring',
    doc: 'Largest tool source accepted.',
  }),

  // --- legacy host tools ---------------------------------------------------------------------
  manifests: opt(listish.default([]), {
    group: 'legacy',
    doc: 'Paths of `tools.json` manifests (agentcli or Runloop format) defining host tools.',
  }),
  grantedCapabilities: opt(listish.default([]), {
    group: 'legacy',
    doc: 'Capability families granted to host tools (`fs, net, time, kb_read, kb_write, secrets, model, exec`, or `net:host`).',
  }),
  confirmExternalActions: opt(boolish.default(true), {
    group: 'legacy',
    doc: 'When true, a call of a host tool with `requires_confirmation` waits for an approval (`tools-runner approve`); without one it is answered `approval.required`. When false such calls run, auto-approved and audited.',
  }),
  execTimeoutMs: opt(intish(1).default(30_000), {
    group: 'legacy',
    doc: 'Timeout of an exec host tool that declares none.',
  }),
  // No schema default: loadConfig derives it from the data directory.
  auditDir: opt(z.string().min(1), {
    group: 'legacy',
    doc: 'Directory of the daily NDJSON audit logs: one line per call of a tool that is not read-only, code or host.',
    defaultText: '`<data-dir>/audit` (with `--data-dir :memory:`, the default data directory\'s `audit`)',
  }),
  redact: opt(listish.default([]), {
    group: 'legacy',
    doc: 'Extra regular expressions whose matches are replaced by `***REDACTED***` in audit records.',
  }),
  // --- RAP (Reactive Agent Protocol) -----------------------------------------------------------
  rapHost: opt(z.string().min(1).default('127.0.0.1'), {
    group: 'rap',
    doc: 'Bind address of the RAP listener (tool server routes and the runtime\'s result callbacks).',
  }),
  rapPort: opt(intish(-1, 65535).default(-1), {
    group: 'rap',
    doc: 'Port of the RAP listener; 0 picks a free port, -1 disables it (then `--rap-servers` cannot be used).',
  }),
  rapPublicUrl: opt(z.url({ protocol: /^https?$/ }).optional(), {
    group: 'rap',
    doc: 'Base URL under which others reach the RAP listener (used in the served toolset `endpoint` and in callback URLs).',
    defaultText: 'the listener\'s own address',
  }),
  rapToolServer: opt(boolish.default(true), {
    group: 'rap',
    doc: 'Whether the RAP listener serves the runnable catalog as a RAP toolset (`/.well-known/rap-toolset`, `/invoke`, `/cancel_tool_call`, `/close_thread`).',
  }),
  rapTokens: opt(listish.default([]), {
    group: 'rap',
    doc: 'Callers of the RAP tool server and their bearer tokens, `caller=token` (16+ characters, one token per caller). With tokens, `/invoke`, `/cancel_tool_call` and `/close_thread` need `Authorization: Bearer <token>`, and each call belongs to its caller (only it re-invokes, cancels or closes it). Without tokens the tool server is served only on a loopback `--rap-host`.',
    secret: true,
  }),
  rapCallbackHosts: opt(listish.default([]), {
    group: 'rap',
    doc: 'Hosts (`name` or `name:port`) an invocation\'s `callback_url` may point at besides loopback addresses.',
  }),
  rapServers: opt(listish.default([]), {
    group: 'rap',
    doc: 'Base URLs of RAP tool servers whose toolsets are published as host tools (fetched from `{base}/.well-known/rap-toolset`).',
  }),
  rapServerTokens: opt(listish.default([]), {
    group: 'rap',
    doc: 'Bearer tokens for `--rap-servers` that require one (a tool server with `--rap-tokens`), `url=token` with `url` exactly one of the `--rap-servers` entries. The token is sent as `Authorization: Bearer <token>` on the toolset fetch, `/invoke` and `/cancel_tool_call` to that server (and its toolset\'s endpoint), and never logged.',
    secret: true,
  }),
  rapRefreshMs: opt(intish(1000).default(300_000), {
    group: 'rap',
    doc: 'Interval at which the toolsets of `--rap-servers` are fetched again (also fetched at start).',
  }),
  rapResultTimeoutMs: opt(intish(1).default(300_000), {
    group: 'rap',
    doc: 'How long a RAP call may take: the runtime waits this long for a tool server\'s result callback, the tool server this long for the runner\'s answer.',
  }),
} as const;

export type OptionKey = keyof typeof OPTIONS;

type Shape = { [K in OptionKey]: (typeof OPTIONS)[K]['schema'] };

function buildShape(): Shape {
  const shape = {} as Record<string, z.ZodType>;
  for (const [key, option] of Object.entries(OPTIONS)) shape[key] = option.schema;
  return shape as Shape;
}

/** The zod schema of a complete configuration. Unknown keys are rejected. */
export const configSchema = z.strictObject(buildShape());

export type Config = Readonly<z.output<typeof configSchema>>;

/** `dataDir` -> `--data-dir`. */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}

/** `dataDir` -> `TOOLS_RUNNER_DATA_DIR`. */
export function envName(key: string): string {
  return 'TOOLS_RUNNER_' + key.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase();
}
