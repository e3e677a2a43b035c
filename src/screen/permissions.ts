// validatePermissions: the `permissions` object of tool.code.v1 -> errors, warnings and normalised grants.
//
// Policy: agent-created tools get network access to the hosts they list (validated names only) and
// optionally the store API (`api`); nothing else. Bootstrapped tools (shipped by the operator) may
// also get read/write/env/run/sys when the operator listed that permission in config.bootstrapAllow.
// `ffi` and `hrtime` are never granted; `net: true` is refused because the sandbox only ever runs
// with an explicit allow list (an unrestricted net would reach the host's private networks by name).

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
}

/** Result of validatePermissions; the grants hold what was valid even when there are errors. */
export interface PermissionResult {
  errors: Issue[];
  warnings: Issue[];
  net: string[];
  api: false | 'read' | 'write';
  extraPermissions: string[];
  /** Operator-granted private `host:port`s of a bootstrapped tool (all its grants, listed or not); [] for agent tools. */
  privateNet: string[];
}

const KNOWN = new Set(['net', 'read', 'write', 'env', 'run', 'ffi', 'sys', 'hrtime', 'api']);

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
      error(IssueCode.Permissions, name, `permissions.${name} must be true or false for bootstrapped tools (scoped lists are not supported), got ${quote(value)}`);
    } else if (options.bootstrapAllow.includes(name)) {
      result.extraPermissions.push(name);
    } else {
      error(IssueCode.PermissionDenied, name, `Permission "${name}" is not allowed for bootstrapped tools unless listed in bootstrapAllow (currently ${quote(options.bootstrapAllow)})`);
    }
  }
  if (requested(permissions.ffi)) error(IssueCode.PermissionDenied, 'ffi', FFI_MESSAGE);
  if (requested(permissions.hrtime)) error(IssueCode.PermissionDenied, 'hrtime', HRTIME_MESSAGE);

  const api = permissions.api;
  if (api === 'read' || api === 'write') result.api = api;
  else if (api !== undefined && api !== false) error(IssueCode.Api, 'api', `permissions.api must be false, "read" or "write", got ${quote(api)}`);
  return result;
}

function validateNet(net: unknown, options: PermissionOptions, result: PermissionResult): void {
  const { maxNetDomains } = options;
  if (net === undefined || net === null || net === false) return;
  if (net === true) {
    result.errors.push({
      code: IssueCode.NetInvalid,
      path: '/permissions/net',
      message: 'Unrestricted network access (net: true) is not allowed; list the host names the tool needs',
    });
    return;
  }
  if (!Array.isArray(net)) {
    result.errors.push({ code: IssueCode.NetInvalid, path: '/permissions/net', message: `permissions.net must be false or an array of host names, got ${quote(net)}` });
    return;
  }
  if (net.length > maxNetDomains) {
    result.errors.push({ code: IssueCode.NetTooMany, path: '/permissions/net', message: `Too many network domains (${net.length}). Maximum: ${maxNetDomains}` });
  }
  net.forEach((entry: unknown, index) => {
    const path = `/permissions/net/${index}`;
    const checked = checkNetHost(entry);
    if (!checked.ok && typeof entry === 'string' && result.privateNet.includes(entry.toLowerCase())) {
      // granted by the operator to this bootstrapped tool: the sandbox lets exactly this host:port through
    } else if (!checked.ok) {
      const hint = options.origin === 'bootstrap' && checked.code === IssueCode.NetBlocked
        ? ` (an operator can allow a private host:port for this tool with --allow-private-hosts "<tool>=host:port")`
        : '';
      result.errors.push({ code: checked.code, path, message: checked.message + hint });
    } else if (result.net.includes(checked.host)) {
      result.warnings.push({ code: IssueCode.NetDuplicate, path, message: `Duplicate network domain ${quote(checked.host)} ignored` });
    } else {
      result.net.push(checked.host);
    }
  });
}
