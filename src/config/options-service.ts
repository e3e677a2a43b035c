// Options of the service itself: general (logging, admin port), the embedded store and the runner
// (workspace, claims, queue, limits). Part of OPTIONS (./schema.ts), in documentation order.

import { z } from 'zod';
import { boolish, intish, jsonObject, listish, opt, optionalString, secretShares } from './values.js';

/** The general, embedded-store and runner options, in documentation order. */
export const SERVICE_OPTIONS = {
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
    doc: "Output format of `tools-runner export`: OpenAI function tools, MCP `tools/list` entries, a RAP toolset, TypeScript declarations, or ARuntime tool descriptions (with each tool's contract).",
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
    doc: 'Database of the store: unset keeps SQLite in `--data-dir`; a `postgres://user:pass@host:port/db` URL puts the store on PostgreSQL (several `store`/`start` replicas may share it; needs `--secrets-key`, and `start` needs `--runner-secret`; docs/deployment.md).',
    defaultText: 'SQLite in `--data-dir`',
    secret: true,
  }),
  dbPoolSize: opt(intish(1, 1000).default(10), {
    group: 'store',
    doc: "Connections of the store's PostgreSQL pool per replica (plus one for LISTEN); see docs/deployment.md for sizing.",
  }),
  dbStatementTimeoutMs: opt(intish(0).default(30_000), {
    group: 'store',
    doc: "PostgreSQL's `statement_timeout` of the store's sessions (ms; 0: none): a statement running longer fails with 503 instead of holding its locks (docs/store.md).",
  }),
  dbLockTimeoutMs: opt(intish(0).default(5000), {
    group: 'store',
    doc: "PostgreSQL's `lock_timeout` of the store's sessions (ms; 0: none): a write waiting longer for a row another session holds fails with 503.",
  }),
  dbIdleInTransactionTimeoutMs: opt(intish(0).default(5000), {
    group: 'store',
    doc: "PostgreSQL's `idle_in_transaction_session_timeout` of the store's sessions (ms; 0: none): PostgreSQL ends the session of a replica paused or cut off inside a transaction, releasing its row locks.",
  }),
  dbKeepaliveMs: opt(intish(0).default(10_000), {
    group: 'store',
    doc: "TCP keepalive of the store's PostgreSQL connections, both ends (idle ms before the first probe; 0: off): a connection to a peer that vanished is noticed and closed.",
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
    doc: "Key (16+ characters; header `X-Lease-Key`) of the store's lease routes `/x/leases/*`, which runner replicas use for claims instead of `tool.claim.v1` breadcrumbs. `tools-runner store`: unset turns the lease routes off; give every runner replica the same value. `start`: unset derives it from the runner secret, for the embedded store and for replicas on `--store-url` alike.",
    defaultText: 'derived from the runner secret (`start`); off (`store`)',
    secret: true,
  }),
  groupCommit: opt(boolish.default(true), {
    group: 'store',
    doc: 'Commit store writes that arrive together (in one turn of the event loop) in one SQLite transaction, each in its own savepoint; `false` commits every write alone (for A/B measurements).',
  }),
  retentionMs: opt(intish(0).default(7 * 24 * 3600_000), {
    group: 'store',
    doc: "How long the store keeps the runner's finished records: an answered request and its answer (counted from the answer), claims, progress reports, decided approvals; 0 keeps them forever. Never removes an unanswered request or a pending approval.",
  }),
  auditRetentionMs: opt(intish(0).default(30 * 24 * 3600_000), {
    group: 'store',
    doc: 'How long the store keeps audit-bearing records (idempotency records of settled calls, approval decisions of calls that ran); 0 keeps them forever.',
  }),
  agentRetentionMs: opt(intish(0).default(0), {
    group: 'store',
    doc: 'How long the store keeps agents\' own records untouched: a record whose writer (`created_by`) is not the runner (nor in `--agent-quota-exempt`), of a schema outside `tool.*` and without a `ttl`, is removed this long after its last write (docs/store.md "Retention"). 0 keeps them forever.',
  }),
  agentQuotaRecords: opt(intish(0).default(0), {
    group: 'store',
    doc: 'Most records the store keeps of what one agent created: its own writes (`created_by`: the token\'s subject) and what tools created for it through the runner (`created-by:agent:<id>`); a create beyond is refused 403 `quota.exceeded` (docs/store.md "Quotas"). 0: no limit.',
  }),
  agentQuotaBytes: opt(intish(0).default(0), {
    group: 'store',
    doc: 'Most bytes of context (`size_bytes`) the store keeps of what one writer created; a create or a growing update beyond is refused 403 `quota.exceeded`. 0: no limit.',
  }),
  agentQuotaExempt: opt(listish.default([]), {
    group: 'store',
    doc: "Writer identities no quota counts besides the runner's own `--agent-id` (it writes answers, claims and what tools create), which never counts.",
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
  workspace: opt(
    z
      .string()
      .regex(/^workspace:[^\s]+$/)
      .default('workspace:tools'),
    {
      group: 'runner',
      doc: 'Workspace tag the runner serves.',
    },
  ),
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
    doc: "Bearer token (16+ characters) the admin port requires for the web console and its API, `/mcp`, `/live` and `/metrics` (`Authorization: Bearer <token>`, or the console's login cookie); `/health` stays open. Without it the admin port only binds to loopback addresses.",
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
    doc: "Tool calls in flight at once, across all tools: computing, or waiting on a timer, the network or a nested call (one tool holds at most 3/4 of them). `0`: as many sandbox processes as half the machine's memory holds at the default memory limit (`defaultMemoryMb` + 64 MB each), 4 to 256.",
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
    doc: "How replicas share requests: `lease` uses the store's lease routes (this project's store only; no breadcrumbs, no events), `breadcrumb` uses `tool.claim.v1` breadcrumbs (any RCRT store), `auto` picks `lease` when the store offers it. Every replica of one store must end up with the same kind.",
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
    doc: "`tools-runner call`: print the running tool's progress reports (`context.progress`) to stderr as they arrive — a `{text}` report as its text, any other as one JSON line.",
  }),
  runnerSecret: opt(
    z
      .string()
      .min(16, 'must be at least 16 characters long')
      .refine(
        (text) => !text.startsWith('hex:') || /^hex:[0-9a-fA-F]{64}$/.test(text),
        'a secret starting with "hex:" must be followed by exactly 64 hex digits',
      )
      .optional(),
    {
      group: 'runner',
      doc: 'Secret (16+ characters; `hex:<64 hex digits>` stands for those 32 bytes) every key of the runner derives from: Idempotency-Keys, claim MACs and answer tags (so no other writer can forge or squat them) and the stamps on the tools it deploys. Every replica of one store, and the client commands (`bootstrap`, `export`, `mcp --store-url`, `approvals`), must use the same value; required with `--store-url` and with `start --db` (replicas share the database). `<data-dir>/runner.key` holds the same text.',
      defaultText: 'read from `<data-dir>/runner.key` (the service generates it with the embedded store)',
      secret: true,
    },
  ),
  secretsFile: opt(optionalString, {
    group: 'runner',
    doc: "Fallback secrets: a JSON object file `{NAME: value}` consulted after the store's secrets API. Its values reach operator tools only, unless shared with `--share-secrets`.",
  }),
  shareSecrets: opt(secretShares.default({}), {
    group: 'runner',
    doc: 'Operator secrets (store scope `workspace`/`global`, `--secrets-file`) that agent-written tools may receive, e.g. `LLM_API_KEY=summarize,translate;WEATHER_KEY=agents` (`agents`: every agent tool; or a JSON object of name → list). Without it an agent tool receives only secrets scoped to its own record (scope `tool`); operator tools receive every secret (docs/security.md).',
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
  subscriptionChainMaxRecords: opt(intish(1).default(100), {
    group: 'runner',
    doc: 'Most records the runs of one causal chain of subscription triggers (from one seed breadcrumb, nested calls included) may create through `context.api` on this replica; the next is refused with `rate.exceeded` (docs/autonomy.md "Subscriptions").',
  }),
  subscriptionMaxPerOwner: opt(intish(1).default(50), {
    group: 'runner',
    doc: 'Most live subscriptions the tools of one agent owner may declare; the newer ones beyond are refused, said in /autonomy and the log (docs/autonomy.md "Subscriptions"). The operator\'s tools are not capped.',
  }),
  continuousMaxLifetimeMs: opt(intish(1000).default(24 * 60 * 60 * 1000), {
    group: 'runner',
    doc: 'Longest one run of a continuous tool lasts before the runner stops and restarts it (docs/autonomy.md "Continuous tools").',
  }),
  continuousLeaseMs: opt(intish(1000).default(15_000), {
    group: 'runner',
    doc: 'Lease of the replica running a continuous tool: renewed at a third of it; another replica takes over when it has expired.',
  }),
  scheduleMaxPerOwner: opt(intish(1).default(50), {
    group: 'runner',
    doc: 'Most enabled `schedule.definition.v1` records one writer (`created_by`) may have served; the newer ones beyond are refused, said in /autonomy and the log (docs/autonomy.md "The scheduler").',
  }),
  scheduleCatchUp: opt(intish(0).default(30), {
    group: 'runner',
    doc: 'Most missed ticks one schedule publishes late after downtime (the newest ones); the rest are counted in one `schedule.missed.v1` record (docs/autonomy.md "The scheduler").',
  }),
  toolApiRunnerReaders: opt(listish.default([]), {
    group: 'runner',
    doc: "Tools (names) whose `context.api` may read the runner's own `tool.*` records (requests, responses, claims, definitions); others never see them.",
  }),
  rateLimits: opt(jsonObject.default({}), {
    group: 'runner',
    doc: 'Operator rate limits by tool name, overriding the tool contract\'s `rate_limits`: a JSON object `{"<tool>": {"per_tool": {"limit": 10, "window_ms": 1000, "burst": 0}, "per_agent": {...}}}`. Limits are per replica (docs/tool-contracts.md "Rate limits").',
  }),
  approvalTimeoutMs: opt(intish(1000, 7 * 86_400_000).default(3_600_000), {
    group: 'runner',
    doc: 'How long a call waits for an approval when its contract gives no `approval.timeout_ms` (and for `--confirm-external-actions`); then it is answered `approval.required` (docs/tool-contracts.md "Approvals").',
  }),
} as const;
