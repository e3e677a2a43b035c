// validatePermissions: the `permissions` object of tool.code.v1 -> errors, warnings and normalised grants.
//
// Policy: agent-created tools get network access to the hosts they list (validated names only) and
// optionally the store API (`api`, or `breadcrumbs` scoped to schema names); nothing else.
// Bootstrapped tools (shipped by the operator) may also get read/write/env/run/sys when the operator
// listed that permission in config.bootstrapAllow, and `net: true` ("any public host": Deno's bare
// --allow-net, with the private-range --deny-net list still passed) when it lists `net`.
// `ffi` and `hrtime` are never granted; agents never get `net: true` (an unrestricted grant is
// checked by name only and would reach private networks through names the deny list cannot see).
// Refusals the operator can lift carry `fix`: the flag that lifts them.

import { checkNetHost } from './net-hosts.js';
import { IssueCode, isPlainObject, pointerSegment, quote, type Issue, type Origin } from './types.js';

/** Options of validatePermissions (from Config). */
export interface PermissionOptions {
  origin: Origin;
  maxNetDomains: number;
  bootstrapAllow: readonly string[];
  /**
   * Private `host:port`s the operator granted to THIS tool (`--allow-private-hosts`); honoured only
   * for bootstrapped tools: such an entry of `permissions.net` is accepted (into `privateNet`).
   */
  privateHosts?: readonly string[];
  /** The tool's name, for the `--allow-private-hosts` fix of a refused private host. */
  toolName?: string;
}

/** Result of validatePermissions; the grants hold what was valid even when there are errors. */
export interface PermissionResult {
  errors: Issue[];
  warnings: Issue[];
  net: string[];
  api: false | 'read' | 'write';
  /** Schema scope of the `context.api` grant (`permissions.breadcrumbs`); absent = every schema the policy allows. */
  apiSchemas?: { read: string[]; write: string[] };
  /** `permissions.tools`: the tools `context.tools.call` may call (`true` = any); absent = none. */
  tools?: true | string[];
  extraPermissions: string[];
  /** Operator-granted private `host:port`s of a bootstrapped tool (all its grants, listed or not); [] for agent tools. */
  privateNet: string[];
}

const KNOWN = new Set(['net', 'read', 'write', 'env', 'run', 'ffi', 'sys', 'hrtime', 'api', 'breadcrumbs', 'tools']);
/** Schema names a `permissions.breadcrumbs` list may hold. */
export const SCHEMA_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The extra Deno permissions in the order they are granted, with the agent-tool refusal of each (RCRT wording where it exists). */
const EXTRA: ReadonlyArray<readonly [string, string]> = [
  ['read', 'Filesystem read access not allowed for user-created tools'],
  ['write', 'Filesystem write access not allowed for user-created tools'],
  ['env', 'Environment access not allowed for user-created tools; declare required_secrets and read context.secrets'],
  ['run', 'Subprocess execution not allowed for user-created tools'],
  ['sys', 'System information access not allowed for user-created tools'],
];

/** The RCRT messages of the permissions nobody gets. */
export const FFI_MESSAGE = 'FFI (Foreign Function Interface) not allowed';
export const HRTIME_MESSAGE = 'High-resolution timing not allowed (security risk)';

function requested(value: unknown): boolean {
  return !(value === undefined || value === null || value === false || (Array.isArray(value) && value.length === 0));
}

