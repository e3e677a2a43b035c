// The audit policy: evidence for every answered call of a tool whose contract does not say
// `read-only` (an absent side_effect is unknown and audited), code and host tools alike, as ONE
// NDJSON line of one format (CallAuditRecord in src/host-tools/audit.ts) appended to
// `<auditDir>/YYYYMMDD.log`: who, tool@version, rid, request id, input hash (never the input), the
// approval id, the effects, the outcome (status + code), durations, attempts and replica. A host
// tool's transport facts (argv, exit, status, confirmation decision...) follow as extra fields; its
// executor hands them back instead of writing its own line, so each call has one line.
//
// Redaction: nothing of the input or output is written; the texts that are (effect targets, host
// transport facts) were redacted of the call's secret values by the executor, and the whole record
// goes through the operator's `redact` patterns here. Calls answered by a policy without a run
// (rate.exceeded, a refused approval) are audited too (`attempts: 0`); parked calls when answered.

import { createRedactor, writeAuditRecord, type CallAuditRecord } from '../../host-tools/index.js';
import type { Logger } from '../../logger.js';
import type { Policy } from '../policy.js';
import { effectsOf } from './effects.js';

/** The fields of every audit line, in order (a host tool's transport facts follow them). */
export const CALL_AUDIT_FIELDS: ReadonlyArray<keyof CallAuditRecord> = Object.freeze([
  'ts',
  'tool',
  'version',
  'kind',
  'agent',
  'agent_verified',
  'agent_label',
  'rid',
  'request_id',
  'input_hash',
  'side_effect',
  'approval_id',
  'effects',
  'effects_count',
  'status',
  'outcome',
  'ms',
  'total_ms',
  'attempts',
  'replica',
] as const);

/** What the audit policy needs. */
export interface AuditPolicyOptions {
  auditDir: string;
  /** The operator's redaction regexes (config `redact`). */
  redact: readonly string[];
  replica: string;
  logger: Logger;
  /** Clock of `ts` and of the file name (tests). */
  now?: () => Date;
}

/** Creates the policy (a `settle` hook only). */
export function auditPolicy(options: AuditPolicyOptions): Policy {
  const redactor = createRedactor([], options.redact);
  const now = options.now ?? (() => new Date());
  return {
    name: 'audit',
    async settle(call, settled) {
      if (call.contract.side_effect === 'read-only') return;
      const { result } = settled;
      const { effects, count } = effectsOf(result);
      const approval = call.metadata['approval_id'];
      const record: CallAuditRecord & Record<string, unknown> = {
        ts: now().toISOString(),
        tool: call.route.tool.name,
        version: call.version,
        kind: call.route.kind,
        agent: call.identity.agentId ?? null,
        agent_verified: call.identity.verified === true,
        agent_label: call.identity.agentLabel ?? null,
        rid: call.identity.rid,
        request_id: call.identity.breadcrumbId,
        input_hash: call.inputHash,
        side_effect: call.contract.side_effect ?? 'unknown',
        approval_id: typeof approval === 'string' ? approval : null,
        effects,
        effects_count: count,
        status: result.ok ? 'success' : 'error',
        outcome: result.ok ? 'ok' : result.error.code,
        ms: settled.ran ? Math.round(result.durationMs) : 0,
        total_ms: Math.round(settled.durationMs),
        attempts: settled.attempts,
        replica: options.replica,
      };
      // transport facts never replace a field of the common format
      for (const [key, value] of Object.entries(result.evidence ?? {})) if (!(key in record)) record[key] = value;
      await writeAuditRecord(options.auditDir, record, redactor, options.logger);
    },
  };
}
