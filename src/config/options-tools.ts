// Options of what runs tools: the Deno sandbox, authoring (bootstrap, examples), host tools and
// RAP. Part of OPTIONS (./schema.ts), in documentation order.

import { z } from 'zod';
import { SHIPPED_BOOTSTRAP_DIR, boolish, intish, listish, opt, optionalString, privateHostGrants } from './values.js';

/** The sandbox, authoring, host-tool and RAP options, in documentation order. */
export const TOOL_OPTIONS = {
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
  sandboxLauncher: opt(z.enum(['auto', 'spawner', 'deno-relay', 'direct']).default('auto'), {
    group: 'sandbox',
    doc: 'How Deno processes are started: `spawner` (a small Node helper forks them and hands their pipes over, so the service never stalls on fork), `deno-relay` (one Deno process starts them and relays their stdio over one pipe: cheaper per spawn, one more hop per byte), `direct` (forked by the service itself), or `auto`: `deno-relay` when `isolation` is `process`, else `spawner`. Both helpers kill every process they started if the service dies.',
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
    doc: "Upper bound on any tool's declared timeout.",
  }),
  defaultMemoryMb: opt(intish(16).default(128), {
    group: 'sandbox',
    doc: 'Memory limit of a tool that declares none.',
  }),
  maxMemoryMb: opt(intish(16).default(1024), {
    group: 'sandbox',
    doc: "Upper bound on any tool's declared memory limit.",
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
    doc: "Extra permissions the operator's bootstrapped tools may declare: `read`, `write`, `env`, `run`, `sys` (Deno permissions, unscoped), and `net` (`permissions.net: true` = any public host; private, loopback and link-local ranges stay denied). Never for agent tools.",
  }),
  bootstrapMaxTimeoutMs: opt(intish(1).default(86_400_000), {
    group: 'authoring',
    doc: "Upper bound on the declared timeout of the operator's bootstrapped tools (24 h by default; agent tools stay under `--max-timeout-ms`).",
  }),
  allowPrivateHosts: opt(privateHostGrants.default({}), {
    group: 'authoring',
    doc: 'Private `host:port`s that named operator (bootstrapped) tools may reach, e.g. `ollama=localhost:11434;browser-capture=127.0.0.1:9222` (or a JSON object of tool → list). Only that port of that host is let through the private-range deny list, only for that tool; agent-created tools never get it (docs/sandbox.md).',
  }),
  skipExamples: opt(boolish.default(false), {
    group: 'authoring',
    doc: "Bootstrap (`bootstrap`, and `start` unless `--no-bootstrap`) without running the tools' examples first; by default a tool whose example fails is rejected.",
  }),
  networkProbe: opt(
    z
      .string()
      .regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/)
      .optional(),
    {
      group: 'authoring',
      doc: '`host:port` checked once (TCP connect, 1.5 s) before running examples marked `requires_network`; unreachable → those examples are skipped. Default: the first declared host of each such tool, port 443.',
    },
  ),
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
    defaultText: "`<data-dir>/audit` (with `--data-dir :memory:`, the default data directory's `audit`)",
  }),
  redact: opt(listish.default([]), {
    group: 'legacy',
    doc: 'Extra regular expressions whose matches are replaced by `***REDACTED***` in audit records.',
  }),
  // --- RAP (Reactive Agent Protocol) -----------------------------------------------------------
  rapHost: opt(z.string().min(1).default('127.0.0.1'), {
    group: 'rap',
    doc: "Bind address of the RAP listener (tool server routes and the runtime's result callbacks).",
  }),
  rapPort: opt(intish(-1, 65535).default(-1), {
    group: 'rap',
    doc: 'Port of the RAP listener; 0 picks a free port, -1 disables it (then `--rap-servers` cannot be used).',
  }),
  rapPublicUrl: opt(z.url({ protocol: /^https?$/ }).optional(), {
    group: 'rap',
    doc: 'Base URL under which others reach the RAP listener (used in the served toolset `endpoint` and in callback URLs).',
    defaultText: "the listener's own address",
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
    doc: "Hosts (`name` or `name:port`) an invocation's `callback_url` may point at besides loopback addresses.",
  }),
  rapServers: opt(listish.default([]), {
    group: 'rap',
    doc: 'Base URLs of RAP tool servers whose toolsets are published as host tools (fetched from `{base}/.well-known/rap-toolset`).',
  }),
  rapServerTokens: opt(listish.default([]), {
    group: 'rap',
    doc: "Bearer tokens for `--rap-servers` that require one (a tool server with `--rap-tokens`), `url=token` with `url` exactly one of the `--rap-servers` entries. The token is sent as `Authorization: Bearer <token>` on the toolset fetch, `/invoke` and `/cancel_tool_call` to that server (and its toolset's endpoint), and never logged.",
    secret: true,
  }),
  rapRefreshMs: opt(intish(1000).default(300_000), {
    group: 'rap',
    doc: 'Interval at which the toolsets of `--rap-servers` are fetched again (also fetched at start).',
  }),
  rapResultTimeoutMs: opt(intish(1).default(300_000), {
    group: 'rap',
    doc: "How long a RAP call may take: the runtime waits this long for a tool server's result callback, the tool server this long for the runner's answer.",
  }),
} as const;
