// Step "route" of a request's life (after read.ts): find what runs the tool the request names.
//
// A tool name or version nothing answers to (no version matches; the version was removed: the
// message names its replacement; a bad version spec) ends here as a tool.not_found / input.invalid
// result; otherwise the catalog's route (a code tool or a host tool, at the version
// `context.version` asks for) picks the executor (execute.ts). A once or continuous tool is never
// routed for a request: the runner starts those itself.

import type { Catalog, Route } from '../catalog/catalog.js';
import { ErrorCode } from '../errors.js';
import type { RequestOrigin } from '../tool-context/origin.js';
import { errorResult, type ExecutionResult } from '../result.js';

/** The route of tool `name` at `versionSpec` (asking the store once when the catalog has none), or the error result. */
export async function routeRequest(
  catalog: Catalog,
  name: string,
  versionSpec?: string,
  origin?: Pick<RequestOrigin, 'kind'>,
): Promise<{ ok: true; route: Route } | { ok: false; result: ExecutionResult }> {
  let found = catalog.lookup(name, versionSpec);
  // A bad version spec stays bad; anything else may be a version the store has and the catalog not yet.
  if (found.kind === 'unknown' || (found.kind === 'refused' && found.code !== ErrorCode.InputInvalid)) {
    await catalog.refreshName(name);
    found = catalog.lookup(name, versionSpec);
  }
  if (found.kind === 'route') {
    // once and continuous tools are started by the runner alone (a once run is its own sealed request).
    const mode = found.route.kind === 'code' ? found.route.tool.bootstrap?.mode : undefined;
    if (mode === 'continuous' || (mode === 'once' && origin?.kind !== 'bootstrap'))
      return {
        ok: false,
        result: errorResult(
          ErrorCode.PermissionDenied,
          `tool "${name}" runs on its own (context.bootstrap.mode "${mode}"): the runner starts it, it cannot be requested`,
        ),
      };
    return { ok: true, route: found.route };
  }
  if (found.kind === 'refused') return { ok: false, result: errorResult(found.code, found.message) };
  const rejected = catalog.rejected().find((r) => r.name === name);
  const why = rejected?.errors[0]
    ? ` (a tool.code.v1 named "${name}" exists but was rejected: ${rejected.errors[0].path}: ${rejected.errors[0].message})`
    : '';
  return { ok: false, result: errorResult(ErrorCode.ToolNotFound, `no runnable tool named "${name}"${why}`) };
}

/** What the answer's metadata says about the route that runs (code: its version and record; host: its transport). */
export function routeMetadata(route: Route, replica: string): Record<string, unknown> {
  return route.kind === 'code'
    ? { kind: 'code', tool_version: route.tool.version, tool_id: route.breadcrumbId, replica }
    : { kind: 'host', transport: route.tool.transport.kind, replica };
}
