// Which version of a tool a request gets, when several versions of one name are runnable at once.
//
// A request's `context.version` is exact (`2.1.0`) or a range (`^2`, `~2.1`, `2.x`, any node-semver
// range); prereleases match a range only when the range itself names a prerelease. Without it the
// default is the highest version that is not deprecated (a release before a prerelease), else (all
// deprecated) the highest.
//
// Lifecycle of one version, from its contract's `deprecation` at the time of the request:
//   active      no deprecated_at, or deprecated_at in the future
//   deprecated  deprecated_at <= now: still runs; the answer carries a warning naming the replacement
//   removed     removal_at <= now: not routable; a request that would get it answers tool.not_found
//               naming the replacement
// Pure functions; the catalog (catalog.ts) feeds them its candidates.

import semver from 'semver';
import type { ToolContract } from '../contract/contract.js';
import { ErrorCode } from '../errors.js';

/** One version of a name, with what selection needs to know of it. */
export interface VersionCandidate<T> {
  version: string;
  contract: ToolContract | undefined;
  value: T;
}

export type VersionStatus = 'active' | 'deprecated' | 'removed';

/** The outcome of choosing a version: the chosen one (with its warnings) or the refusal to answer with. */
export type VersionChoice<T> =
  | { ok: true; chosen: VersionCandidate<T>; warnings: string[] }
  | { ok: false; code: typeof ErrorCode.InputInvalid | typeof ErrorCode.ToolNotFound; message: string };

/** The grouping key of a version: its semantic version without build metadata (`1.0.0+a` = `1.0.0`). */
export function versionKey(version: string): string {
  return semver.parse(version)?.version ?? version;
}

/** Sorts newest first (semantic precedence; non-semver strings last, by text). */
export function compareVersionsDesc(a: string, b: string): number {
  const va = semver.valid(a);
  const vb = semver.valid(b);
  if (va && vb) return semver.rcompare(va, vb);
  if (va) return -1;
  if (vb) return 1;
  return a < b ? 1 : a > b ? -1 : 0;
}

/** Where a version is in its lifecycle at `nowMs`. */
export function versionStatus(contract: ToolContract | undefined, nowMs: number): VersionStatus {
  const d = contract?.deprecation;
  if (d?.removal_at !== undefined && Date.parse(d.removal_at) <= nowMs) return 'removed';
  if (d?.deprecated_at !== undefined && Date.parse(d.deprecated_at) <= nowMs) return 'deprecated';
  return 'active';
}

/** The `metadata.warnings` line of a deprecated version. */
export function deprecationWarning(name: string, version: string, contract: ToolContract | undefined): string {
  const d = contract?.deprecation ?? {};
  const removal = d.removal_at !== undefined ? `, removal on ${d.removal_at}` : '';
  const use = d.replacement !== undefined ? `; use ${d.replacement}` : '';
  return `tool ${name}@${version} is deprecated since ${d.deprecated_at ?? '(unknown)'}${removal}${use}`;
}

/** The tool.not_found message of a removed version (names the replacement when the contract gives one). */
export function removedMessage(name: string, version: string, contract: ToolContract | undefined): string {
  const d = contract?.deprecation ?? {};
  const use = d.replacement !== undefined ? `; use ${d.replacement}` : '; its contract names no replacement';
  return `tool ${name}@${version} was removed on ${d.removal_at ?? '(unknown)'}${use}`;
}

type Spec = { kind: 'exact'; version: semver.SemVer } | { kind: 'range'; range: semver.Range };

/** Parses `context.version`; undefined when it is neither a version nor a range. */
function parseSpec(spec: string): Spec | undefined {
  // Only what looks like a whole version goes to semver.parse (a failed parse throws inside: slow).
  const exact = /^v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$/.test(spec) ? semver.parse(spec) : null;
  if (exact) return { kind: 'exact', version: exact };
  // The spec's own text, not the parsed range: `^3` desugars to `<4.0.0-0`, which is no prerelease of the caller's.
  const includePrerelease = /\d+\.\d+\.\d+-[0-9A-Za-z]/.test(spec);
  try {
    return { kind: 'range', range: new semver.Range(spec, { includePrerelease }) };
  } catch {
    return undefined;
  }
}

/** Whether `spec` is a usable `context.version` (exact version or range). */
export function isVersionSpec(spec: string): boolean {
  return parseSpec(spec) !== undefined;
}

/** The input.invalid message of an unusable `context.version`. */
export function badSpecMessage(spec: string): string {
  return `context.version ${JSON.stringify(spec)} is neither a version nor a version range (e.g. "2.1.0", "^2", "~2.1", "2.x")`;
}

/** Chooses the version of tool `name` for a request's `spec` among `candidates` (any order). */
export function chooseVersion<T>(
  name: string,
  candidates: ReadonlyArray<VersionCandidate<T>>,
  spec: string | undefined,
  nowMs: number,
): VersionChoice<T> {
  // Parsed once per call (this runs for every request): version, status, newest first.
  const sorted = candidates
    .map((c) => ({ c, sv: semver.parse(c.version), status: versionStatus(c.contract, nowMs) }))
    .sort((a, b) => (a.sv && b.sv ? b.sv.compare(a.sv) : compareVersionsDesc(a.c.version, b.c.version)));
  type Prepared = (typeof sorted)[number];
  const pick = ({ c, status }: Prepared): VersionChoice<T> =>
    status === 'removed'
      ? { ok: false, code: ErrorCode.ToolNotFound, message: removedMessage(name, c.version, c.contract) }
      : {
          ok: true,
          chosen: c,
          warnings: status === 'deprecated' ? [deprecationWarning(name, c.version, c.contract)] : [],
        };
  const none = (what: string): VersionChoice<T> => {
    const runnable = sorted.filter((p) => p.status !== 'removed').map((p) => p.c.version);
    return {
      ok: false,
      code: ErrorCode.ToolNotFound,
      message: `tool "${name}" has no version ${what} (versions: ${runnable.length > 0 ? runnable.join(', ') : 'none runnable'})`,
    };
  };

  if (spec === undefined) {
    const chosen =
      sorted.find((p) => p.status === 'active' && p.sv?.prerelease.length === 0) ??
      sorted.find((p) => p.status === 'active') ??
      sorted.find((p) => p.status !== 'removed') ??
      sorted[0];
    return chosen ? pick(chosen) : none('at all');
  }
  const parsed = parseSpec(spec);
  if (!parsed) return { ok: false, code: ErrorCode.InputInvalid, message: badSpecMessage(spec) };
  if (parsed.kind === 'exact') {
    const match = sorted.find((p) => p.sv !== null && p.sv.compare(parsed.version) === 0);
    return match ? pick(match) : none(parsed.version.version);
  }
  const matches = sorted.filter((p) => p.sv !== null && parsed.range.test(p.sv));
  const chosen = matches.find((p) => p.status !== 'removed') ?? matches[0];
  return chosen ? pick(chosen) : none(`matching ${JSON.stringify(spec)}`);
}