/** Validates `permissions` (absent or null means "none") for a tool of the given origin. */
export function validatePermissions(permissions: unknown, options: PermissionOptions): PermissionResult {
  const privateNet = options.origin === 'bootstrap' ? [...new Set(options.privateHosts ?? [])] : [];
  const result: PermissionResult = { errors: [], warnings: [], net: [], api: false, extraPermissions: [], privateNet };
  const error = (code: string, key: string | undefined, message: string): void => {
    result.errors.push({ code, path: key === undefined ? '/permissions' : `/permissions/${key}`, message });
  };
  if (permissions === undefined || permissions === null) return result;
  if (!isPlainObject(permissions)) {
    error(IssueCode.Permissions, undefined, `permissions must be an object, got ${quote(permissions)}`);
    return result;
  }
  for (const key of Object.keys(permissions)) {
    if (!KNOWN.has(key)) error(IssueCode.PermissionUnknown, pointerSegment(key), `Unknown permission ${quote(key)}`);
  }

  validateNet(permissions.net, options, result);

  for (const [name, agentMessage] of EXTRA) {
    const value = permissions[name];
    if (!requested(value)) continue;
    if (options.origin === 'agent') {
      error(IssueCode.PermissionDenied, name, agentMessage);
    } else if (value !== true) {
      error(
        IssueCode.Permissions,
        name,
        `permissions.${name} must be true or false for bootstrapped tools (scoped lists are not supported), got ${quote(value)}`,
      );
    } else if (options.bootstrapAllow.includes(name)) {
      result.extraPermissions.push(name);
    } else {
      result.errors.push({
        code: IssueCode.PermissionDenied,
        path: `/permissions/${name}`,
        message: `Permission "${name}" is not allowed for bootstrapped tools unless listed in bootstrapAllow (currently ${quote(options.bootstrapAllow)})`,
        fix: `--bootstrap-allow ${name}`,
      });
    }
  }
  if (requested(permissions.ffi)) error(IssueCode.PermissionDenied, 'ffi', FFI_MESSAGE);
  if (requested(permissions.hrtime)) error(IssueCode.PermissionDenied, 'hrtime', HRTIME_MESSAGE);

  const api = permissions.api;
  if (api === 'read' || api === 'write') result.api = api;
  else if (api !== undefined && api !== false)
    error(IssueCode.Api, 'api', `permissions.api must be false, "read" or "write", got ${quote(api)}`);
  if (permissions.breadcrumbs !== undefined && permissions.breadcrumbs !== null && permissions.breadcrumbs !== false) {
    if (requested(api))
      error(
        IssueCode.Api,
        'breadcrumbs',
        `permissions.breadcrumbs (a grant scoped to schemas) and permissions.api ${quote(api)} are both given; keep one`,
      );
    else validateBreadcrumbs(permissions.breadcrumbs, result);
  }
  validateTools(permissions.tools, result);
  return result;
}

/**
 * `permissions.breadcrumbs: {read?: [schema...], write?: [schema...]}` (upstream's shape) becomes a
 * `context.api` grant scoped to those schemas: `write` when a write schema is listed, else `read`.
 * Reads may touch the read and write schemas, writes only the write schemas (src/tool-context/tool-api.ts).
 */
function validateBreadcrumbs(value: unknown, result: PermissionResult): void {
  const path = '/permissions/breadcrumbs';
  if (!isPlainObject(value)) {
    result.errors.push({
      code: IssueCode.Api,
      path,
      message: `permissions.breadcrumbs must be an object {read?: [schema names], write?: [schema names]}, got ${quote(value)}`,
    });
    return;
  }
  const scope = { read: [] as string[], write: [] as string[] };
  for (const key of Object.keys(value)) {
    if (key !== 'read' && key !== 'write') {
      result.errors.push({
        code: IssueCode.Api,
        path: `${path}/${pointerSegment(key)}`,
        message: `permissions.breadcrumbs has an unknown key ${quote(key)} (only "read" and "write" lists are known)`,
      });
      continue;
    }
    const list = value[key];
    if (list === undefined || list === null || list === false) continue;
    if (!Array.isArray(list)) {
      result.errors.push({
        code: IssueCode.Api,
        path: `${path}/${key}`,
        message: `permissions.breadcrumbs.${key} must be an array of schema names, got ${quote(list)}`,
      });
      continue;
    }
    list.forEach((schema: unknown, index) => {
      const at = `${path}/${key}/${index}`;
      if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
        result.errors.push({
          code: IssueCode.Api,
          path: at,
          message: `A schema name must match ${SCHEMA_NAME.source}, got ${quote(schema)}`,
        });
      } else if (schema.toLowerCase().startsWith('tool.')) {
        result.errors.push({
          code: IssueCode.Api,
          path: at,
          message: `Schema ${quote(schema)} is the runner's (tool.* records); tools may not be granted it`,
        });
      } else if (!scope[key].includes(schema)) {
        scope[key].push(schema);
      }
    });
  }
  result.api = scope.write.length > 0 ? 'write' : scope.read.length > 0 ? 'read' : false;
  if (result.api !== false) result.apiSchemas = scope;
}

