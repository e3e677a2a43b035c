// The side-effect crosswalk (contracts.md §5.2): one canonical side-effect class per tool, mapped to
// MCP's four annotation hints, RAP's annotations and Runloop's `requires_confirmation`.
//
// A catalog entry may carry `sideEffect` (a class below) and `openWorld` (boolean). Anything else —
// including no value, or a value we do not know — is `unknown`, exported fail-closed as
// readOnly F / destructive T / idempotent F / openWorld T. Where the table says "depends on the
// tool" (—), the conservative value is used unless the entry says otherwise.

/** Canonical side-effect classes (ARuntime's, §2.5). */
export const SIDE_EFFECTS = [
  'read-only', 'reversible-write', 'irreversible', 'administrative', 'code-execution', 'financial', 'external-communication', 'unknown',
] as const;
export type SideEffect = (typeof SIDE_EFFECTS)[number];

/** MCP tool annotation hints (all four are always emitted: §4 "Annotation defaults"). */
export interface McpHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** The side-effect class an entry declares, or `unknown`. */
export function sideEffectOf(entry: Record<string, unknown>): SideEffect {
  const value = entry['sideEffect'];
  return typeof value === 'string' && (SIDE_EFFECTS as readonly string[]).includes(value) ? (value as SideEffect) : 'unknown';
}

/** The four MCP hints of a class; `openWorld` fills the table's "depends" cells when known. */
export function mcpHints(sideEffect: SideEffect, openWorld?: boolean): McpHints {
  const world = openWorld ?? true;
  switch (sideEffect) {
    case 'read-only':
      return { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: world };
    case 'reversible-write':
      return { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: world };
    case 'irreversible':
    case 'administrative':
    case 'code-execution':
      return { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: world };
    case 'financial':
    case 'external-communication':
    case 'unknown':
      return { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };
  }
}

/** RAP annotations of a class (`readOnly` / `destructive`, or none). */
export function rapAnnotations(sideEffect: SideEffect): Record<string, boolean> {
  if (sideEffect === 'read-only') return { readOnly: true };
  if (sideEffect === 'reversible-write' || sideEffect === 'unknown') return {};
  return { destructive: true };
}

/** Runloop `requires_confirmation` of a class (unknown fails closed). */
export function requiresConfirmation(sideEffect: SideEffect): boolean {
  return sideEffect !== 'read-only' && sideEffect !== 'reversible-write';
}
