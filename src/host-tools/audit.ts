// The audit log: one NDJSON line per call appended to `<auditDir>/YYYYMMDD.log` (UTC
// date of the record's `ts`), agentcli's record fields first, and redaction.
//
// Redaction replaces, in every string of the record, first the literal values the call handled
// (resolved secrets of any length; passed-through environment values of 4+ characters), then every
// match of the operator's `redact` regexes, with `***REDACTED***`. Literals go first so a regex
// that matches part of a secret cannot leave the rest of it behind. A pattern that is not a valid
// regex is matched literally (as agentcli does). Write failures are logged, never thrown.

import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { longestFirst, redactLiterals } from '../text.js';
import { REDACTED } from './types.js';

/** One audit line. The first ten fields are agentcli's; the rest are ours. */
export interface AuditRecord {
  ts: string;
  tool: string;
  argv: string[];
  cwd: string | null;
  exit: number | null;
  ms: number;
  stdoutBytes: number;
  stderrBytes: number;
  truncated: boolean;
  /** Names of the environment variables the child received; never their values. */
  envKeys: string[];
  transport: 'exec' | 'http' | 'rap';
  /** `ok`, or the error code the call ended with. */
  outcome: string;
  signal?: string;
  /** HTTP status of the answer (http transport). */
  status?: number;
  /** CONFIRMATION_AUTO_APPROVED (types.ts) when confirmation was switched off and the call auto-approved; `approved (approval <id>)` when an approver granted it. */
  approval?: string;
}

/**
 * The one audit line of a call of a non-read-only tool, code or host, written by the runner's audit
 * policy (src/request/policies/audit.ts). A host tool's line adds its transport facts (the
 * AuditRecord fields from `argv` to `approval`, by the same names) after these.
 */
export interface CallAuditRecord {
  ts: string;
  tool: string;
  version: string;
  kind: 'code' | 'host';
  /** The caller (`null` when unknown): the store's verified writer of the request with auth on, else the request's own label. */
  agent: string | null;
  /** Whether `agent` is the store's authenticated writer (auth on). */
  agent_verified: boolean;
  /** What the request called itself (`agent:<id>` tag, else `requestedBy`), or `null`. */
  agent_label: string | null;
  rid: string;
  /** Breadcrumb id of the tool.request.v1. */
  request_id: string;
  /** `sha256:<hex>` of the canonical input (never the input itself). */
  input_hash: string;
  /** The contract's side_effect class, or `unknown`. */
  side_effect: string;
  /** The approval the call ran under (set by an approval policy), or `null`. */
  approval_id: string | null;
  /** The call's effects (at most 50) and their total. */
  effects: Array<{ kind: string; target: string; at_ms?: number }>;
  effects_count: number;
  status: 'success' | 'error';
  /** `ok`, or the error code the answer carries. */
  outcome: string;
  /** Run time of the tool (ms; 0 when a policy answered without a run). */
  ms: number;
  /** From the policy step to the stored answer (ms). */
  total_ms: number;
  attempts: number;
  replica: string;
}

/** Replaces sensitive values in strings and in whole JSON values. */
export interface Redactor {
  text(value: string): string;
  deep<T>(value: T): T;
}

/** Builds a redactor for the literal values `literals` (empty ones ignored) and the regexes `patterns`. */
export function createRedactor(literals: Iterable<string>, patterns: readonly string[] = []): Redactor {
  const values = longestFirst(literals);
  const regexes = patterns.filter((p) => p !== '').map((pattern) => {
    try {
      return new RegExp(pattern, 'g');
    } catch {
      return new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g');
    }
  });
  const text = (value: string): string => {
    let out = value;
    out = redactLiterals(out, values, REDACTED);
    for (const regex of regexes) out = out.replace(regex, (match) => (match === '' ? match : REDACTED));
    return out;
  };
  const deep = (value: unknown): unknown => {
    if (typeof value === 'string') return text(value);
    if (Array.isArray(value)) return value.map(deep);
    if (typeof value === 'object' && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(value)) out[text(key)] = deep(child);
      return out;
    }
    return value;
  };
  return { text, deep: <T>(value: T) => deep(value) as T };
}

/** `20250102.log` for 2025-01-02 (UTC). */
export function auditFileName(date: Date): string {
  return date.toISOString().slice(0, 10).replaceAll('-', '') + '.log';
}

/** Appends `record` (redacted) to the day's file; failures are logged and swallowed. */
export async function writeAuditRecord(
  auditDir: string,
  record: AuditRecord | (CallAuditRecord & Record<string, unknown>),
  redactor: Redactor,
  logger: Logger,
): Promise<void> {
  const file = path.join(auditDir, auditFileName(new Date(record.ts)));
  try {
    const line = JSON.stringify(redactor.deep(record)) + '\n';
    await mkdir(auditDir, { recursive: true, mode: 0o700 });
    await appendFile(file, line, { mode: 0o600 });
  } catch (err) {
    logger.warn('audit write failed', { file, tool: record.tool, error: err instanceof Error ? err : String(err) });
  }
}
