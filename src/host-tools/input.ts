// A host tool's arguments as agentcli reads them. The request path normalises a host tool's input
// with this once, before it checks the input schema (src/request/check.ts); the executor then
// receives the object.

import { ErrorCode } from '../errors.js';
import { errorResult, type ExecutionError } from '../result.js';
import { isJsonObject, kindOf } from './json-kinds.js';

/** Blank or null input is `{}`, a JSON string is parsed, anything but an object is input.invalid. */
export function normalizeHostInput(
  input: unknown,
): { ok: true; value: Record<string, unknown> } | ExecutionError {
  let value = input;
  if (typeof value === 'string') {
    if (value.trim() === '') return { ok: true, value: {} };
    try {
      value = JSON.parse(value);
    } catch {
      return errorResult(ErrorCode.InputInvalid, 'input must be a JSON object (got a string that is not JSON)');
    }
  }
  if (value === undefined || value === null) return { ok: true, value: {} };
  if (!isJsonObject(value)) {
    return errorResult(ErrorCode.InputInvalid, `input must be a JSON object (got ${kindOf(value)})`);
  }
  return { ok: true, value };
}
