// Host-tool manifests -> the canonical contract (docs/tool-contracts.md "Where a host tool's contract comes from"). Unknown fails closed: a
// field is mapped only when the manifest states it; nothing is guessed.
//
// agentcli has no side-effect field: its contract is `{}` (side effect unknown); its `timeoutSec`
// stays on the exec transport. Runloop: `requires_confirmation: true` -> approval `always`; the
// side effect is read from the *declared* capabilities only when one reading is possible:
//   - none declared, or any `fs`, `net`, `kb_write` or unknown family -> unknown (a read or a write,
//     a fetch or a send: the manifest does not say which, nor how reversible a write is);
//   - `exec` plus only read families (`kb_read`, `time`, `model`, `secrets`) -> `code-execution`;
//   - only read families -> `read-only`, unless the tool asks for confirmation or its http
//     transport uses a method other than GET/HEAD/OPTIONS (then unknown).
// Capabilities a transport implies (`exec`, `net:<host>`) describe how the tool runs, not what it
// does, so they are not read. `budget` and `observability.tags` stay on the HostTool (the ARuntime
// export carries them). Our extension: an explicit `contract` object on a manifest entry is
// validated (parseContract) and overrides the mapped contract field by field.

import { dottedPath, parseContract, type SideEffect, type ToolContract } from '../contract/contract.js';
import type { HostTransport } from './types.js';

const READ_FAMILIES = new Set(['kb_read', 'time', 'model', 'secrets']);
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The explicit `contract` of a manifest entry at `at` (`tools[0].contract`), or every problem as one line. */
export function explicitContract(
  raw: unknown,
  at: string,
): { ok: true; contract: ToolContract | undefined } | { ok: false; error: string } {
  if (raw === undefined || raw === null) return { ok: true, contract: undefined };
  const parsed = parseContract(raw, '');
  if (parsed.contract) return { ok: true, contract: parsed.contract };
  return {
    ok: false,
    error: parsed.issues
      .map((issue) => `${dottedPath(at, issue.path)}: ${issue.message}${shown(raw, issue.path)}`)
      .join('; '),
  };
}

/** ` (got <value>)` for the value at a contract issue's path, when there is one. */
function shown(raw: unknown, pointer: string): string {
  let node: unknown = raw;
  for (const part of pointer.split('/').filter((p) => p !== '')) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, part)) return '';
    node = (node as Record<string, unknown>)[part];
  }
  if (node === undefined) return '';
  const text = JSON.stringify(node) ?? String(node);
  return ` (got ${text.length > 80 ? `${text.slice(0, 79)}…` : text})`;
}

/** The mapped contract with the explicit one's fields laid over it. */
export function withExplicit(mapped: ToolContract, explicit: ToolContract | undefined): ToolContract {
  return explicit ? { ...mapped, ...explicit } : mapped;
}

/** The side effect a Runloop tool's declared capabilities imply (the rule in the module comment). */
export function runloopSideEffect(
  declared: readonly string[],
  transport: HostTransport,
  requiresConfirmation: boolean,
): SideEffect | undefined {
  const families = new Set(declared.map((cap) => cap.trim().split(':')[0] ?? ''));
  if (families.size === 0) return undefined;
  let exec = false;
  for (const family of families) {
    if (family === 'exec') exec = true;
    else if (!READ_FAMILIES.has(family)) return undefined;
  }
  if (exec) return 'code-execution';
  if (requiresConfirmation) return undefined;
  if (transport.kind === 'http' && !SAFE_METHODS.has(transport.method)) return undefined;
  return 'read-only';
}

/** The contract of a Runloop tool: side effect by the capability rule, approval from requires_confirmation. */
export function runloopContract(
  spec: { capabilities: readonly string[]; requiresConfirmation: boolean },
  transport: HostTransport,
): ToolContract {
  const sideEffect = runloopSideEffect(spec.capabilities, transport, spec.requiresConfirmation);
  return {
    ...(sideEffect ? { side_effect: sideEffect } : {}),
    ...(spec.requiresConfirmation ? { approval: { when: 'always' as const } } : {}),
  };
}
