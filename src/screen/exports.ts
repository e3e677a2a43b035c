// The one structural requirement of a tool: it exports an async function named `execute`.
//
// Accepted: `export async function execute`, `export const execute = async (...) => ...` or an async
// function expression (TS assertions around it are fine), and `export { execute }` /
// `export { impl as execute }` naming a top-level async function or such a const. Rejected: no export
// named execute, a non-async one, an async generator, or an export we cannot prove is async.

import { type AstNode, child, children, unwrap } from './ast.js';

/** The outcome of the check; `node` points at the offending export when there is one. */
export type ExecuteExportCheck = { ok: true } | { ok: false; node?: AstNode };

const EXPORTED = 'execute';

function isAsyncFunction(node: AstNode | undefined): boolean {
  if (!node) return false;
  const fn = unwrap(node);
  const isFunction =
    fn.type === 'FunctionDeclaration' || fn.type === 'FunctionExpression' || fn.type === 'ArrowFunctionExpression';
  return isFunction && fn.async === true && fn.generator !== true;
}

function exportedName(spec: AstNode): string | undefined {
  const exported = child(spec, 'exported');
  if (!exported) return undefined;
  return exported.type === 'Identifier' ? (exported.name as string) : String(exported.value);
}

/** Top-level value declarations by name: function declarations and `const/let/var x = init`. */
function topLevelValues(program: AstNode): Map<string, AstNode | undefined> {
  const values = new Map<string, AstNode | undefined>();
  for (const statement of children(program, 'body')) {
    const decl = statement.type === 'ExportNamedDeclaration' ? child(statement, 'declaration') : statement;
    if (!decl) continue;
    if (decl.type === 'FunctionDeclaration') {
      const id = child(decl, 'id');
      if (id) values.set(id.name as string, decl);
    } else if (decl.type === 'VariableDeclaration') {
      for (const declarator of children(decl, 'declarations')) {
        const id = child(declarator, 'id');
        if (id?.type === 'Identifier') values.set(id.name as string, child(declarator, 'init'));
      }
    }
  }
  return values;
}

/** Checks that `program` exports an async `execute`. */
export function checkExecuteExport(program: AstNode): ExecuteExportCheck {
  const candidates: Array<{ at: AstNode; value: AstNode | undefined }> = [];
  let values: Map<string, AstNode | undefined> | undefined;
  for (const statement of children(program, 'body')) {
    if (statement.type !== 'ExportNamedDeclaration' || statement.source) continue;
    const decl = child(statement, 'declaration');
    if (decl?.type === 'FunctionDeclaration' && child(decl, 'id')?.name === EXPORTED) {
      candidates.push({ at: statement, value: decl });
    } else if (decl?.type === 'VariableDeclaration') {
      for (const declarator of children(decl, 'declarations')) {
        if (child(declarator, 'id')?.name === EXPORTED)
          candidates.push({ at: statement, value: child(declarator, 'init') });
      }
    }
    for (const spec of children(statement, 'specifiers')) {
      if (exportedName(spec) !== EXPORTED) continue;
      values ??= topLevelValues(program);
      const local = child(spec, 'local');
      candidates.push({ at: spec, value: local?.type === 'Identifier' ? values.get(local.name as string) : undefined });
    }
  }
  if (candidates.some((c) => isAsyncFunction(c.value))) return { ok: true };
  const first = candidates[0];
  return first ? { ok: false, node: first.at } : { ok: false };
}
