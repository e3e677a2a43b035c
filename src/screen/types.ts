// Shared shapes of src/screen: findings (Issue), the normalised tool (ToolDefinition) and issue codes.
//
// An Issue is exactly the `CreateIssue` of tool.create.response.v1 (breadcrumbs/messages.ts), so the
// responder can send screen results unchanged. `path` is a JSON-pointer-like path into the tool
// definition ("/permissions/net/2", "/code/source"); `line` and `column` are both 1-based and appear
// only on findings inside the source (columns count UTF-16 code units, as editors and acorn do).

import type { CreateIssue } from '../breadcrumbs/messages.js';

/**
 * One finding: a stable dotted code, where it is, and a message naming the offending value; `fix`,
 * when the operator can lift the refusal by configuration, is the flag that does (`--bootstrap-allow net`).
 */
export type Issue = { code: string; path: string; message: string; line?: number; column?: number; fix?: string };

/** Who wrote the tool: an agent (tool.create.request.v1) or the operator's bootstrap directory. */
export type Origin = 'agent' | 'bootstrap';

/** The normalised, validated tool every other module uses; produced only by validateToolDefinition. */
import type { ToolContract } from '../contract/contract.js';
import type { BootstrapRun, Subscription } from './autonomy.js';

export interface ToolDefinition {
  name: string;
  description: string;
  version: string;
  language: 'typescript' | 'javascript';
  source: string;
  inputSchema: object;
  outputSchema: object;
  /** Normalised host list ([] = no network); ports kept as written. */
  net: string[];
  /** Private `host:port`s the operator granted this bootstrapped tool (`--allow-private-hosts`); absent for agent tools. */
  privateNet?: string[];
  api: false | 'read' | 'write';
  /** `permissions.breadcrumbs`: the schemas the `api` grant may read and write (absent = unscoped). */
  apiSchemas?: { read: string[]; write: string[] };
  /** `permissions.tools`: the tools `context.tools.call` may call (`true` = any); absent = none. */
  tools?: true | string[];
  /**
   * Extra Deno permissions; only ever non-empty for bootstrapped tools allowed by config.bootstrapAllow.
   * `net` here is `net: true`: any public host (bare --allow-net; the private-range deny list stays).
   */
  extraPermissions: string[];
  timeoutMs: number;
  memoryMb: number;
  /** `context.bootstrap.mode: "continuous"` (upstream): the tool runs until stopped, so its examples are not run. */
  continuous?: true;
  /** `context.subscriptions` (docs/autonomy.md): new breadcrumbs that run the tool. */
  subscriptions?: Subscription[];
  /** `context.bootstrap` of an operator tool: run once per deployed version, or continuously. */
  bootstrap?: BootstrapRun;
  /** `limits.cpu_percent`: the share of one core the tool's process may use while it runs (enforced). */
  cpuPercent?: number;
  /** `limits.isolation: "process"`: every call of this tool gets a fresh process (never a warm one). */
  isolation?: 'process';
  requiredSecrets: string[];
  /** `requiresNetwork`: the example reaches a real host (`requires_network: true`); skipped when the network is unreachable. */
  examples: Array<{
    description: string;
    input: unknown;
    output?: unknown;
    match: 'exact' | 'schema';
    requiresNetwork?: true;
  }>;
  /** The tool's contract (`context.contract`, src/contract/contract.ts); `{}` when absent (side effect unknown). */
  contract: ToolContract;
}

/** The permissions screening needs to judge `Deno.*` calls: the validated net list and extra grants. */
export interface ScreenPermissions {
  net: readonly string[];
  extraPermissions: readonly string[];
}

/** Every Issue code the screen module emits; stable once shipped (agents match on them). */
export const IssueCode = {
  // source screening (AST rules)
  Parse: 'screen.parse',
  SourceSize: 'screen.source-size',
  NoExecute: 'screen.no-execute',
  Eval: 'screen.eval',
  FunctionConstructor: 'screen.function-constructor',
  DynamicImport: 'screen.dynamic-import',
  Require: 'screen.require',
  StaticImport: 'screen.static-import',
  ComputedGlobal: 'screen.computed-global',
  DenoPermission: 'screen.deno-permission',
  // permissions
  Permissions: 'permission.invalid',
  PermissionUnknown: 'permission.unknown',
  PermissionDenied: 'permission.denied',
  NetInvalid: 'permission.net',
  NetTooMany: 'permission.net-count',
  NetBlocked: 'permission.net-blocked',
  NetDuplicate: 'permission.net-duplicate',
  Api: 'permission.api',
  // contract
  Contract: 'contract.invalid',
  // schemas and examples
  SchemaInvalid: 'schema.invalid',
  SchemaRequired: 'schema.required',
  SchemaDescription: 'schema.description',
  SchemaUnsafePattern: 'schema.unsafe-pattern',
  Examples: 'schema.examples',
  ExampleInput: 'schema.example-input',
  ExampleOutput: 'schema.example-output',
  ExampleInvalid: 'schema.example',
  // the definition itself
  Definition: 'definition.invalid',
  Name: 'definition.name',
  Description: 'definition.description',
  Version: 'definition.version',
  Code: 'definition.code',
  Limits: 'definition.limits',
  Secrets: 'definition.secrets',
} as const;

export type IssueCode = (typeof IssueCode)[keyof typeof IssueCode];

/** Renders a value for a message: JSON, cut to `max` characters so a huge value cannot flood a response. */
export function quote(value: unknown, max = 120): string {
  let text: string;
  try {
    text = value === undefined ? 'undefined' : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

/** Escapes one JSON-pointer segment (RFC 6901: "~" -> "~0", "/" -> "~1"). */
export function pointerSegment(key: string | number): string {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

/** A plain JSON object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Compile-time proof that an Issue is a CreateIssue and back: the responder sends them unchanged.
const _toCreate = (issue: Issue): CreateIssue => issue;
const _fromCreate = (issue: CreateIssue): Issue => issue;
void _toCreate;
void _fromCreate;
