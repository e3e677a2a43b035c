// The audit log: one NDJSON line per answered call of a non-read-only tool, appended to
// `<auditDir>/YYYYMMDD.log` (UTC date of the record's `ts`) by the runner's audit policy
// (src/request/policies/audit.ts). A host tool's line adds the transport facts its executor hands
// back as the result's `evidence`. Every line is redacted (./redact.ts); write failures are logged,
// never thrown.

import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.js';
import type { Redactor } from './redact.js';

/** What a host tool's transport did, as its audit line shows it (agentcli's field names). */
export interface TransportFacts {
  argv: string[];
  cwd: string | null;
  exit: number | null;
  stdoutBytes: number;
  stderrBytes: number;
  truncated: boolean;
  /** Names of the environment variables the child received; never their values. */
  envKeys: string[];
  signal?: string;
  /** HTTP status of the answer (http transport). */
  status?: number;
}

/** The one audit line of a call, code or host; a host tool's adds its TransportFacts and `transport` after these. */
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

/** `20250102.log` for 2025-01-02 (UTC). */
export function auditFileName(date: Date): string {
  return date.toISOString().slice(0, 10).replaceAll('-', '') + '.log';
}

/** Appends `record` (redacted) to the day's file; failures are logged and swallowed. */
export async function writeAuditRecord(
  auditDir: string,
  record: CallAuditRecord & Record<string, unknown>,
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
