// The exec transport: runs a host program and maps what it did
// to a tool answer.
//
// agentcli style: argv = command (no shell), the JSON arguments on stdin (`{}` when empty).
// Runloop style: the JSON arguments in a private temp file (dir 0700, file 0600) whose path is
// argv[1], `args` after it; the file is removed afterwards. Both: stdout is the JSON result (blank
// -> `{}`), exit != 0 -> tool.error with the stderr text or `exit status N`, timeout ->
// `tool timed out`, the environment is PATH and HOME plus passed-through keys present in the
// parent plus, for Runloop, each declared secret under its secretEnvName(). cwd is the
// manifest's directory.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ErrorCode } from '../errors.js';
import { failure } from '../result.js';
import {
  MAX_MESSAGE_BYTES,
  capBytes,
  sanitizeText,
  toLogLines,
  type CallAnswer,
  type CallOutcome,
} from './call-outcome.js';
import { runProcess, type ProcessOutcome } from './run-process.js';
import { describeIssues, type SchemaCache } from './schema-validator.js';
import { secretEnvName } from './secrets.js';
import type { ExecTransport, HostTool } from './types.js';

/** Inputs of one exec call, already checked and with secrets resolved. */
export interface ExecCall {
  tool: HostTool;
  transport: ExecTransport;
  input: Record<string, unknown>;
  secrets: ReadonlyMap<string, string>;
  parentEnv: Readonly<Record<string, string | undefined>>;
  timeoutMs: number;
  maxOutputBytes: number;
  schemas: SchemaCache;
  signal?: AbortSignal;
}

const SIGNAL_TEXT: Record<string, string> = {
  SIGKILL: 'killed',
  SIGTERM: 'terminated',
  SIGINT: 'interrupt',
  SIGHUP: 'hangup',
  SIGSEGV: 'segmentation fault',
  SIGABRT: 'aborted',
  SIGPIPE: 'broken pipe',
};

/** The child's environment: PATH, HOME, allow-listed keys present in the parent, secrets. */
export function childEnv(call: Pick<ExecCall, 'transport' | 'tool' | 'secrets' | 'parentEnv'>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'HOME', ...call.transport.envPassthrough]) {
    const value = call.parentEnv[key];
    if (value !== undefined) env[key] = value;
  }
  for (const name of call.tool.secrets) {
    const value = call.secrets.get(name);
    if (value !== undefined) env[secretEnvName(name)] = value;
  }
  return env;
}

function mapOutcome(run: ProcessOutcome, call: ExecCall): CallAnswer {
  const stderr = sanitizeText(run.stderr.toString('utf8'));
  const none = { logs: [] as string[], logsTruncated: false };
  switch (run.ending) {
    case 'spawn_error':
      return {
        ...none,
        ok: false,
        error: failure(
          ErrorCode.ToolError,
          `cannot start ${JSON.stringify(call.transport.command[0])}: ${run.spawnError?.message ?? 'unknown error'}`,
        ),
      };
    case 'aborted':
      return {
        ...none,
        ok: false,
        error: {
          ...failure(
            ErrorCode.Internal,
            `host tool ${JSON.stringify(call.tool.name)} was cancelled before it finished`,
          ),
          retryable: false,
        },
      };
    case 'timeout':
      return {
        ...toLogLines(stderr),
        ok: false,
        error: failure(ErrorCode.Timeout, 'tool timed out', { timeoutMs: call.timeoutMs }),
      };
    case 'output_limit':
      return {
        ...none,
        ok: false,
        error: failure(
          ErrorCode.OutputLimit,
          `tool wrote more than ${call.maxOutputBytes} bytes to stdout and stderr`,
          { maxOutputBytes: call.maxOutputBytes },
        ),
      };
    case 'exited':
      break;
  }
  if (run.exitCode !== 0) {
    const exitText = run.signal
      ? `signal: ${SIGNAL_TEXT[run.signal] ?? run.signal}`
      : `exit status ${String(run.exitCode)}`;
    const text = stderr.trimEnd();
    const message = capBytes(text === '' ? exitText : text, MAX_MESSAGE_BYTES);
    return {
      ...none,
      ok: false,
      error: failure(ErrorCode.ToolError, message, {
        exitCode: run.exitCode,
        ...(run.signal ? { signal: run.signal } : {}),
      }),
    };
  }
  const logs = toLogLines(stderr);
  const stdout = run.stdout.toString('utf8').trim();
  let output: unknown = {};
  if (stdout !== '') {
    try {
      output = JSON.parse(stdout);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      return {
        ...logs,
        ok: false,
        error: failure(
          ErrorCode.OutputInvalid,
          `tool stdout is not valid JSON: ${capBytes(sanitizeText(reason), 200)}`,
          { stdoutBytes: run.stdoutBytes },
        ),
      };
    }
  }
  if (call.tool.resultSchema) {
    const issues = call.schemas.check(call.tool.resultSchema, output);
    if (issues) {
      return {
        ...logs,
        ok: false,
        error: failure(ErrorCode.OutputInvalid, `tool result does not match result_schema: ${describeIssues(issues)}`, {
          errors: issues,
        }),
      };
    }
  }
  return { ...logs, ok: true, output };
}

/** Runs an exec host tool once. Never throws for tool behaviour. */
export async function runExecTool(call: ExecCall): Promise<CallOutcome> {
  const env = childEnv(call);
  const cwd = path.dirname(call.tool.manifestPath);
  const json = JSON.stringify(call.input);
  let blobDir: string | undefined;
  let argv = [...call.transport.command];
  try {
    if (call.transport.style === 'runloop') {
      blobDir = await mkdtemp(path.join(tmpdir(), 'tools-runner-call-'));
      const blob = path.join(blobDir, 'input.json');
      await writeFile(blob, json, { mode: 0o600, flag: 'wx' });
      argv = [...call.transport.command, blob, ...call.transport.args];
    }
    const run = await runProcess({
      argv,
      cwd,
      env,
      stdin: call.transport.style === 'agentcli' ? json : null,
      timeoutMs: call.timeoutMs,
      maxOutputBytes: call.maxOutputBytes,
      ...(call.signal ? { signal: call.signal } : {}),
    });
    const audit = {
      argv,
      cwd,
      exit: run.exitCode,
      ...(run.signal ? { signal: run.signal } : {}),
      stdoutBytes: run.stdoutBytes,
      stderrBytes: run.stderrBytes,
      truncated: run.ending === 'output_limit',
      envKeys: Object.keys(env),
    };
    return { ...mapOutcome(run, call), audit };
  } finally {
    if (blobDir !== undefined) await rm(blobDir, { recursive: true, force: true });
  }
}
