// Data shapes of legacy host tools: tools defined by the operator's local tools.json manifests
// (agentcli or Runloop format) whose implementation is a host program or an HTTP endpoint.
//
// A HostTool is plain, JSON-serialisable data so that the runner can publish it (tool.v1) and hand
// it back to executeHostTool later; nothing in it is live (no handles, no compiled validators).

import type { Config } from '../config/index.js';
import type { ToolContract } from '../contract/contract.js';

/** Manifest dialect a host tool came from; decides validation rules and exec conventions. `rap`: a remote RAP toolset. */
export type HostToolFormat = 'agentcli' | 'runloop' | 'rap';

/** Run a host program: argv without a shell, JSON in (stdin or a temp file), JSON out on stdout. */
export interface ExecTransport {
  kind: 'exec';
  /** Program and its fixed arguments; `command[0]` is always an absolute path. */
  command: string[];
  /** Runloop: arguments appended after the JSON blob path. agentcli: always empty. */
  args: string[];
  /** agentcli: JSON arguments on stdin. runloop: JSON written to a private file, path = argv[1]. */
  style: HostToolFormat;
  /** Per-tool timeout (agentcli `timeoutSec` x 1000, Runloop `timeout_ms`); else config.execTimeoutMs. */
  timeoutMs?: number;
  /** Names (upper case) of parent environment variables passed through when present. */
  envPassthrough: string[];
}

/** Call an HTTP endpoint: URL template with `{arg}` placeholders, static headers with `${secret:NAME}`. */
export interface HttpTransport {
  kind: 'http';
  /** Upper-case method (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS). */
  method: string;
  /** Absolute http(s) URL; `{name}` placeholders only in path and query. */
  url: string;
  headers: Record<string, string>;
  timeoutMs?: number;
}

/** Invoke an operation of a remote RAP tool server (src/rap): POST to `endpoint`, result by callback. */
export interface RapTransport {
  kind: 'rap';
  /** The toolset's invocation endpoint (absolute http(s) URL). */
  endpoint: string;
  /** Base URL the toolset was fetched from (`/cancel_tool_call` goes there). */
  base: string;
  /** Name of the toolset the tool belongs to. */
  toolset: string;
  /** The operation name sent in the invocation (the tool's name in its toolset). */
  operation: string;
  /** The tool's `displayScript`, if any (cosmetic; see src/rap/display-script.ts). */
  displayScript?: string;
  /** The tool's RAP annotations as served (informational). */
  annotations?: Record<string, unknown>;
  /** How long to wait for the result callback after the invocation is acknowledged. */
  timeoutMs?: number;
}

/** Any transport of a host tool. */
export type HostTransport = ExecTransport | HttpTransport | RapTransport;

/** One host tool as loaded from a manifest. */
export interface HostTool {
  name: string;
  description: string;
  format: HostToolFormat;
  /** Absolute path of the tools.json file the tool was defined in. */
  manifestPath: string;
  /** sha256 hex of the tools.json bytes; for a Runloop bundle the verified blake3 hex instead. */
  manifestDigest: string;
  /** JSON Schema of the arguments with `schema:<id>` refs resolved; null when the manifest gives none. */
  inputSchema: object | null;
  /** JSON Schema of the result (Runloop `result_schema`); null when none. */
  resultSchema: object | null;
  transport: HostTransport;
  /** Declared capabilities (Runloop) plus those implied by the transport (see capabilities.ts). */
  capabilities: string[];
  /** Secret ids resolved before every call (Runloop `secrets`). */
  secrets: string[];
  requiresConfirmation: boolean;
  budget?: { tokens?: number; usd?: number };
  observabilityTags: string[];
  /** The canonical contract the loader mapped the manifest's fields to (src/host-tools/contract-map.ts); no `side_effect` = unknown, fails closed. */
  contract: ToolContract;
}

/** Outcome of loading one manifest: all its tools, or the first error (no partial loads). */
export type ManifestLoadResult = { ok: true; tools: HostTool[]; warnings: string[] } | { ok: false; error: string };

/** A tool kept out of the catalog, and why. */
export interface DeniedHostTool {
  name: string;
  reason: string;
  manifestPath: string;
}

/** The part of the configuration executeHostTool reads. */
export type HostToolConfig = Pick<Config, 'execTimeoutMs' | 'maxOutputBytes' | 'redact'> &
  Partial<Pick<Config, 'maxLogBytes'>>;

/** The capability families of Runloop's policy.caps. */
export const CAPABILITY_FAMILIES = ['fs', 'net', 'time', 'kb_read', 'kb_write', 'secrets', 'model', 'exec'] as const;

/** Text returned (code approval.required) when a tool needs confirmation and none can be given. */
export const CONFIRMATION_REFUSED = 'confirmation required (daemon lacks UI/TUI decision); refusing automatic approval';
