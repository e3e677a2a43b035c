// `context.subscriptions` and `context.bootstrap` of a tool definition (upstream's shapes) -> the
// normalised triggers of docs/autonomy.md, with findings naming the offending value.
//
// Rules: a subscription names a schema (never the runner's `tool.*`) and optionally a tag and an
// input object; an agent tool may subscribe only to schemas its `context.api` grant may read
// (`permissions.breadcrumbs` read or write lists, or any schema with an unscoped grant), and not at
// all without one. `bootstrap` runs (`once`, `continuous`) are honoured for the operator's tools only;
// an agent tool's bootstrap is ignored with a warning.

import { SCHEMA_NAME } from './permissions.js';
import { IssueCode, isPlainObject, quote, type Issue, type Origin } from './types.js';

/** One subscription: runs the tool on each new breadcrumb of `schemaName` (carrying `tag`, when given). */
export interface Subscription {
  schemaName: string;
  tag?: string;
  /** The input of each triggered run (default `{}`). */
  input: Record<string, unknown>;
}

/** A bootstrap run of an operator tool. */
export interface BootstrapRun {
  mode: 'once' | 'continuous';
  /** Higher runs first (default 0). */
  priority: number;
  input: Record<string, unknown>;
}

/** Most subscriptions of one tool. */
export const MAX_SUBSCRIPTIONS = 16;

/** Parses `subscriptions` and `bootstrap`; `grant` is the tool's validated `context.api` grant. */
export function readAutonomy(
  context: Record<string, unknown>,
  options: { origin: Origin; api: false | 'read' | 'write'; apiSchemas?: { read: string[]; write: string[] } },
): { errors: Issue[]; warnings: Issue[]; subscriptions?: Subscription[]; bootstrap?: BootstrapRun } {
  const errors: Issue[] = [];
  const warnings: Issue[] = [];
  const out: { subscriptions?: Subscription[]; bootstrap?: BootstrapRun } = {};
  const raw = context['subscriptions'];
  // An object (upstream agents' context `{selectors: [...]}`) is not a tool's subscription list: left alone.
  if (raw !== undefined && raw !== null && !isPlainObject(raw)) {
    if (!Array.isArray(raw))
      errors.push({
        code: IssueCode.Definition,
        path: '/subscriptions',
        message: `subscriptions must be an array of {schema_name, tag?, input?}, got ${quote(raw)}`,
      });
    else if (raw.length > MAX_SUBSCRIPTIONS)
      errors.push({
        code: IssueCode.Definition,
        path: '/subscriptions',
        message: `at most ${MAX_SUBSCRIPTIONS} subscriptions, got ${raw.length}`,
      });
    else {
      const list: Subscription[] = [];
      raw.forEach((entry: unknown, index) => {
        const path = `/subscriptions/${index}`;
        if (!isPlainObject(entry))
          return void errors.push({
            code: IssueCode.Definition,
            path,
            message: `a subscription must be an object {schema_name, tag?, input?}, got ${quote(entry)}`,
          });
        const schema = entry['schema_name'];
        if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema))
          return void errors.push({
            code: IssueCode.Definition,
            path: `${path}/schema_name`,
            message: `schema_name must match ${SCHEMA_NAME.source}, got ${quote(schema)}`,
          });
        if (schema.toLowerCase().startsWith('tool.'))
          return void errors.push({
            code: IssueCode.Definition,
            path: `${path}/schema_name`,
            message: `schema ${quote(schema)} is the runner's (tool.* records); a tool may not subscribe to it`,
          });
        if (options.origin === 'agent') {
          const scope = options.apiSchemas ? [...options.apiSchemas.read, ...options.apiSchemas.write] : undefined;
          if (options.api === false || (scope && !scope.some((s) => s.toLowerCase() === schema.toLowerCase()))) {
            return void errors.push({
              code: IssueCode.Api,
              path: `${path}/schema_name`,
              message: `tool may subscribe only to schemas its grant may read (${scope ? quote(scope) : 'no permissions.api or permissions.breadcrumbs grant'}); ${quote(schema)} is not one of them`,
            });
          }
        }
        const tag = entry['tag'];
        if (tag !== undefined && (typeof tag !== 'string' || tag === '' || tag.length > 256))
          return void errors.push({
            code: IssueCode.Definition,
            path: `${path}/tag`,
            message: `tag must be a non-empty string of at most 256 characters, got ${quote(tag)}`,
          });
        const input = entry['input'] ?? {};
        if (!isPlainObject(input))
          return void errors.push({
            code: IssueCode.Definition,
            path: `${path}/input`,
            message: `input must be an object, got ${quote(input)}`,
          });
        list.push({ schemaName: schema, ...(typeof tag === 'string' ? { tag } : {}), input: structuredClone(input) });
      });
      if (list.length > 0) out.subscriptions = list;
    }
  }
  const boot = context['bootstrap'];
  if (isPlainObject(boot) && boot['enabled'] !== false && (boot['mode'] === 'once' || boot['mode'] === 'continuous')) {
    const priority = boot['priority'] ?? 0;
    const input = boot['input'] ?? {};
    if (typeof priority !== 'number' || !Number.isFinite(priority))
      errors.push({
        code: IssueCode.Definition,
        path: '/bootstrap/priority',
        message: `bootstrap.priority must be a number, got ${quote(priority)}`,
      });
    else if (!isPlainObject(input))
      errors.push({
        code: IssueCode.Definition,
        path: '/bootstrap/input',
        message: `bootstrap.input must be an object, got ${quote(input)}`,
      });
    else if (options.origin === 'agent')
      warnings.push({
        code: IssueCode.Definition,
        path: '/bootstrap',
        message: `bootstrap.mode ${quote(boot['mode'])} is honoured only for the operator's tools (the bootstrap directory); ignored`,
      });
    else out.bootstrap = { mode: boot['mode'], priority, input: structuredClone(input) };
  }
  return { errors, warnings, ...out };
}
