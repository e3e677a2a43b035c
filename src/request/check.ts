// Step 5 of a request's life: check the input once, for every kind of tool, before anything runs;
// and (after step 6) check what came out.
//
// Host tools first get agentcli's normalisation (blank or null input is `{}`, a JSON string is
// parsed, anything but an object is input.invalid), then their input schema if they declare one;
// code tools are checked against their input_schema. Outputs: a code tool's output must match its
// output_schema, and no answer may be nested deeper than the store accepts.

import type { Route } from '../catalog/catalog.js';
import { ErrorCode } from '../errors.js';
import { normalizeHostInput } from '../host-tools/index.js';
import { errorResult, failure, jsonDepthExceeds, MAX_JSON_DEPTH, type ExecutionResult } from '../result.js';
import type { SchemaValidator } from '../screen/index.js';

function formatErrors(errors: Array<{ path: string; message: string }>, max = 10): string {
  const shown = errors.slice(0, max).map((e) => `${e.path || '/'}: ${e.message}`);
  return shown.join('; ') + (errors.length > max ? `; and ${errors.length - max} more` : '');
}

/** The input the executor receives, or the input.invalid result. */
export function checkInput(
  route: Route,
  input: unknown,
  validator: SchemaValidator,
): { ok: true; input: unknown } | { ok: false; result: ExecutionResult } {
  const name = route.tool.name;
  if (route.kind === 'host') {
    const normalized = normalizeHostInput(input);
    if (!normalized.ok) return { ok: false, result: { ...normalized, durationMs: 0 } };
    if (route.tool.inputSchema) {
      const check = validator.validate(route.tool.inputSchema, normalized.value);
      if (!check.valid)
        return {
          ok: false,
          result: errorResult(
            ErrorCode.InputInvalid,
            `input does not match the input schema of "${name}": ${formatErrors(check.errors)}`,
            { errors: check.errors },
          ),
        };
    }
    return { ok: true, input: normalized.value };
  }
  const check = validator.validate(route.tool.inputSchema, input);
  if (!check.valid)
    return {
      ok: false,
      result: errorResult(
        ErrorCode.InputInvalid,
        `input does not match the input_schema of "${name}": ${formatErrors(check.errors)}`,
        { errors: check.errors },
      ),
    };
  return { ok: true, input };
}

/** The result as answered: output.invalid when a code tool's output breaks its output_schema or any output is nested too deeply. */
export function checkOutput(route: Route, result: ExecutionResult, validator: SchemaValidator): ExecutionResult {
  if (!result.ok) return result;
  const { durationMs, logs, logsTruncated } = result;
  if (jsonDepthExceeds(result.output)) {
    return {
      ok: false,
      durationMs,
      logs,
      logsTruncated,
      error: failure(ErrorCode.OutputInvalid, `output is nested deeper than ${MAX_JSON_DEPTH} levels`),
    };
  }
  if (route.kind === 'code') {
    const check = validator.validate(route.tool.outputSchema, result.output);
    if (!check.valid) {
      return {
        ok: false,
        durationMs,
        logs,
        logsTruncated,
        error: failure(
          ErrorCode.OutputInvalid,
          `output does not match the output_schema of "${route.tool.name}": ${formatErrors(check.errors)}`,
          { errors: check.errors },
        ),
      };
    }
  }
  return result;
}
