// Decodes an agentcli tools.json document the way Go's encoding/json fills agentcli's structs:
// null and missing fields take zero values, unknown fields are ignored, and a value of the wrong
// type fails with Go's own wording (`json: cannot unmarshal string into Go struct field ...`).
// The caller prefixes failures with `parse manifest: ` (agentcli's wording).

import { goJsonKind, isJsonObject } from './json-kinds.js';

/** An agentcli ToolSpec after decoding; `schema` is the raw JSON value (or null). */
export interface AgentcliSpec {
  name: string;
  description: string;
  schema: unknown;
  command: string[];
  timeoutSec: number;
  envPassthrough: string[];
  /** Our extension: the entry's explicit `contract` as written (validated by the manifest builder). */
  contract?: unknown;
}

/** Decoded manifest, or the first type error in document order. */
export type AgentcliDecoded = { ok: true; tools: AgentcliSpec[] } | { ok: false; error: string };

class DecodeError extends Error {}

function fieldError(value: unknown, field: string, goType: string): DecodeError {
  const kind = goJsonKind(value);
  const shown = kind === 'number' && goType === 'int' ? `number ${String(value)}` : kind;
  return new DecodeError(
    `json: cannot unmarshal ${shown} into Go struct field ToolSpec.tools.${field} of type ${goType}`,
  );
}

function str(value: unknown, field: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw fieldError(value, field, 'string');
  return value;
}

function strList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw fieldError(value, field, '[]string');
  return value.map((item) => {
    if (item === null) return '';
    if (typeof item !== 'string') throw fieldError(item, field, 'string');
    return item;
  });
}

function int(value: unknown, field: string): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || !Number.isSafeInteger(value)) {
    throw fieldError(value, field, 'int');
  }
  return value;
}

function decodeSpec(raw: unknown): AgentcliSpec {
  if (raw === null) raw = {};
  if (!isJsonObject(raw)) {
    throw new DecodeError(
      `json: cannot unmarshal ${goJsonKind(raw)} into Go struct field Manifest.tools of type tools.ToolSpec`,
    );
  }
  return {
    name: str(raw.name, 'name'),
    description: str(raw.description, 'description'),
    schema: raw.schema ?? null,
    command: strList(raw.command, 'command'),
    timeoutSec: int(raw.timeoutSec, 'timeoutSec'),
    envPassthrough: strList(raw.envPassthrough, 'envPassthrough'),
    ...(raw.contract !== undefined && raw.contract !== null ? { contract: raw.contract } : {}),
  };
}

/** Decodes a parsed tools.json value into agentcli ToolSpecs. */
export function decodeAgentcli(doc: unknown): AgentcliDecoded {
  try {
    if (doc === null) return { ok: true, tools: [] };
    if (!isJsonObject(doc)) {
      throw new DecodeError(`json: cannot unmarshal ${goJsonKind(doc)} into Go value of type tools.Manifest`);
    }
    const tools = doc.tools;
    if (tools === undefined || tools === null) return { ok: true, tools: [] };
    if (!Array.isArray(tools)) {
      throw new DecodeError(
        `json: cannot unmarshal ${goJsonKind(tools)} into Go struct field Manifest.tools of type []tools.ToolSpec`,
      );
    }
    return { ok: true, tools: tools.map(decodeSpec) };
  } catch (err) {
    if (err instanceof DecodeError) return { ok: false, error: err.message };
    throw err;
  }
}
