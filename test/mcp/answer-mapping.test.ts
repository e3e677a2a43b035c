// One mapping of a failed answer for every caller: MCP's result and RAP's tool_result say the same
// code, message and what is known of what ran (src/result.ts `failureText`), and MCP carries the
// answer's own `retryable` and `details.execution`.
import { describe, expect, it } from 'vitest';
import type { ToolResponseContext } from '../../src/breadcrumbs/messages.js';
import { ErrorCode } from '../../src/errors.js';
import { META_PREFIX } from '../../src/export/index.js';
import { callResult, errorResult } from '../../src/mcp/results.js';
import { resultText } from '../../src/rap/tool-server.js';
import { Execution, failure, withExecution } from '../../src/result.js';

const answerWith = (error: object): ToolResponseContext =>
  ({
    request_id: 'r1',
    tool: 't',
    status: 'error',
    error,
    execution_time_ms: 5,
    metadata: {},
    timestamp: '',
  }) as ToolResponseContext;
const ids = { rid: 'r1', requestBreadcrumbId: 'b1', responseBreadcrumbId: 'b2' };

describe('a failed answer, as MCP and RAP tell it', () => {
  it.each([
    [Execution.MayHaveRun, 'timeout.unknown-commit', false, ' (it may have run: check before retrying)'],
    [Execution.RanResultLost, 'partial-effect', false, ' (it ran and its result was lost: check before retrying)'],
    [Execution.NeverStarted, 'timeout.before-submit', true, ' (it never ran: safe to retry)'],
  ] as const)('%s: the same text everywhere, retryable %s', (execution, code, retryable, suffix) => {
    const error = withExecution(failure(code as ErrorCode, 'boom'), execution);
    expect(error.retryable).toBe(retryable);
    const mcp = callResult(answerWith(error), ids);
    expect(mcp.content[0]?.text).toBe(`${code}: boom${suffix}`);
    expect(mcp._meta?.[`${META_PREFIX}error`]).toMatchObject({
      retryable,
      details: { execution },
    });
    expect(resultText(answerWith(error))).toBe(`Error: ${code}: boom${suffix}`);
  });

  it('an MCP wait that ended without an answer says the call may have run, not retryable', () => {
    const result = errorResult(ErrorCode.Internal, 'call cancelled by the client', {}, Execution.MayHaveRun);
    expect(result.content[0]?.text).toBe(
      'internal: call cancelled by the client (it may have run: check before retrying)',
    );
    expect(result._meta?.[`${META_PREFIX}error`]).toMatchObject({ code: 'internal', retryable: false });
  });
});
