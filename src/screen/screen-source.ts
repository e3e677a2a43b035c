// screenSource: the static screening of one tool's source, a policy layer in front of the sandbox.
//
// It gives an author early, precise errors (rule code, message, line:column) for code the sandbox
// would refuse or that hides what it does (eval, Function constructors, computed global access,
// imports, Deno APIs without the permission). It is NOT the security boundary: code can still build
// behaviour at run time in ways no static check sees; Deno's permissions and process isolation are
// what stop it. Order of checks: size (before parsing), syntax, then the export and the AST rules.

import { type AstNode, parseModule, position } from './ast.js';
import { checkExecuteExport } from './exports.js';
import { runRules } from './rules.js';
import { IssueCode, type Issue, type ScreenPermissions } from './types.js';

/** Options of screenSource. */
export interface ScreenOptions {
  /** The tool's validated grants: net host list and extra Deno permissions. */
  permissions: ScreenPermissions;
  /** Largest accepted source, in UTF-8 bytes (config.maxSourceBytes). */
  maxSourceBytes: number;
  /** Parse as TypeScript (default) or plain JavaScript. */
  language?: 'typescript' | 'javascript';
}

const SOURCE_PATH = '/code/source';

/** The parity message of RCRT's validator for a missing or non-async execute export. */
export const NO_EXECUTE_MESSAGE = 'Code must export an async function named "execute"';

/**
 * Screens tool source; returns every finding (empty = passed). Findings are sorted by position;
 * a finding without a position (a missing export) comes first.
 */
export function screenSource(source: string, options: ScreenOptions): Issue[] {
  const bytes = Buffer.byteLength(source, 'utf8');
  if (bytes > options.maxSourceBytes) {
    return [
      {
        code: IssueCode.SourceSize,
        path: SOURCE_PATH,
        message: `Source is ${bytes} bytes; the maximum is ${options.maxSourceBytes} bytes`,
      },
    ];
  }
  const parsed = parseModule(source, options.language ?? 'typescript');
  if (!('type' in parsed)) {
    const message = /call stack|stack space/i.test(parsed.message)
      ? 'Source is nested too deeply to parse'
      : `Syntax error: ${parsed.message}`;
    return [{ code: IssueCode.Parse, path: SOURCE_PATH, message, line: parsed.line, column: parsed.column }];
  }
  const issues: Issue[] = [];
  const exported = checkExecuteExport(parsed);
  if (!exported.ok) {
    issues.push({
      code: IssueCode.NoExecute,
      path: SOURCE_PATH,
      message: NO_EXECUTE_MESSAGE,
      ...(exported.node ? position(exported.node) : {}),
    });
  }
  issues.push(...rulesOrDepthError(parsed, source, options.permissions));
  return sortIssues(issues);
}

function rulesOrDepthError(program: AstNode, source: string, permissions: ScreenPermissions): Issue[] {
  try {
    return runRules(program, source, permissions);
  } catch (err) {
    // A pathologically deep tree can exhaust the stack of the walk; refuse it instead of crashing.
    if (err instanceof RangeError) {
      return [
        {
          code: IssueCode.Parse,
          path: SOURCE_PATH,
          message: 'Source is nested too deeply to screen',
          line: 1,
          column: 1,
        },
      ];
    }
    throw err;
  }
}

function sortIssues(issues: Issue[]): Issue[] {
  return issues
    .map((issue, index) => ({ issue, index }))
    .sort((a, b) => {
      const la = a.issue.line ?? 0;
      const lb = b.issue.line ?? 0;
      if (la !== lb) return la - lb;
      const ca = a.issue.column ?? 0;
      const cb = b.issue.column ?? 0;
      return ca !== cb ? ca - cb : a.index - b.index;
    })
    .map((entry) => entry.issue);
}
