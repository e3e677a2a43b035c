// executeHostTool(): one call of a host tool: check the input (object, input schema; skipped when
// the runner's request path already did, `inputChecked`) -> confirmation gate (the request path's
// approval policy waits for an approval and passes its id; without one a `requires_confirmation`
// tool is refused under --confirm-external-actions, auto-approved without it) -> resolve secrets
// -> run the transport under its timeout -> validate the result -> clean and redact -> audit (or, with
// `audit: 'return'`, hand the audit facts back as the result's `evidence` for the runner's one audit line).
// Effects (a process started, a remote call made, a request sent) are listed in the result as they begin.
//
// Tool behaviour never throws: every ending is an ExecutionResult. Secret values are registered
// with the logger, removed from the result (messages, logs, output) and, together with the values
// of passed-through environment variables and the operator's `redact` patterns, from the audit line.

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ErrorCode, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { failure, type Effect, type ExecutionResult } from '../result.js';
import { createRedactor, writeAuditRecord, type Redactor } from './audit.js';
import { createLogCollector } from '../sandbox/sanitise.js';
import { MAX_LOG_BYTES, type CallAnswer, type CallOutcome, type OnSend, type TransportAudit } from './call-outcome.js';
import { capDenial } from './capabilities.js';
import { runExecTool } from './exec-tool.js';
import { runHttpTool } from './http-tool.js';
import { isJsonObject, kindOf } from './json-kinds.js';
import { describeIssues, type SchemaCache } from './schema-validator.js';
import { CONFIRMATION_AUTO_APPROVED, CONFIRMATION_REFUSED, type HostTool, type HostToolConfig, type RapTransport } from './types.js';

/** One call of a remote (RAP) host tool, already checked; answered by the runner's RAP runtime. */
export interface RemoteCall {
  tool: HostTool;
  transport: RapTransport;
  input: Record<string, unknown>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Called right before each invocation is sent (its effect); the returned function withdraws it. */
  onSend?: OnSend;
}

/** Options of executeHostTool. */
export interface ExecuteHostToolOptions {
  signal?: AbortSignal;
  logger: Logger;
  config: HostToolConfig;
  /** Supplied by the runner (store secrets API, secrets file); undefined or "" means missing. */
  resolveSecret(name: string): Promise<string | undefined>;
  /** Parent environment for PATH, HOME and envPassthrough (the runner passes process.env). */
  env?: Record<string, string | undefined>;
  /** Clock of the audit `ts` and file name (tests). */
  now?: () => Date;
  /** The runner's compiled-validator cache (createSchemaCache over its one validator). */
  schemas: SchemaCache;
  /** Runs `rap` transport calls (src/rap); without it such a tool answers dependency.unavailable. */
  runRemote?(call: RemoteCall): Promise<CallOutcome>;
  /** The input was already normalised and checked against the input schema (the runner's request path does it once). */
  inputChecked?: boolean;
  /** The approval this call was granted (the runner's approval policy, src/request/policies/approval.ts); audited. */
  approvalId?: string;
  /**
   * `write` (default): append the audit line here. `return`: hand its transport facts back as the
   * result's `evidence` (redacted) for the runner's one audit line per call (src/request/policies/audit.ts).
   */
  audit?: 'write' | 'return';
}

/** What a call did so far (effects) and decided (the confirmation text). */
interface CallState {
  approval?: string;
  effects: Effect[];
  startedAt: number;
}

type Failed = Extract<CallAnswer, { ok: false }>;

const fail = (code: ErrorCode, message: string, details?: Record<string, unknown>): Failed => ({
  ok: false,
  error: failure(code, message, details),
  logs: [],
  logsTruncated: false,
});

/** A host tool's arguments as agentcli reads them: blank or null input is `{}`, a JSON string is parsed, anything but an object is input.invalid. */
export function normalizeHostInput(input: unknown): { ok: true; value: Record<string, unknown> } | Failed {
  let value = input;
  if (typeof value === 'string') {
    if (value.trim() === '') return { ok: true, value: {} };
    try {
      value = JSON.parse(value);
    } catch {
      return fail(ErrorCode.InputInvalid, `input must be a JSON object (got a string that is not JSON)`);
    }
  }
  if (value === undefined || value === null) return { ok: true, value: {} };
  if (!isJsonObject(value)) return fail(ErrorCode.InputInvalid, `input must be a JSON object (got ${kindOf(value)})`);
  return { ok: true, value };
}

