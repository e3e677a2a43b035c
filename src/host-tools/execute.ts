// executeHostTool(): one call of a host tool whose input the request path has already normalised
// and checked (src/request/check.ts) and whose approval it has already obtained (the approval
// policy): resolve secrets -> run the transport under its timeout -> clean and redact the answer ->
// hand the transport facts back, redacted, as the result's `evidence` for the runner's one audit
// line (src/request/policies/audit.ts). Effects (a process started, a remote call made, a request
// sent) are listed in the result as they begin.
//
// Tool behaviour never throws: every ending is an ExecutionResult. Secret values are registered
// with the logger, removed from the result (messages, logs, output) and, together with the values
// of passed-through environment variables and the operator's `redact` patterns, from the evidence.

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { TransportFacts } from '../audit/audit-log.js';
import { createRedactor, type Redactor } from '../audit/redact.js';
import { ErrorCode, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { errorResult, type Effect, type ExecutionResult } from '../result.js';
import { createLogCollector } from '../sandbox/sanitise.js';
import { MAX_LOG_BYTES, type CallAnswer, type CallOutcome, type OnSend } from './call-outcome.js';
import { capDenial } from './capabilities.js';
import { runExecTool } from './exec-tool.js';
import { runHttpTool } from './http-tool.js';
import type { SchemaCache } from './schema-validator.js';
import type { HostTool, HostToolConfig, RapTransport } from './types.js';

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
  /** The runner's compiled-validator cache (createSchemaCache over its one validator), for `result_schema`. */
  schemas: SchemaCache;
  /** Runs `rap` transport calls (src/rap); without it such a tool answers dependency.unavailable. */
  runRemote?(call: RemoteCall): Promise<CallOutcome>;
}

/** What a call did so far: its effects, in the order they began. */
interface CallState {
  effects: Effect[];
  startedAt: number;
}

type Failed = Extract<CallAnswer, { ok: false }>;

const fail = (code: ErrorCode, message: string, details?: Record<string, unknown>): Failed =>
  errorResult(code, message, details);

function plannedAudit(tool: HostTool): TransportFacts {
  const t = tool.transport;
  const argv =
    t.kind === 'exec' ? [...t.command, ...t.args] : t.kind === 'rap' ? ['POST', t.endpoint] : [t.method, t.url];
  const cwd = t.kind === 'exec' ? path.dirname(tool.manifestPath) : null;
  return { argv, cwd, exit: null, stdoutBytes: 0, stderrBytes: 0, truncated: false, envKeys: [] };
}

async function call(
  tool: HostTool,
  args: Record<string, unknown>,
  options: ExecuteHostToolOptions,
  log: Logger,
  secrets: Map<string, string>,
  state: CallState,
): Promise<CallAnswer | CallOutcome> {
  const { config, schemas } = options;
  for (const name of tool.secrets) {
    let value: string | undefined;
    try {
      value = await options.resolveSecret(name);
    } catch (err) {
      return fail(
        ErrorCode.DependencyUnavailable,
        `secret ${JSON.stringify(name)} could not be fetched: ${coerceError(err).message}`,
        { secret: name },
      );
    }
    if (value === undefined || value === '') {
      log.warn('host tool secret missing', {
        secret: name,
        capAudit: capDenial('secrets', 'tool.call', tool.name, args, 'cap_denied'),
      });
      return fail(
        ErrorCode.SecretMissing,
        `secret ${JSON.stringify(name)} required by host tool ${JSON.stringify(tool.name)} could not be resolved`,
        { secret: name },
      );
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
  const common = {
    tool,
    input: args,
    secrets,
    timeoutMs: t.timeoutMs ?? config.execTimeoutMs,
    maxOutputBytes: config.maxOutputBytes,
    schemas,
    ...(options.signal ? { signal: options.signal } : {}),
  };
  if (t.kind === 'exec') effect('host.exec', t.command[0] ?? '');
  if (t.kind === 'exec') return runExecTool({ ...common, transport: t, parentEnv: options.env ?? {} });
  if (t.kind === 'rap') {
    if (!options.runRemote)
      return fail(
        ErrorCode.DependencyUnavailable,
        `RAP tool ${JSON.stringify(tool.name)} cannot be called: the RAP runtime is not running`,
      );
    const onSend: OnSend = (url) => effect('rap.invoke', hostOf(url));
    return options.runRemote({
      tool,
      transport: t,
      input: args,
      timeoutMs: common.timeoutMs,
      onSend,
      ...(options.signal ? { signal: options.signal } : {}),
    });
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
function redactAnswer(
  answer: CallAnswer,
  redactor: Redactor,
  secrets: readonly string[],
  maxLogBytes: number,
  durationMs: number,
): ExecutionResult {
  const logs = createLogCollector(maxLogBytes, secrets);
  for (const line of answer.logs) logs.add(redactor.text(line));
  const base = { durationMs, logs: logs.lines, logsTruncated: answer.logsTruncated || logs.truncated };
  return answer.ok
    ? { ok: true, output: redactor.deep(answer.output), ...base }
    : { ok: false, error: redactor.deep(answer.error), ...base };
}

/** Runs one call of a host tool (input checked, approval given); its transport facts are the result's evidence. Never throws for tool behaviour. */
export async function executeHostTool(
  tool: HostTool,
  input: Record<string, unknown>,
  options: ExecuteHostToolOptions,
): Promise<ExecutionResult> {
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
    answer = fail(
      ErrorCode.Internal,
      `host tool ${JSON.stringify(tool.name)} failed inside the runner: ${error.message}`,
    );
  }
  const durationMs = performance.now() - started;
  const maxLogBytes = options.config.maxLogBytes ?? MAX_LOG_BYTES;
  const result = redactAnswer(answer, createRedactor(secrets.values()), [...secrets.values()], maxLogBytes, durationMs);

  const t = tool.transport;
  // Passed-through values are not secrets by contract (TZ=UTC); only those of 4+ characters are masked.
  const passed =
    t.kind === 'exec' ? t.envPassthrough.map((key) => options.env?.[key] ?? '').filter((v) => v.length >= 4) : [];
  const evidenceRedactor = createRedactor([...secrets.values(), ...passed], options.config.redact);
  const facts = 'audit' in answer ? answer.audit : plannedAudit(tool);
  const evidence: TransportFacts & { transport: HostTool['transport']['kind'] } = {
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
  };
  if (state.effects.length > 0) result.effects = evidenceRedactor.deep(state.effects);
  result.evidence = evidenceRedactor.deep(evidence) as unknown as Record<string, unknown>;
  const meta = { ok: result.ok, durationMs: Math.round(durationMs), ...(result.ok ? {} : { code: result.error.code }) };
  if (result.ok) log.info('host tool finished', meta);
  else log.warn('host tool finished', meta);
  return result;
}