/** `permissions.tools: true | [tool names]`: the grant of `context.tools.call` (nested calls, docs/autonomy.md). */
function validateTools(value: unknown, result: PermissionResult): void {
  if (value === undefined || value === null || value === false) return;
  if (value === true) {
    result.tools = true;
    return;
  }
  const path = '/permissions/tools';
  if (!Array.isArray(value)) {
    result.errors.push({
      code: IssueCode.Permissions,
      path,
      message: `permissions.tools must be true or an array of tool names, got ${quote(value)}`,
    });
    return;
  }
  const names: string[] = [];
  value.forEach((name: unknown, index) => {
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      result.errors.push({
        code: IssueCode.Permissions,
        path: `${path}/${index}`,
        message: `A tool name must match ${TOOL_NAME.source}, got ${quote(name)}`,
      });
    } else if (!names.includes(name)) names.push(name);
  });
  if (names.length > 0) result.tools = names;
}

const TOOL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function validateNet(net: unknown, options: PermissionOptions, result: PermissionResult): void {
  const { maxNetDomains } = options;
  if (net === undefined || net === null || net === false) return;
  if (net === true) {
    if (options.origin === 'bootstrap' && options.bootstrapAllow.includes('net')) {
      result.extraPermissions.push('net');
      return;
    }
    result.errors.push(
      options.origin === 'agent'
        ? {
            code: IssueCode.NetInvalid,
            path: '/permissions/net',
            message: 'Unrestricted network access (net: true) is not allowed; list the host names the tool needs',
          }
        : {
            code: IssueCode.NetInvalid,
            path: '/permissions/net',
            message:
              'Unrestricted network access (net: true) is allowed for the operator\'s bootstrapped tools only when bootstrapAllow lists "net" ' +
              `(currently ${quote(options.bootstrapAllow)}); it then means any public host (private, loopback and link-local ranges stay denied), or list the host names the tool needs`,
            fix: '--bootstrap-allow net',
          },
    );
    return;
  }
  if (!Array.isArray(net)) {
    result.errors.push({
      code: IssueCode.NetInvalid,
      path: '/permissions/net',
      message: `permissions.net must be false or an array of host names, got ${quote(net)}`,
    });
    return;
  }
  if (net.length > maxNetDomains) {
    result.errors.push({
      code: IssueCode.NetTooMany,
      path: '/permissions/net',
      message: `Too many network domains (${net.length}). Maximum: ${maxNetDomains}`,
    });
  }
  net.forEach((entry: unknown, index) => {
    const path = `/permissions/net/${index}`;
    const checked = checkNetHost(entry);
    if (!checked.ok && typeof entry === 'string' && result.privateNet.includes(entry.toLowerCase())) {
      // granted by the operator to this bootstrapped tool: the sandbox lets exactly this host:port through
    } else if (!checked.ok) {
      const operator = options.origin === 'bootstrap' && checked.code === IssueCode.NetBlocked;
      const hint = operator
        ? ` (an operator can allow a private host:port for this tool with --allow-private-hosts "<tool>=host:port")`
        : '';
      // A private host:port of an operator file is liftable by the flag: the fix names this tool and host.
      const grantable =
        operator && options.toolName !== undefined && typeof entry === 'string' && /^[^/\s]+:\d{1,5}$/.test(entry);
      result.errors.push({
        code: checked.code,
        path,
        message: checked.message + hint,
        ...(grantable ? { fix: `--allow-private-hosts '${options.toolName}=${entry.toLowerCase()}'` } : {}),
      });
    } else if (result.net.includes(checked.host)) {
      result.warnings.push({
        code: IssueCode.NetDuplicate,
        path,
        message: `Duplicate network domain ${quote(checked.host)} ignored`,
      });
    } else {
      result.net.push(checked.host);
    }
  });
}