function plannedAudit(tool: HostTool): TransportAudit {
  const t = tool.transport;
  const argv = t.kind === 'exec' ? [...t.command, ...t.args] : t.kind === 'rap' ? ['POST', t.endpoint] : [t.method, t.url];
  const cwd = t.kind === 'exec' ? path.dirname(tool.manifestPath) : null;
  return { argv, cwd, exit: null, stdoutBytes: 0, stderrBytes: 0, truncated: false, envKeys: [] };
}

async function call(tool: HostTool, input: unknown, options: ExecuteHostToolOptions, log: Logger, secrets: Map<string, string>, state: CallState): Promise<CallAnswer | CallOutcome> {
  const { config } = options;
  const normalized = normalizeHostInput(input);
  if (!normalized.ok) return normalized;
  const args = normalized.value;
  const { schemas } = options;
  if (tool.inputSchema && !options.inputChecked) {
    const issues = schemas.check(tool.inputSchema, args);
    if (issues) return fail(ErrorCode.InputInvalid, `input does not match the input schema of ${JSON.stringify(tool.name)}: ${describeIssues(issues)}`, { errors: issues });
  }
  // The runner's approval policy decides before the call gets here; this gate only makes sure a
  // confirmed tool never runs without that decision (a caller outside the request path).
  if (options.approvalId !== undefined) {
    state.approval = `approved (approval ${options.approvalId})`;
    log.info('host tool call approved', { approvalId: options.approvalId });
  } else if (tool.requiresConfirmation) {
    if (config.confirmExternalActions) {
      log.info('host tool call refused', { decision: CONFIRMATION_REFUSED });
      return fail(ErrorCode.ApprovalRequired, CONFIRMATION_REFUSED, { tool: tool.name });
    }
    state.approval = CONFIRMATION_AUTO_APPROVED;
    log.info('host tool call auto-approved', { decision: CONFIRMATION_AUTO_APPROVED });
  }
  for (const name of tool.secrets) {
    let value: string | undefined;
    try {
      value = await options.resolveSecret(name);
    } catch (err) {
      return fail(ErrorCode.DependencyUnavailable, `secret ${JSON.stringify(name)} could not be fetched: ${coerceError(err).message}`, { secret: name });
    }
    if (value === undefined || value === '') {
      log.warn('host tool secret missing', { secret: name, capAudit: capDenial('secrets', 'tool.call', tool.name, args, 'cap_denied') });
      return fail(ErrorCode.SecretMissing, `secret ${JSON.stringify(name)} required by host tool ${JSON.stringify(tool.name)} could not be resolved`, { secret: name });
    }
    options.logger.redact(value);
    secrets.set(name, value);
  }
  const t = tool.transport;
  // an effect counts when the transport starts: the process, the remote call, the request sent
  const effect = (kind: Effect['kind'], target: string): (() => void) => {
    const entry: Effect = { kind, target, at_ms: Math.round(performance.now() - state.startedAt) };
    state.effects.push(entry);
    return () => {
      const at = state.effects.indexOf(entry);
      if (at !== -1) state.effects.splice(at, 1);
    };
  };
  const common = { tool, input: args, secrets, timeoutMs: t.timeoutMs ?? config.execTimeoutMs, maxOutputBytes: config.maxOutputBytes, schemas, ...(options.signal ? { signal: options.signal } : {}) };
  if (t.kind === 'exec') effect('host.exec', t.command[0] ?? '');
  if (t.kind === 'exec') return runExecTool({ ...common, transport: t, parentEnv: options.env ?? {} });
  if (t.kind === 'rap') {
    if (!options.runRemote) return fail(ErrorCode.DependencyUnavailable, `RAP tool ${JSON.stringify(tool.name)} cannot be called: the RAP runtime is not running`);
    const onSend: OnSend = (url) => effect('rap.invoke', hostOf(url));
    return options.runRemote({ tool, transport: t, input: args, timeoutMs: common.timeoutMs, onSend, ...(options.signal ? { signal: options.signal } : {}) });
  }
  return runHttpTool({ ...common, transport: t, onSend: (url) => effect('net.fetch', hostOf(url)) });
}

