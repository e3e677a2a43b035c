// tool.response.v1 → MCP `CallToolResult` (a failed call is a result with `isError: true`,
// not a protocol error).
//
// Success: `structuredContent` is the output when it is a JSON object, else `{result: <output>}`
// (a non-object output only comes from a tool without an object output schema, so it never
// contradicts a declared one),
// plus a text rendering (the JSON). Error: `isError: true` and the text `<code>: <message>`; no
// `structuredContent` (clients validate it against the output schema even on errors), the
// structured error travels in `_meta`.

import type { ToolResponseContext } from '../breadcrumbs/messages.js';
import { META_PREFIX } from '../export/index.js';
import type { ErrorCode } from '../errors.js';
import { failure, failureText, withExecution, type Execution } from '../result.js';

/** The `CallToolResult` fields we produce. */
export interface McpCallResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** An `isError` result with the code and message (calls that never reached the runner, or failed on the way) and, when known, what ran. */
export function errorResult(
  code: ErrorCode,
  message: string,
  meta: Record<string, unknown> = {},
  execution?: Execution,
): McpCallResult {
  const error = execution ? withExecution(failure(code, message), execution) : failure(code, message);
  return {
    content: [{ type: 'text', text: failureText(error) }],
    isError: true,
    _meta: { ...meta, [`${META_PREFIX}error`]: error },
  };
}

/** The `CallToolResult` of a runner answer. */
export function callResult(
  answer: ToolResponseContext,
  ids: { rid: string; requestBreadcrumbId: string; responseBreadcrumbId: string | undefined },
): McpCallResult {
  const meta: Record<string, unknown> = {
    [`${META_PREFIX}request_id`]: ids.rid,
    [`${META_PREFIX}request_breadcrumb_id`]: ids.requestBreadcrumbId,
    ...(ids.responseBreadcrumbId ? { [`${META_PREFIX}response_breadcrumb_id`]: ids.responseBreadcrumbId } : {}),
    [`${META_PREFIX}execution_time_ms`]: answer.execution_time_ms,
  };
  if (answer.status === 'error') {
    const error = answer.error ?? {
      code: 'internal',
      message: 'the runner answered status "error" without an error body',
      retryable: false,
    };
    return {
      content: [{ type: 'text', text: failureText(error) }],
      isError: true,
      _meta: { ...meta, [`${META_PREFIX}error`]: error },
    };
  }
  const output = answer.output ?? null;
  const isObject = typeof output === 'object' && output !== null && !Array.isArray(output);
  const structured = isObject ? (output as Record<string, unknown>) : { result: output };
  return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: structured, _meta: meta };
}
