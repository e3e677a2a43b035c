// Lexical scopes of a parsed module, so that rules know whether `require` or `Function` is the global
// or a local binding, and which local names are aliases of dangerous values (`const g = globalThis`).
//
// Pass 1 (buildScopes) records every scope-creating node and the names it declares, plus "alias
// candidates": a binding together with an expression assigned to it. Pass 2 (resolveAliases) gives
// each binding the kind of the first candidate that classifies, repeating until nothing changes so
// that an alias declared after its use (hoisting, closures) is still known. Modules are strict code,
// so `eval` can never be rebound and `with` cannot exist: static resolution is exact for plain names.

import { type AstNode, child, children, forEachChild, unwrap } from './ast.js';

/** A declared name; `alias` is the kind of value it holds when that is statically known. */
export interface Binding {
  name: string;
  alias: string | undefined;
}

/** One lexical scope; `fn` marks function (var-hoisting) scopes, including the module scope. */
export interface Scope {
  parent: Scope | null;
  fn: boolean;
  names: Map<string, Binding>;
}

/** An expression assigned to a name, evaluated in `scope`. */
export interface AliasCandidate {
  name: string;
  scope: Scope;
  expr: AstNode;
}

/** The scopes of one module. */
export interface ScopeInfo {
  root: Scope;
  scopeOf: Map<AstNode, Scope>;
  candidates: AliasCandidate[];
}

const FUNCTIONS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);
const BLOCKS = new Set([
  'BlockStatement',
  'ForStatement',
  'ForInStatement',
  'ForOfStatement',
  'SwitchStatement',
  'CatchClause',
  'ClassExpression',
]);

/** Finds the binding `name` refers to from `scope`, or undefined when it is a global. */
export function resolve(name: string, scope: Scope): Binding | undefined {
  for (let s: Scope | null = scope; s; s = s.parent) {
    const found = s.names.get(name);
    if (found) return found;
  }
  return undefined;
}

/** Pass 1: scopes, declarations and alias candidates of a Program node. */
export function buildScopes(program: AstNode): ScopeInfo {
  const root: Scope = { parent: null, fn: true, names: new Map() };
  const info: ScopeInfo = { root, scopeOf: new Map([[program, root]]), candidates: [] };

  const declare = (scope: Scope, name: string): void => {
    if (!scope.names.has(name)) scope.names.set(name, { name, alias: undefined });
  };
  const fnScope = (scope: Scope): Scope => {
    let s = scope;
    while (!s.fn && s.parent) s = s.parent;
    return s;
  };
  const declarePattern = (scope: Scope, pattern: AstNode | undefined): void => {
    if (!pattern) return;
    switch (pattern.type) {
      case 'Identifier':
        declare(scope, pattern.name as string);
        return;
      case 'ObjectPattern':
        for (const prop of children(pattern, 'properties'))
          declarePattern(scope, child(prop, prop.type === 'RestElement' ? 'argument' : 'value'));
        return;
      case 'ArrayPattern':
        for (const element of children(pattern, 'elements')) declarePattern(scope, element);
        return;
      case 'RestElement':
        declarePattern(scope, child(pattern, 'argument'));
        return;
      case 'AssignmentPattern': {
        const left = child(pattern, 'left');
        declarePattern(scope, left);
        const right = child(pattern, 'right');
        if (left?.type === 'Identifier' && right)
          info.candidates.push({ name: left.name as string, scope, expr: right });
        return;
      }
      case 'TSParameterProperty':
        declarePattern(scope, child(pattern, 'parameter'));
        return;
    }
  };

  const visit = (node: AstNode, scope: Scope): void => {
    let inner = scope;
    if (FUNCTIONS.has(node.type)) {
      inner = { parent: scope, fn: true, names: new Map() };
      const id = child(node, 'id');
      if (id && node.type === 'FunctionDeclaration') {
        declare(scope, id.name as string);
        info.candidates.push({ name: id.name as string, scope, expr: node });
      } else if (id) {
        declare(inner, id.name as string);
      }
      for (const param of children(node, 'params')) declarePattern(inner, param);
      const body = child(node, 'body');
      if (body?.type === 'BlockStatement') info.scopeOf.set(body, inner);
    } else if (node.type === 'StaticBlock' || node.type === 'TSModuleBlock') {
      inner = { parent: scope, fn: true, names: new Map() };
    } else {
      const known = info.scopeOf.get(node);
      if (known) {
        inner = known; // a function body block shares its function's scope
      } else if (BLOCKS.has(node.type)) {
        inner = { parent: scope, fn: false, names: new Map() };
        if (node.type === 'CatchClause') declarePattern(inner, child(node, 'param'));
        const id = child(node, 'id');
        if (node.type === 'ClassExpression' && id) declare(inner, id.name as string);
      }
    }
    if (inner !== scope) info.scopeOf.set(node, inner);

    switch (node.type) {
      case 'VariableDeclaration': {
        const target = node.kind === 'var' ? fnScope(scope) : scope;
        for (const decl of children(node, 'declarations')) {
          const id = child(decl, 'id');
          declarePattern(target, id);
          const init = child(decl, 'init');
          if (id?.type === 'Identifier' && init) info.candidates.push({ name: id.name as string, scope, expr: init });
        }
        break;
      }
      case 'ClassDeclaration':
      case 'TSEnumDeclaration':
      case 'TSModuleDeclaration': {
        const id = child(node, 'id');
        if (id?.type === 'Identifier') declare(scope, id.name as string);
        if (id?.type === 'Identifier' && node.type === 'ClassDeclaration')
          info.candidates.push({ name: id.name as string, scope, expr: node });
        break;
      }
      case 'TSImportEqualsDeclaration': {
        const id = child(node, 'id');
        const ref = child(node, 'moduleReference');
        if (id) declare(scope, id.name as string);
        if (id && ref && ref.type !== 'TSExternalModuleReference')
          info.candidates.push({ name: id.name as string, scope, expr: ref });
        break;
      }
      case 'ImportDeclaration':
        for (const spec of children(node, 'specifiers')) {
          const local = child(spec, 'local');
          if (local) declare(root, local.name as string);
        }
        break;
      case 'AssignmentExpression': {
        const left = child(node, 'left');
        const right = child(node, 'right');
        if (node.operator === '=' && left && right && unwrap(left).type === 'Identifier') {
          info.candidates.push({ name: unwrap(left).name as string, scope, expr: right });
        }
        break;
      }
    }
    forEachChild(node, visitChild, inner);
  };
  const visitChild = (c: AstNode, _key: string, scope: Scope): void => visit(c, scope);
  visit(program, root);
  return info;
}

/**
 * Pass 2: gives bindings the kind of value they alias. `classify(expr, scope)` returns a kind or
 * undefined; it must be re-entrant (it reads the aliases being computed). A binding keeps the first
 * kind found, so the loop is monotone and ends after at most `candidates.length + 1` rounds.
 */
export function resolveAliases(
  info: ScopeInfo,
  classify: (expr: AstNode, scope: Scope) => string | undefined,
  reset: () => void,
): void {
  const pending = info.candidates.map((c) => ({ ...c, binding: resolve(c.name, c.scope) }));
  for (let round = 0; round <= pending.length; round++) {
    let changed = false;
    reset();
    for (const candidate of pending) {
      if (!candidate.binding || candidate.binding.alias !== undefined) continue;
      const kind = classify(candidate.expr, candidate.scope);
      if (kind !== undefined) {
        candidate.binding.alias = kind;
        changed = true;
      }
    }
    if (!changed) break;
  }
  reset();
}