/** `host:port` of a URL (the text itself when it is not one). */
function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname.replace(/^\[|\]$/g, '')}:${u.port || (u.protocol === 'http:' ? '80' : '443')}`;
  } catch {
    return url;
  }
}

// Logs end as a code tool's do: the sandbox's log collector cleans, redacts and caps them at `maxLogBytes`.
function redactAnswer(answer: CallAnswer, redactor: Redactor, secrets: readonly string[], maxLogBytes: number, durationMs: number): ExecutionResult {
  const logs = createLogCollector(maxLogBytes, secrets);
  for (const line of answer.logs) logs.add(redactor.text(line));
  const base = { durationMs, logs: logs.lines, logsTruncated: answer.logsTruncated || logs.truncated };
  return answer.ok ? { ok: true, output: redactor.deep(answer.output), ...base } : { ok: false, error: redactor.deep(answer.error), ...base };
}

/** Runs one call of a host tool and appends its audit line. Never throws for tool behaviour. */
export async function executeHostTool(tool: HostTool, input: unknown, options: ExecuteHostToolOptions): Promise<ExecutionResult> {
  const started = performance.now();
  const log = options.logger.child({ tool: tool.name });
  const secrets = new Map<string, string>();
  const state: CallState = { effects: [], startedAt: started };
  let answer: CallAnswer | CallOutcome;
  try {
    answer = await call(tool, input, options, log, secrets, state);
  } catch (err) {
    const error = coerceError(err);
    log.error('host tool call failed in the runner', { error });
    answer = fail(ErrorCode.Internal, `host tool ${JSON.stringify(tool.name)} failed inside the runner: ${error.message}`);
  }
  const durationMs = performance.now() - started;
  const result = redactAnswer(answer, createRedactor(secrets.values()), [...secrets.values()], options.config.maxLogBytes ?? MAX_LOG_BYTES, durationMs);

  const t = tool.transport;
  // Passed-through values are not secrets by contract (TZ=UTC); only those of 4+ characters are masked.
  const passed = t.kind === 'exec' ? t.envPassthrough.map((key) => options.env?.[key] ?? '').filter((v) => v.length >= 4) : [];
  const auditRedactor = createRedactor([...secrets.values(), ...passed], options.config.redact);
  const facts = 'audit' in answer ? answer.audit : plannedAudit(tool);
  const transportFacts = {
    argv: facts.argv,
    cwd: facts.cwd,
    exit: facts.exit,
    stdoutBytes: facts.stdoutBytes,
    stderrBytes: facts.stderrBytes,
    truncated: facts.truncated,
    envKeys: facts.envKeys,
    transport: t.kind,
    ...(facts.signal ? { signal: facts.signal } : {}),
    ...(facts.status !== undefined ? { status: facts.status } : {}),
    ...(state.approval ? { approval: state.approval } : {}),
  };
  if (state.effects.length > 0) result.effects = auditRedactor.deep(state.effects);
  if (options.audit === 'return') {
    result.evidence = auditRedactor.deep(transportFacts);
  } else {
    await writeAuditRecord(
      options.config.auditDir,
      {
        ts: (options.now ?? (() => new Date()))().toISOString(),
        tool: tool.name,
        argv: facts.argv,
        cwd: facts.cwd,
        exit: facts.exit,
        ms: Math.round(durationMs),
        stdoutBytes: facts.stdoutBytes,
        stderrBytes: facts.stderrBytes,
        truncated: facts.truncated,
        envKeys: facts.envKeys,
        transport: t.kind,
        outcome: result.ok ? 'ok' : result.error.code,
        ...(facts.signal ? { signal: facts.signal } : {}),
        ...(facts.status !== undefined ? { status: facts.status } : {}),
        ...(state.approval ? { approval: state.approval } : {}),
      },
      auditRedactor,
      log,
    );
  }
  const meta = { ok: result.ok, durationMs: Math.round(durationMs), ...(result.ok ? {} : { code: result.error.code }) };
  if (result.ok) log.info('host tool finished', meta);
  else log.warn('host tool finished', meta);
  return result;
}
