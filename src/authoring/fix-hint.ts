// The one line that tells the operator how to make a refused tool file run: the flags that lift the
// refusals the operator's policy can lift (each Issue's `fix`, e.g. `--bootstrap-allow net`), and
// otherwise the edit the first remaining problem needs (its path, position and message).

import type { Issue } from '../screen/index.js';

/** `fix: ...` for a refused definition (undefined when there is nothing to fix). */
export function fixLine(issues: readonly Issue[]): string | undefined {
  if (issues.length === 0) return undefined;
  const flags = [...new Set(issues.flatMap((issue) => (issue.fix ? [issue.fix] : [])))];
  const edits = issues.filter((issue) => !issue.fix);
  const parts: string[] = [];
  if (flags.length > 0) parts.push(`run with ${flags.join(' ')}`);
  const first = edits[0];
  if (first) {
    const at = first.line !== undefined ? ` line ${first.line}:${first.column ?? 1}` : '';
    const more = edits.length > 1 ? ` (and ${edits.length - 1} more problem(s) listed above)` : '';
    parts.push(`edit ${first.path || '/'}${at} (${first.code}): ${first.message}${more}`);
  }
  return `fix: ${parts.join('; and ')}`;
}
